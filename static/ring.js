// Who owns the nodes, told truthfully: the default ring has no positions, so the picture is
// each host's share — a grid with one cell per node (or per few nodes, at 100,000), grouped by
// owner and drawn on a canvas from the counts alone — and a legend with the counts and shares.
// Colours stay distinct for 24 hosts; more hosts get colours spread around the hue circle.

const PALETTE = [
  "#0067a5", "#f38400", "#008856", "#be0032", "#875692", "#f3c300", "#a1caf1", "#882d17",
  "#8db600", "#e68fac", "#604e97", "#f6a600", "#2b3d26", "#c2b280", "#b3446c", "#17becf",
  "#654522", "#e25822", "#dcd300", "#f99379", "#222222", "#848482", "#5fd35f", "#d62ad6",
];
const UNOWNED = "#dde1e8";

export function hostColour(hosts, host) {
  const index = hosts.indexOf(host);
  if (index < 0) return UNOWNED;
  if (index < PALETTE.length) return PALETTE[index];
  // Beyond the palette: the golden angle around the hue circle, three lightnesses.
  const hue = Math.round((index * 137.508) % 360);
  return `hsl(${hue} 70% ${[38, 55, 70][index % 3]}%)`;
}

const format = new Intl.NumberFormat("en-US");

export class Ownership {
  constructor(canvas, legend) {
    this.canvas = canvas;
    this.legend = legend;
  }

  // `hosts`: every host, in order; `counts`: nodes per host; `total`: every node, owned or not.
  // The legend adds up to the node total: owners not in `hosts` are listed after them, and the
  // nodes nobody owns are one more entry.
  render(hosts, counts, total) {
    const names = [...hosts, ...Object.keys(counts).filter((host) => !hosts.includes(host)).sort()];
    const owners = names.map((host) => ({ host, nodes: counts[host] || 0, colour: hostColour(names, host) }));
    const owned = owners.reduce((sum, owner) => sum + owner.nodes, 0);
    const whole = Math.max(total, owned);
    const unowned = whole - owned;
    const runs = [...owners, { host: "", nodes: unowned, colour: UNOWNED }].filter((run) => run.nodes > 0);
    this.draw(runs, whole);

    const items = whole ? owners.map((owner) => this.item(owner.colour, owner.host, owner.nodes, whole)) : [];
    if (unowned) items.push(this.item(UNOWNED, "no owner", unowned, whole));
    if (!items.length) {
      const none = document.createElement("li");
      none.className = "muted empty";
      none.textContent = "No nodes yet";
      items.push(none);
    }
    this.legend.replaceChildren(...items);
    this.canvas.setAttribute("aria-label", `nodes by owner: ${items.map((item) => item.textContent).join("; ")}`);
  }

  item(colour, label, nodes, total) {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colour;
    const share = total ? ` (${((100 * nodes) / total).toFixed(1)}%)` : "";
    item.append(swatch, `${label} ${format.format(nodes)}${share}`);
    item.dataset.host = label;
    return item;
  }

  // One cell per node (or per `per` nodes), row by row, owner after owner; each run's cells are
  // its share of the grid's cells (largest remainders), so the runs fill the rows evenly and
  // never spill past the last one.
  draw(runs, total) {
    const ratio = window.devicePixelRatio || 1;
    const width = Math.round((this.canvas.clientWidth || 360) * ratio);
    const height = Math.round((this.canvas.clientHeight || 200) * ratio);
    if (this.canvas.width !== width) this.canvas.width = width;
    if (this.canvas.height !== height) this.canvas.height = height;
    const context = this.canvas.getContext("2d");
    context.clearRect(0, 0, width, height);
    if (!total) return;
    const size = Math.max(1, Math.floor(Math.sqrt((width * height) / total)));
    const columns = Math.max(1, Math.floor(width / size));
    const rows = Math.max(1, Math.floor(height / size));
    const per = Math.max(1, Math.ceil(total / (columns * rows)));
    const gap = size >= 6 ? 1 : 0;
    const cells = shares(runs.map((run) => run.nodes), Math.ceil(total / per));
    let cell = 0;
    runs.forEach((run, index) => {
      context.fillStyle = run.colour;
      let left = cells[index];
      while (left > 0) {
        const column = cell % columns;
        const row = Math.floor(cell / columns);
        const length = Math.min(left, columns - column);
        context.fillRect(column * size, row * size, length * size - gap, size - gap);
        cell += length;
        left -= length;
      }
    });
  }
}

// `slots` split among `counts` in proportion (largest remainders), every non-zero count at
// least one slot when there are enough: the counts of cells the runs take.
function shares(counts, slots) {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (!total) return counts.map(() => 0);
  const floor = slots >= counts.filter((count) => count > 0).length ? 1 : 0;
  const given = counts.map((count) => (count > 0 ? floor : 0));
  const rest = slots - given.reduce((sum, count) => sum + count, 0);
  const exact = counts.map((count) => (count * rest) / total);
  exact.forEach((value, index) => (given[index] += Math.floor(value)));
  let left = slots - given.reduce((sum, count) => sum + count, 0);
  const order = exact.map((value, index) => [value - Math.floor(value), index]).sort((a, b) => b[0] - a[0]);
  for (const [, index] of order) {
    if (left <= 0) break;
    given[index] += 1;
    left -= 1;
  }
  return given;
}
