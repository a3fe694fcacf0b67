// The admin API client: JSON in and out, the admin token on mutating requests when one is
// needed (any address but loopback), and the API's own error message on failure.

const LOOPBACK = ["127.0.0.1", "localhost", "[::1]", "::1"];

export function needsToken() {
  return !LOOPBACK.includes(window.location.hostname);
}

export function token() {
  return sessionStorage.getItem("ringmaster-token");
}

export function setToken(value) {
  sessionStorage.setItem("ringmaster-token", value);
}

export async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && token()) headers.Authorization = `Bearer ${token()}`;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const message = parsed && parsed.error ? parsed.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return parsed;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
export const del = (path) => request("DELETE", path);
