// The admin API client: JSON in and out, the session's CSRF token on every change (the
// session itself is an HttpOnly cookie the page never sees), and the API's own error message on
// failure; a 401 says the session ended. It counts what it receives (window.ringmaster.bytes),
// so an idle page can be seen to cost little.

// What the page measures of itself: bytes received (API answers and events, as text); main
// thread time spent parsing and rendering (`spentMs`, in all) and the most one event took to
// apply — every answer it asked for parsed and rendered (`applyMaxMs`); when the first paint
// was complete (`firstPaintMs`, from navigation).
export const stats = (window.ringmaster = { bytes: 0, events: 0, spentMs: 0, applyMaxMs: 0, firstPaintMs: null });

// The CSRF token of the session (the ringmaster_csrf cookie), sent back as X-CSRF-Token.
function csrf() {
  const pair = document.cookie.split("; ").find((cookie) => cookie.startsWith("ringmaster_csrf="));
  return pair ? pair.slice("ringmaster_csrf=".length) : null;
}

// Called when an answer says the session ended (401).
let onLoggedOut = () => {};
export function whenLoggedOut(callback) {
  onLoggedOut = callback;
}

// Runs `apply` and notes how long it held the main thread.
export function timed(apply) {
  const started = performance.now();
  try {
    return apply();
  } finally {
    const spent = performance.now() - started;
    stats.spentMs += spent;
    stats.applyMaxMs = Math.max(stats.applyMaxMs, spent);
  }
}

// Runs `work` (asynchronous) and notes the main thread time its parts spent together.
export async function applying(work) {
  const before = stats.spentMs;
  try {
    return await work();
  } finally {
    stats.applyMaxMs = Math.max(stats.applyMaxMs, stats.spentMs - before);
  }
}

async function send(method, path, body) {
  const headers = { Accept: "application/json" };
  // A change always says JSON: the server refuses a mutating request that a form could forge.
  if (body !== undefined || method !== "GET") headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrf()) headers["X-CSRF-Token"] = csrf();
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  stats.bytes += text.length;
  const parsed = text ? timed(() => JSON.parse(text)) : null;
  if (response.status === 401 && !path.startsWith("/api/v1/session")) onLoggedOut();
  if (!response.ok) {
    const message = parsed && parsed.error ? parsed.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return { body: parsed, headers: response.headers };
}

export async function request(method, path, body) {
  return (await send(method, path, body)).body;
}

// A page of a listing and how many the listing has in all (its X-Total-Count).
export async function page(path) {
  const { body, headers } = await send("GET", path);
  return { rows: body, total: Number(headers.get("X-Total-Count") || body.length) };
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
export const del = (path) => request("DELETE", path);
