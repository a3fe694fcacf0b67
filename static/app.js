// The dashboard: reads the admin API only, and shows what it answers or the error it gives.

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return body;
}

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

async function refresh() {
  const health = document.getElementById("health");
  try {
    await getJson("/healthz");
    health.textContent = "healthy";
    health.className = "ok";
  } catch (error) {
    health.textContent = `unhealthy: ${error.message}`;
    health.className = "bad";
  }
  try {
    const hosts = await getJson("/api/v1/hosts");
    const rows = hosts.map((host) => {
      const tr = document.createElement("tr");
      tr.append(
        cell(host.host),
        cell(host.state),
        cell(String(host.nodes)),
        cell(host.last_seen_up ?? "never"),
      );
      return tr;
    });
    document.querySelector("#hosts tbody").replaceChildren(...rows);
    document.getElementById("hosts-empty").hidden = hosts.length > 0;
  } catch (error) {
    health.textContent = `cannot list hosts: ${error.message}`;
    health.className = "bad";
  }
}

refresh();
setInterval(refresh, 2000);
