// A table that renders only the rows in view: the listing is read a page at a time from the
// API (offset and limit, the total from X-Total-Count) as the table scrolls, and spacer rows
// keep the scrollbar true to the whole listing. 100,000 nodes are a few dozen <tr>.

import { page, timed } from "./api.js";

const ROW = 30; // px; .scroller tbody tr has this height
const OVERSCAN = 10;
const PAGE = 100;

// The row of `item`: the one of `existing` with its key when its data did not change, else a
// new one with its cells (text, a node, or a list of them).
export function keyedRow(existing, item, key, cells) {
  const id = key(item);
  const signature = JSON.stringify(item);
  const kept = existing.get(id);
  if (kept && kept.dataset.signature === signature) return kept;
  const row = document.createElement("tr");
  row.dataset.key = id;
  row.dataset.signature = signature;
  for (const content of cells(item)) {
    const cell = document.createElement("td");
    if (content instanceof Node) cell.append(content);
    else if (Array.isArray(content)) cell.append(...content);
    else cell.textContent = content ?? "";
    row.append(cell);
  }
  return row;
}

// The one row an empty table shows: `text` ("none") across its `columns`.
export function emptyRow(columns, text = "none") {
  const row = document.createElement("tr");
  row.dataset.key = "empty";
  row.className = "empty";
  const cell = document.createElement("td");
  cell.colSpan = columns;
  cell.className = "muted";
  cell.textContent = text;
  row.append(cell);
  return row;
}

export class VirtualTable {
  // `scroller`: the element that scrolls; `tbody`: the rows; `path`: the listing;
  // `key(item)`, `cells(item)`: a row's identity and cells; `onTotal(shown)`: told the total;
  // `empty`: what the table says when the listing has nothing.
  constructor({ scroller, tbody, path, key, cells, columns, onTotal, empty = "none" }) {
    Object.assign(this, { scroller, tbody, path, key, cells, columns, onTotal, empty });
    this.query = "";
    // Not known until the first page is read (then 0 means empty, not unknown).
    this.total = null;
    this.cache = { offset: 0, rows: [] };
    this.asked = 0;
    this.fetching = null;
    this.frame = 0;
    this.top = this.spacer();
    this.bottom = this.spacer();
    scroller.addEventListener("scroll", () => this.schedule());
  }

  spacer() {
    const row = document.createElement("tr");
    row.className = "spacer";
    const cell = document.createElement("td");
    cell.colSpan = this.columns;
    row.append(cell);
    return row;
  }

  // Forgets the rows drawn, so that the next render draws every row anew (their cells depend
  // on something besides their data).
  redraw() {
    this.tbody.replaceChildren();
    timed(() => this.render());
  }

  // Shows the listing with the query `query` (URL parameters), from the top.
  setQuery(query) {
    this.query = query;
    this.cache = { offset: 0, rows: [] };
    this.scroller.scrollTop = 0;
    return this.refresh();
  }

  // The rows in view (and a few more): [first, last).
  window() {
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW) - OVERSCAN);
    const count = Math.ceil((this.scroller.clientHeight || 600) / ROW) + 2 * OVERSCAN;
    const end = first + count;
    return [first, this.total === null ? end : Math.min(this.total, end)];
  }

  // Reads the page around the rows in view again (after an event) and renders it.
  async refresh() {
    const [first, last] = this.window();
    const offset = Math.max(0, Math.floor(first - (PAGE - (last - first)) / 2));
    const asked = ++this.asked;
    const separator = this.path.includes("?") ? "&" : "?";
    const query = this.query ? `&${this.query}` : "";
    const { rows, total } = await page(`${this.path}${separator}limit=${PAGE}&offset=${offset}${query}`);
    if (asked !== this.asked) return; // a later read answers instead
    timed(() => {
      this.total = total;
      this.cache = { offset, rows };
      if (this.onTotal) this.onTotal(total);
      this.render();
    });
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      timed(() => this.render());
      const [first, last] = this.window();
      const { offset, rows } = this.cache;
      const covered = first >= offset && Math.min(last, this.total ?? last) <= offset + rows.length;
      if (!covered) {
        clearTimeout(this.fetching);
        this.fetching = setTimeout(() => this.refresh().catch(() => {}), 60);
      }
    });
  }

  // Renders the rows in view from the cache (a placeholder where a page is still coming);
  // a row whose data did not change keeps its element.
  render() {
    if (this.total === 0) {
      const shown = this.tbody.rows.length === 1 && this.tbody.rows[0].dataset.key === "empty";
      if (!shown) this.tbody.replaceChildren(emptyRow(this.columns, this.empty));
      return;
    }
    const [first, last] = this.window();
    const existing = new Map([...this.tbody.rows].map((row) => [row.dataset.key, row]));
    const rows = [];
    for (let index = first; index < last; index += 1) {
      const item = this.cache.rows[index - this.cache.offset];
      if (!item) {
        const placeholder = existing.get(`#${index}`) || document.createElement("tr");
        placeholder.dataset.key = `#${index}`;
        if (!placeholder.cells.length) {
          const cell = document.createElement("td");
          cell.colSpan = this.columns;
          cell.className = "muted";
          cell.textContent = "…";
          placeholder.append(cell);
        }
        rows.push(placeholder);
        continue;
      }
      rows.push(keyedRow(existing, item, this.key, this.cells));
    }
    this.top.firstChild.style.height = `${first * ROW}px`;
    this.bottom.firstChild.style.height = `${Math.max(0, (this.total ?? last) - last) * ROW}px`;
    const wanted = [this.top, ...rows, this.bottom];
    const same = wanted.length === this.tbody.rows.length && wanted.every((row, index) => this.tbody.rows[index] === row);
    if (!same) this.tbody.replaceChildren(...wanted);
  }
}
