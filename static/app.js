// The dashboard: reads the admin API, and on each typed event of the stream fetches again only
// the parts that event concerns (a host's state: the hosts; a move: the counts, the timeline and
// the nodes in view; an audit result: nothing, it comes with the event); and drives hosts,
// nodes, instances and the archiver. It never reads every node: the tables read the page in
// view (table.js) and the picture is drawn from counts (ring.js), so 100,000 nodes cost what
// 100 do. Rows are keyed, so a refresh rewrites only the rows whose data changed.

import { applying, del, get, post, request, stats, timed, whenLoggedOut } from "./api.js";
import { Ownership, hostColour } from "./ring.js";
import { VirtualTable, emptyRow, keyedRow } from "./table.js";

const $ = (selector) => document.querySelector(selector);
const ownership = new Ownership($("#ring"), $("#legend"));
const numbers = new Intl.NumberFormat("en-US");
let hostNames = [];
// Where the nodes come from: "simulated", or "ironic" (a real Ironic's nodes are its operator's:
// no enroll, lock or delete from here).
let nodeSource = "simulated";
let refreshing = null;
let searching = 0;
const dirty = new Set();

function showError(message) {
  const banner = $("#error");
  banner.textContent = message;
  banner.hidden = false;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => (banner.hidden = true), 8000);
}

// Runs an action; a failure shows the API's message. `question` asks for confirmation first.
async function act(run, question) {
  if (question && !window.confirm(question)) return;
  try {
    await run();
    scheduleRefresh();
  } catch (error) {
    showError(error.message);
  }
}

function button(label, onClick, extra = "") {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = label;
  // Every button of a row is an action that changes something: hidden from readers.
  element.className = `write ${extra}`.trim();
  element.addEventListener("click", onClick);
  return element;
}

function short(uuid) {
  return uuid ? uuid.slice(0, 8) : "";
}

// Replaces the rows of `tbody` by `items`, touching only rows whose data changed; no items is
// one row that says `empty`.
function renderRows(tbody, items, key, cells, empty = "none") {
  const existing = new Map([...tbody.rows].map((row) => [row.dataset.key, row]));
  const columns = tbody.parentElement.querySelectorAll("thead th").length;
  const rows = items.length
    ? items.map((item) => keyedRow(existing, item, key, cells))
    : [existing.get("empty") || emptyRow(columns, empty)];
  const same = rows.length === tbody.rows.length && rows.every((row, index) => tbody.rows[index] === row);
  if (!same) tbody.replaceChildren(...rows);
}

function age(timestamp) {
  if (!timestamp) return "never";
  const seconds = Math.max(0, (Date.now() - Date.parse(timestamp)) / 1000);
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds / 60)} min`;
}

function swatch(host) {
  const element = document.createElement("span");
  element.className = "swatch";
  element.style.background = hostColour(hostNames, host);
  return element;
}

let lastHosts = [];

// A `host` event that says a known host's new state is applied as it is; any other (a host
// added, drained …) reads the hosts again.
function applyHostEvent(data) {
  const known = lastHosts.find((host) => host.host === data.host);
  if (!known || !data.state) return false;
  known.state = data.state;
  if (data.last_seen_up) known.last_seen_up = data.last_seen_up;
  renderHosts(lastHosts);
  return true;
}

// What a host serves when it is not every node: " (group rack-2)", " (shard s1)".
function serves(host) {
  const parts = [];
  if (host.conductor_group != null) parts.push(`group ${host.conductor_group === "" ? "(default)" : host.conductor_group}`);
  if (host.shard != null) parts.push(`shard ${host.shard}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

function renderHosts(hosts) {
  lastHosts = hosts;
  hostNames = hosts.map((host) => host.host);
  renderRows($("#hosts tbody"), hosts.map((host) => ({ ...host, age: age(host.last_seen_up) })), (host) => host.host, (host) => {
    const badge = document.createElement("span");
    badge.className = `badge ${host.state}`;
    badge.textContent = host.state;
    return [[swatch(host.host), host.host + serves(host)], badge, host.age, numbers.format(host.nodes), host.version ?? "", hostActions(host)];
  });
}

// The actions that can succeed on `host`: Crash while it runs in this process, Start when it is
// down and runs in none, Drain unless it is disabled, Enable when it is.
function hostActions(host) {
  const path = `/api/v1/hosts/${host.host}`;
  const actions = [];
  const add = (action, element) => {
    element.dataset.action = action;
    element.dataset.host = host.host;
    actions.push(element);
  };
  if (host.local) add("crash", button("Crash", () => act(() => post(`${path}/crash`), `Crash ${host.host}? It stops at once, without clean-up.`), "danger"));
  if (!host.local && host.state === "down") add("start", button("Start", () => act(() => post(`${path}/start`))));
  if (host.state === "disabled") add("enable", button("Enable", () => act(() => post(`${path}/enable`))));
  else add("drain", button("Drain", () => act(() => post(`${path}/drain`), `Drain ${host.host}? Its nodes move to other hosts.`)));
  return actions;
}

// Ironic's provision state with what else keeps the node from taking an instance (locked,
// maintenance, power, failed builds and their cooldown).
function nodeState(node) {
  const notes = [];
  if (node.locked) notes.push("locked");
  if (node.maintenance) notes.push("maintenance");
  if (node.power_state) notes.push(node.power_state);
  if (node.failed_builds) notes.push(`${node.failed_builds} failed build${node.failed_builds === 1 ? "" : "s"}`);
  if (node.build_cooldown_until) notes.push(`not offered until ${new Date(node.build_cooldown_until).toLocaleTimeString()}`);
  const text = node.provision_state + (notes.length ? ` (${notes.join(", ")})` : "");
  return node.last_error ? `${text}: ${node.last_error}` : text;
}

const nodesTable = new VirtualTable({
  scroller: $("#nodes-scroller"),
  tbody: $("#nodes tbody"),
  path: "/api/v1/nodes",
  columns: 7,
  key: (node) => node.uuid,
  onTotal: (total) => ($("#nodes-count").textContent = `(${numbers.format(total)})`),
  empty: "no nodes",
  cells: (node) => {
    const lock = nodeSource === "ironic"
      ? (node.locked ? "locked" : "")
      : node.locked
        ? button("Unlock", () => act(() => post(`/api/v1/nodes/${node.uuid}/unlock`)))
        : button("Lock", () => act(() => post(`/api/v1/nodes/${node.uuid}/lock`), `Lock ${short(node.uuid)}? Deploys and destroys on it will fail.`));
    const owner = document.createElement("span");
    owner.className = "owner";
    owner.dataset.owner = node.host || "";
    owner.append(swatch(node.host), node.host || "—");
    return [short(node.uuid), owner, short(node.compute_node_uuid), short(node.resource_provider_uuid),
      short(node.instance_uuid), nodeState(node), lock];
  },
});

const instancesTable = new VirtualTable({
  scroller: $("#instances-scroller"),
  tbody: $("#instances tbody"),
  path: "/api/v1/instances",
  columns: 8,
  empty: "no instances",
  key: (instance) => instance.uuid,
  onTotal: (total) => ($("#instances-count").textContent = `(${numbers.format(total)})`),
  cells: (instance) => [
    instance.name, instance.host, short(instance.node), instance.vm_state,
    instance.flavor || "—", short(instance.image) || "—", instance.project || "—",
    button("Delete", () => act(() => del(`/api/v1/instances/${instance.uuid}`), `Delete instance ${instance.name}?`), "danger"),
  ],
});

function renderUsage(classes) {
  renderRows($("#usage tbody"), classes, (entry) => entry.resource_class, (entry) => [
    entry.resource_class, numbers.format(entry.providers), numbers.format(entry.total),
    numbers.format(entry.reserved), numbers.format(entry.used),
  ], "no inventory");
}

// The timeline: one entry per failover, drain or join ("cmp-5 down: 5,037 nodes → cmp-1 262, …").
function renderTimeline(entries) {
  const items = entries.map((entry) => {
    const item = document.createElement("li");
    const time = document.createElement("time");
    time.dateTime = entry.moved_at;
    time.textContent = new Date(entry.moved_at).toLocaleTimeString();
    const reason = document.createElement("span");
    reason.className = `badge ${entry.reason}`;
    reason.textContent = entry.reason.replace("_", " ");
    item.append(time, reason, ` ${entry.summary}`);
    return item;
  });
  if (!items.length) {
    const none = document.createElement("li");
    none.className = "muted empty";
    none.textContent = "No failovers, drains or joins yet";
    items.push(none);
  }
  $("#moves").replaceChildren(...items);
}

// Where the nodes come from: the simulated Ironic, or a real one with its last listing.
function describeSource(source) {
  if (!source || source.kind !== "ironic") return "Node source: the simulated Ironic";
  const version = source.api_version ? ` (API ${source.api_version})` : "";
  const listing = source.listing || {};
  const last = listing.error
    ? `last listing failed: ${listing.error}`
    : listing.last_success
      ? `last listing ${new Date(listing.last_success).toLocaleTimeString()}: ${numbers.format(listing.nodes)} nodes in ${listing.requests} request(s)`
      : "not listed yet";
  return `Node source: Ironic at ${source.url}${version}; ${last}`;
}

function renderRing(ring) {
  const algorithm = ring.algorithm === "default" ? "default ring: shares, no positions" : `${ring.algorithm} ring`;
  $("#ring-meta").textContent = `v${ring.version}, ${algorithm}, ${numbers.format(ring.nodes)} nodes`;
  ownership.render(hostNames, ring.counts, ring.nodes);
  $("#node-source").textContent = describeSource(ring.node_source);
  showNodeSource(ring.node_source && ring.node_source.kind === "ironic" ? "ironic" : "simulated");
  renderUnserved(ring.unserved_groups || []);
}

// The conductor groups (and shards) whose nodes no live host serves: they stay where they are.
function renderUnserved(groups) {
  const banner = $("#unserved");
  banner.hidden = groups.length === 0;
  if (!groups.length) return banner.replaceChildren();
  const list = document.createElement("ul");
  for (const group of groups) {
    const item = document.createElement("li");
    const name = group.conductor_group === "" ? "the default conductor group" : `conductor group ${group.conductor_group}`;
    item.textContent = `${name}${group.shard == null ? "" : `, shard ${group.shard}`}: ${numbers.format(group.nodes)} nodes, since ${new Date(group.since).toLocaleTimeString()}`;
    list.append(item);
  }
  banner.replaceChildren("No live host serves:", list);
}

// With a real Ironic the nodes are its operator's: the enroll form and the lock buttons go, and
// a hint says where to manage them.
function showNodeSource(kind) {
  if (kind === nodeSource) return;
  nodeSource = kind;
  const real = kind === "ironic";
  $("#enroll").hidden = real;
  $("#ironic-hint").hidden = !real;
  nodesTable.redraw();
}

function renderArchiveRuns(runs) {
  renderRows($("#archive-runs tbody"), runs, (run) => String(run.id), (run) => [
    String(run.id), new Date(run.started_at).toLocaleString(), run.status, numbers.format(run.total_rows), numbers.format(run.purged_rows),
  ], "No archive runs yet");
}

// Shows the audit: green, or the violations grouped by invariant (how many, the first few).
function renderAudit(audit) {
  const banner = $("#audit");
  if (audit.ok) {
    banner.className = "banner ok";
    banner.textContent = "All invariants hold";
    return;
  }
  banner.className = "banner bad";
  const groups = audit.by_invariant || [];
  const total = groups.reduce((sum, group) => sum + group.count, 0);
  const list = document.createElement("ul");
  for (const group of groups) {
    const item = document.createElement("li");
    item.textContent = `invariant ${group.invariant}: ${numbers.format(group.count)} — ${group.first.join("; ")}${group.count > group.first.length ? " …" : ""}`;
    list.append(item);
  }
  banner.replaceChildren(`${numbers.format(total)} invariant violations:`, list);
}

// What each part of the page reads; the hosts come first (the picture colours by host).
const loaders = {
  hosts: async () => { const hosts = await get("/api/v1/hosts"); timed(() => renderHosts(hosts)); },
  ring: async () => { const ring = await get("/api/v1/ring"); timed(() => renderRing(ring)); },
  nodes: () => nodesTable.refresh(),
  instances: () => instancesTable.refresh(),
  usage: async () => { const usage = await get("/api/v1/usage"); timed(() => renderUsage(usage)); },
  moves: async () => { const entries = await get("/api/v1/timeline?limit=20"); timed(() => renderTimeline(entries)); },
  archive: async () => { const runs = await get("/api/v1/archive/runs?limit=20"); timed(() => renderArchiveRuns(runs)); },
  audit: async () => { const audit = await get("/api/v1/audit"); timed(() => renderAudit(audit)); },
};
const EVERYTHING = Object.keys(loaders);
// What the first paint is: everything but the audit (it may take seconds at 100,000 nodes and
// has its own banner meanwhile).
const FIRST_PAINT = EVERYTHING.filter((part) => part !== "audit");

// The parts of the page each event concerns.
const EVENT_PARTS = {
  host: ["hosts"],
  nodes_moved: ["hosts", "ring", "nodes", "moves"],
  nodes_claimed: ["hosts", "ring", "nodes"],
  nodes: ["ring", "nodes", "usage"],
  instance: ["instances", "usage"],
  archive: ["archive", "instances"],
  resync: EVERYTHING,
};

async function refresh(parts) {
  if (parts.has("hosts")) await loaders.hosts();
  const rest = [...parts].filter((part) => part !== "hosts");
  await Promise.all(rest.filter((part) => part !== "audit").map((part) => loaders[part]()));
  if (stats.firstPaintMs === null && FIRST_PAINT.every((part) => parts.has(part))) {
    stats.firstPaintMs = performance.now();
  }
  if (parts.has("audit")) await loaders.audit();
}

// Coalesces refreshes: at most one runs; the parts asked for meanwhile follow in one more.
function scheduleRefresh(parts = EVERYTHING) {
  for (const part of parts) dirty.add(part);
  if (refreshing) return;
  const now = new Set(dirty);
  dirty.clear();
  refreshing = applying(() => refresh(now))
    .catch((error) => showError(`cannot refresh: ${error.message}`))
    .finally(() => {
      refreshing = null;
      if (dirty.size) scheduleRefresh([]);
    });
}

function countEvent(event) {
  stats.bytes += event.data.length;
  stats.events += 1;
}

let stream = null;
let loggedIn = false;

function connect() {
  const status = $("#connection");
  const events = new EventSource("/api/v1/events");
  stream = events;
  // The session ended (logout, an expired or revoked token): the stream ends, log in again.
  events.addEventListener("session-ended", () => loggedOut());
  events.addEventListener("open", () => {
    status.textContent = "live";
    status.className = "ok";
    // After a (re)connection, what happened meanwhile was not seen: read everything.
    scheduleRefresh();
  });
  for (const [type, parts] of Object.entries(EVENT_PARTS)) {
    events.addEventListener(type, (event) => {
      countEvent(event);
      if (type === "host" && timed(() => applyHostEvent(JSON.parse(event.data)))) return;
      scheduleRefresh(parts);
    });
  }
  events.addEventListener("audit", (event) => {
    countEvent(event);
    timed(() => renderAudit(JSON.parse(event.data)));
  });
  events.addEventListener("error", () => {
    status.textContent = "reconnecting…";
    status.className = "bad";
    // A stream refused (401) is not retried by the browser: ask whether the session stands.
    if (events.readyState === EventSource.CLOSED) checkSession();
  });
}

// Ends the live view and shows the login.
function loggedOut() {
  if (stream) stream.close();
  stream = null;
  loggedIn = false;
  $("#connection").textContent = "logged out";
  $("#connection").className = "bad";
  $("#who").hidden = true;
  checkSession();
}

// Shows who is logged in, hides what the role cannot do, and goes live.
function loggedInAs(session) {
  loggedIn = true;
  $("#login-form").hidden = true;
  document.body.classList.toggle("read-only", !session.can_write);
  if (session.user) {
    $("#who-name").textContent = `${session.user} (${session.roles.join(", ")})`;
    $("#who").hidden = false;
  }
  if (!stream || stream.readyState === EventSource.CLOSED) connect();
}

// Asks the server how to log in and whether this browser is; shows the login if not.
async function checkSession() {
  let session;
  try {
    session = await get("/api/v1/session");
  } catch (error) {
    showError(`cannot reach the server: ${error.message}`);
    return;
  }
  if (session.logged_in) {
    loggedInAs(session);
    return;
  }
  const keystone = session.auth === "keystone";
  $("#login-keystone").hidden = !keystone;
  $("#login-token").hidden = keystone;
  // Hidden fields are disabled: the browser does not ask for them.
  for (const input of $("#login-keystone").querySelectorAll("input")) input.disabled = !keystone;
  $("#token").disabled = keystone;
  $("#login-form").hidden = false;
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = $("#login-token").hidden
    ? { user: $("#login-user").value, password: $("#login-password").value, project: $("#login-project").value, domain: $("#login-domain").value }
    : { token: $("#token").value };
  try {
    const session = await post("/api/v1/session", body);
    $("#login-password").value = "";
    $("#token").value = "";
    loggedInAs(session);
  } catch (error) {
    showError(`login failed: ${error.message}`);
  }
});
$("#logout").addEventListener("click", async () => {
  try {
    await request("DELETE", "/api/v1/session");
  } finally {
    loggedOut();
  }
});
whenLoggedOut(() => {
  if (loggedIn) loggedOut();
});

$("#node-filter").addEventListener("input", () => {
  clearTimeout(searching);
  searching = setTimeout(() => {
    const text = $("#node-filter").value.trim();
    nodesTable.setQuery(text ? `search=${encodeURIComponent(text)}` : "").catch((error) => showError(error.message));
  }, 250);
});
$("#add-host").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => post("/api/v1/hosts", { host: $("#new-host").value.trim() }));
});
$("#enroll").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => post("/api/v1/nodes", { count: Number($("#enroll-count").value), resource_class: $("#enroll-class").value.trim() }));
});
$("#boot").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => post("/api/v1/instances", { name: $("#boot-name").value.trim(), resource_class: $("#boot-class").value.trim() }));
});
$("#archive").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = { max_rows: Number($("#archive-max").value), purge: $("#archive-purge").checked };
  const before = $("#archive-before").value.trim();
  if (before) body.before = before;
  act(() => post("/api/v1/archive", body), body.purge ? "Archive and purge the shadow tables?" : undefined);
});
setInterval(() => {
  // Heartbeat ages tick even when nothing changes.
  for (const row of $("#hosts tbody").rows) {
    if (!row.dataset.signature) continue;
    const data = JSON.parse(row.dataset.signature);
    row.cells[2].textContent = age(data.last_seen_up);
  }
}, 1000);
// Heartbeats send no event: the host list (one row per host) is read again now and then so
// that heartbeat ages stay true.
setInterval(() => {
  if (loggedIn) scheduleRefresh(["hosts"]);
}, 5000);
checkSession();
