// The dashboard: reads the admin API, and on each typed event of the stream fetches again only
// the parts that event concerns (a host's state: the hosts; an instance: instances and usage;
// an audit result: nothing, it comes with the event); and drives hosts, nodes, instances and
// the archiver. Rows are keyed, so a refresh rewrites only the rows whose data changed.

import { del, get, needsToken, post, setToken, token } from "./api.js";
import { Ring, hostColour } from "./ring.js";

const $ = (selector) => document.querySelector(selector);
const ring = new Ring($("#ring"), $("#legend"));
let hostNames = [];
let lastNodes = [];
let refreshing = null;
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
  element.className = extra;
  element.addEventListener("click", onClick);
  return element;
}

function short(uuid) {
  return uuid ? uuid.slice(0, 8) : "";
}

// Replaces the rows of `tbody` by `items`, touching only rows whose data changed.
function renderRows(tbody, items, key, cells) {
  const existing = new Map([...tbody.rows].map((row) => [row.dataset.key, row]));
  const rows = items.map((item) => {
    const id = key(item);
    const signature = JSON.stringify(item);
    let row = existing.get(id);
    if (!row || row.dataset.signature !== signature) {
      row = document.createElement("tr");
      row.dataset.key = id;
      row.dataset.signature = signature;
      for (const content of cells(item)) {
        const cell = document.createElement("td");
        if (content instanceof Node) cell.append(content);
        else if (Array.isArray(content)) cell.append(...content);
        else cell.textContent = content ?? "";
        row.append(cell);
      }
    }
    return row;
  });
  const same = rows.length === tbody.rows.length && rows.every((row, index) => tbody.rows[index] === row);
  if (!same) tbody.replaceChildren(...rows);
}

function age(timestamp) {
  if (!timestamp) return "never";
  const seconds = Math.max(0, (Date.now() - Date.parse(timestamp)) / 1000);
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds / 60)} min`;
}

function renderHosts(hosts) {
  hostNames = hosts.map((host) => host.host);
  renderRows($("#hosts tbody"), hosts.map((host) => ({ ...host, age: age(host.last_seen_up) })), (host) => host.host, (host) => {
    const badge = document.createElement("span");
    badge.className = `badge ${host.state}`;
    badge.textContent = host.state;
    const name = document.createElement("span");
    name.className = "swatch";
    name.style.background = hostColour(hostNames, host.host);
    const actions = [
      button("Crash", () => act(() => post(`/api/v1/hosts/${host.host}/crash`), `Crash ${host.host}? It stops at once, without clean-up.`), "danger"),
      button("Start", () => act(() => post(`/api/v1/hosts/${host.host}/start`))),
      button("Drain", () => act(() => post(`/api/v1/hosts/${host.host}/drain`), `Drain ${host.host}? Its nodes move to other hosts.`)),
    ];
    actions.forEach((action) => (action.dataset.host = host.host));
    actions[0].dataset.action = "crash";
    actions[1].dataset.action = "start";
    actions[2].dataset.action = "drain";
    return [[name, host.host], badge, host.age, String(host.nodes), actions];
  });
}

function renderNodes(nodes) {
  lastNodes = nodes;
  const filter = $("#node-filter").value.trim().toLowerCase();
  const shown = filter
    ? nodes.filter((node) => [node.uuid, node.host, node.provision_state, node.instance_uuid, node.compute_node_uuid]
      .some((field) => (field || "").toLowerCase().includes(filter)))
    : nodes;
  $("#nodes-count").textContent = `(${shown.length} of ${nodes.length})`;
  renderRows($("#nodes tbody"), shown, (node) => node.uuid, (node) => {
    const lock = node.locked
      ? button("Unlock", () => act(() => post(`/api/v1/nodes/${node.uuid}/unlock`)))
      : button("Lock", () => act(() => post(`/api/v1/nodes/${node.uuid}/lock`), `Lock ${short(node.uuid)}? Deploys and destroys on it will fail.`));
    const owner = document.createElement("span");
    owner.className = "owner";
    owner.textContent = node.host || "—";
    return [short(node.uuid), owner, short(node.compute_node_uuid), short(node.resource_provider_uuid),
      short(node.instance_uuid), node.provision_state + (node.locked ? " (locked)" : ""), lock];
  });
  for (const row of $("#nodes tbody").rows) {
    const node = shown.find((item) => item.uuid === row.dataset.key);
    row.dataset.owner = node ? node.host || "" : "";
  }
}

function renderInstances(instances) {
  renderRows($("#instances tbody"), instances, (instance) => instance.uuid, (instance) => [
    instance.name, instance.host, short(instance.node), instance.vm_state,
    button("Delete", () => act(() => del(`/api/v1/instances/${instance.uuid}`), `Delete instance ${instance.name}?`), "danger"),
  ]);
}

function renderUsage(providers) {
  const classes = new Map();
  for (const provider of providers) {
    for (const [name, inventory] of Object.entries(provider.inventory)) {
      const entry = classes.get(name) || { name, total: 0, reserved: 0, used: 0 };
      entry.total += inventory.total;
      entry.reserved += inventory.reserved;
      entry.used += provider.usages[name] || 0;
      classes.set(name, entry);
    }
  }
  renderRows($("#usage tbody"), [...classes.values()], (entry) => entry.name, (entry) => [
    entry.name, String(entry.total), String(entry.reserved), String(entry.used),
  ]);
}

function renderMoves(moves) {
  const items = moves.map((move) => {
    const item = document.createElement("li");
    const time = document.createElement("time");
    time.dateTime = move.moved_at;
    time.textContent = new Date(move.moved_at).toLocaleTimeString();
    item.append(time, ` ${short(move.node)} ${move.from_host || "—"} → ${move.to_host} `);
    const reason = document.createElement("span");
    reason.className = `badge ${move.reason}`;
    reason.textContent = move.reason;
    item.append(reason);
    return item;
  });
  $("#moves").replaceChildren(...items);
}

function renderArchiveRuns(runs) {
  renderRows($("#archive-runs tbody"), runs, (run) => String(run.id), (run) => [
    String(run.id), new Date(run.started_at).toLocaleString(), run.status, String(run.total_rows), String(run.purged_rows),
  ]);
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
    item.textContent = `invariant ${group.invariant}: ${group.count} — ${group.first.join("; ")}${group.count > group.first.length ? " …" : ""}`;
    list.append(item);
  }
  banner.replaceChildren(`${total} invariant violations:`, list);
}

// What each part of the page reads; the hosts come first (the ring colours by host).
const loaders = {
  hosts: async () => renderHosts(await get("/api/v1/hosts")),
  nodes: async () => {
    const [nodes, ring_] = await Promise.all([get("/api/v1/nodes"), get("/api/v1/ring")]);
    ring.render(hostNames, nodes);
    $("#ring-meta").textContent = `v${ring_.version}, ${ring_.algorithm}`;
    renderNodes(nodes);
  },
  instances: async () => renderInstances(await get("/api/v1/instances")),
  usage: async () => renderUsage(await get("/api/v1/providers")),
  moves: async () => renderMoves(await get("/api/v1/moves?limit=50")),
  archive: async () => renderArchiveRuns(await get("/api/v1/archive/runs?limit=20")),
  audit: async () => renderAudit(await get("/api/v1/audit")),
};
const EVERYTHING = Object.keys(loaders);

// The parts of the page each event concerns.
const EVENT_PARTS = {
  host: ["hosts"],
  nodes_moved: ["hosts", "nodes", "moves"],
  nodes_claimed: ["hosts", "nodes"],
  nodes: ["nodes", "usage"],
  instance: ["instances", "usage"],
  archive: ["archive", "instances"],
  resync: EVERYTHING,
};

async function refresh(parts) {
  if (parts.has("hosts")) await loaders.hosts();
  await Promise.all([...parts].filter((part) => part !== "hosts").map((part) => loaders[part]()));
}

// Coalesces refreshes: at most one runs; the parts asked for meanwhile follow in one more.
function scheduleRefresh(parts = EVERYTHING) {
  for (const part of parts) dirty.add(part);
  if (refreshing) return;
  const now = new Set(dirty);
  dirty.clear();
  refreshing = refresh(now)
    .catch((error) => showError(`cannot refresh: ${error.message}`))
    .finally(() => {
      refreshing = null;
      if (dirty.size) scheduleRefresh([]);
    });
}

function connect() {
  const status = $("#connection");
  const events = new EventSource("/api/v1/events");
  events.addEventListener("open", () => {
    status.textContent = "live";
    status.className = "ok";
    // After a (re)connection, what happened meanwhile was not seen: read everything.
    scheduleRefresh();
  });
  for (const [type, parts] of Object.entries(EVENT_PARTS)) {
    events.addEventListener(type, () => scheduleRefresh(parts));
  }
  events.addEventListener("audit", (event) => renderAudit(JSON.parse(event.data)));
  events.addEventListener("error", () => {
    status.textContent = "reconnecting…";
    status.className = "bad";
  });
}

$("#node-filter").addEventListener("input", () => renderNodes(lastNodes));
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
if (needsToken() && !token()) {
  const form = $("#token-form");
  form.hidden = false;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken($("#token").value);
    form.hidden = true;
  });
}

setInterval(() => {
  // Heartbeat ages tick even when nothing changes.
  for (const row of $("#hosts tbody").rows) {
    const data = JSON.parse(row.dataset.signature);
    row.cells[2].textContent = age(data.last_seen_up);
  }
}, 1000);
// Heartbeats send no event: the host list (a few rows) is read again now and then so that
// heartbeat ages stay true.
setInterval(() => scheduleRefresh(["hosts"]), 5000);
connect();
