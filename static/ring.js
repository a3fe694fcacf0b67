// The hash ring as an SVG circle: an outer arc per host (its share of the nodes) and a dot per
// node at the angle of its uuid, coloured by its owner. Dots are kept by uuid, so a move only
// changes one attribute (and CSS animates the colour); a new set of nodes is drawn in one pass.

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#2f6fdf", "#e07b1a", "#2a9d5c", "#c33c54", "#7b4fd1", "#148f9c", "#b08a12", "#5b6777"];

export function hostColour(hosts, host) {
  const index = hosts.indexOf(host);
  return index < 0 ? "#9aa3b2" : PALETTE[index % PALETTE.length];
}

// Angle of a node: the first 32 bits of its uuid as a fraction of the circle.
function angleOf(uuid) {
  return (parseInt(uuid.replace(/-/g, "").slice(0, 8), 16) / 0x100000000) * 2 * Math.PI;
}

function arcPath(radius, start, end) {
  const large = end - start > Math.PI ? 1 : 0;
  const x1 = radius * Math.sin(start);
  const y1 = -radius * Math.cos(start);
  const x2 = radius * Math.sin(end);
  const y2 = -radius * Math.cos(end);
  return `M ${x1.toFixed(2)} ${y1.toFixed(2)} A ${radius} ${radius} 0 ${large} 1 ${x2.toFixed(2)} ${y2.toFixed(2)}`;
}

export class Ring {
  constructor(svg, legend) {
    this.svg = svg;
    this.legend = legend;
    this.dots = new Map();
    this.arcs = document.createElementNS(SVG, "g");
    this.points = document.createElementNS(SVG, "g");
    const base = document.createElementNS(SVG, "circle");
    base.setAttribute("r", "90");
    base.setAttribute("class", "ring-base");
    svg.append(base, this.arcs, this.points);
  }

  render(hosts, nodes) {
    // Host arcs: consecutive shares of the circle, in host order.
    const total = Math.max(nodes.length, 1);
    const counts = new Map(hosts.map((host) => [host, 0]));
    for (const node of nodes) if (node.host) counts.set(node.host, (counts.get(node.host) || 0) + 1);
    const arcs = [];
    let start = 0;
    for (const host of hosts) {
      const share = ((counts.get(host) || 0) / total) * 2 * Math.PI;
      if (share > 0) {
        const end = start + Math.min(share, 2 * Math.PI - 0.0001);
        const arc = document.createElementNS(SVG, "path");
        arc.setAttribute("d", arcPath(104, start, end));
        arc.setAttribute("stroke", hostColour(hosts, host));
        arc.setAttribute("class", "ring-arc");
        arc.dataset.host = host;
        arcs.push(arc);
        start = end;
      }
    }
    this.arcs.replaceChildren(...arcs);

    // Node dots: created once per uuid, then only recoloured.
    const seen = new Set();
    const created = [];
    for (const node of nodes) {
      seen.add(node.uuid);
      let dot = this.dots.get(node.uuid);
      if (!dot) {
        dot = document.createElementNS(SVG, "circle");
        const angle = angleOf(node.uuid);
        dot.setAttribute("cx", (90 * Math.sin(angle)).toFixed(2));
        dot.setAttribute("cy", (-90 * Math.cos(angle)).toFixed(2));
        dot.setAttribute("r", nodes.length > 200 ? "1.6" : "4");
        dot.setAttribute("class", "ring-node");
        dot.dataset.node = node.uuid;
        const title = document.createElementNS(SVG, "title");
        dot.append(title);
        this.dots.set(node.uuid, dot);
        created.push(dot);
      }
      const owner = node.host || "";
      if (dot.dataset.owner !== owner) {
        dot.dataset.owner = owner;
        dot.setAttribute("fill", hostColour(hosts, node.host));
        dot.firstChild.textContent = `${node.uuid} on ${owner || "no host"}`;
      }
    }
    if (created.length) this.points.append(...created);
    for (const [uuid, dot] of this.dots) {
      if (!seen.has(uuid)) {
        dot.remove();
        this.dots.delete(uuid);
      }
    }

    const items = hosts.map((host) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = hostColour(hosts, host);
      item.append(swatch, `${host} (${counts.get(host) || 0})`);
      return item;
    });
    this.legend.replaceChildren(...items);
  }
}
