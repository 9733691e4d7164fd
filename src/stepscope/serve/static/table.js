// @ts-check
// A sortable, filterable table. Headers are buttons (Tab to reach, Enter/Space to sort);
// the filter matches a substring of the text columns. Only the first `maxRows` rows are drawn
// until asked for all, so tables of thousands of ops stay fast. Wide tables keep every column:
// the header row and the first column stay in view while scrolling, a second horizontal
// scrollbar sits above the table, and "Columns" hides or shows columns (remembered per table).
import { fmtNum, h, plural } from './util.js';

const HIDDEN_KEY = 'stepscope.columns.';

/**
 * The columns this table had hidden (remembered in the browser).
 * @param {string} name
 * @returns {string[]}
 */
function readHidden(name) {
  try { return JSON.parse(localStorage.getItem(HIDDEN_KEY + name) || '[]'); } catch { return []; }
}

/**
 * @param {string} name
 * @param {string[]} keys
 */
function writeHidden(name, keys) {
  try { localStorage.setItem(HIDDEN_KEY + name, JSON.stringify(keys)); } catch { /* not remembered */ }
}

/**
 * A scrollbar element with `update()`: resize it to the table (call after drawing).
 * @typedef {HTMLDivElement & {update: () => void}} ScrollBar
 */

/**
 * A table's box, with `setRows(rows)` to show other rows (filter, sort and columns kept).
 * @typedef {HTMLDivElement & {setRows: (rows: any[]) => void}} TableBox
 */

/**
 * A horizontal scrollbar above `box` that scrolls with it (both ways).
 * @param {HTMLElement} box
 * @param {HTMLElement} table
 * @returns {ScrollBar}
 */
function topScrollbar(box, table) {
  const inner = h('div', { class: 'table-hscroll-inner' });
  const bar = /** @type {ScrollBar} */ (h('div', { class: 'table-hscroll', 'aria-hidden': 'true' }, inner));
  let syncing = false;
  /**
   * @param {HTMLElement} from
   * @param {HTMLElement} to
   */
  const sync = (from, to) => () => {
    if (syncing) { syncing = false; return; }
    syncing = true;
    to.scrollLeft = from.scrollLeft;
  };
  bar.addEventListener('scroll', sync(bar, box));
  box.addEventListener('scroll', sync(box, bar));
  bar.update = () => {
    inner.style.width = `${table.scrollWidth}px`;
    bar.hidden = table.scrollWidth <= box.clientWidth + 1;
  };
  new ResizeObserver(() => bar.update()).observe(box);
  return bar;
}

/**
 * columns: [{key, label, numeric?, format?(value, row), title?, filter?}]
 * rows: plain objects. sort: {key, desc}. filterValue: the filter's initial text.
 * Returns an element with .setRows(rows).
 * @param {{columns: any[], rows: any[], sort?: {key: string, desc?: boolean} | null, filterable?: boolean,
 *   maxRows?: number, caption?: string, name?: string, placeholder?: string, filterValue?: string}} options
 * @returns {TableBox}
 */
export function dataTable({ columns, rows, sort = null, filterable = false, maxRows = 200,
  caption = '', name = 'table', placeholder = 'Filter…', filterValue = '' }) {
  let allRows = rows;
  let sortKey = sort ? sort.key : null;
  let desc = sort ? sort.desc !== false : false;
  let needle = filterValue.trim().toLowerCase();
  let showAll = false;
  const hidden = new Set(readHidden(name).filter((k) => columns.some((c) => c.key === k)));
  const filterKeys = columns.filter((c) => c.filter || (!c.numeric && c.filter !== false)).map((c) => c.key);

  const headRow = h('tr');
  const tbody = h('tbody');
  const count = h('span', { class: 'count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'link more', hidden: true, onclick: () => { showAll = true; draw(); } });
  const headers = new Map(columns.map((col) => {
    const button = h('button', { type: 'button', class: 'sort', title: col.title || null }, col.label);
    const th = h('th', { scope: 'col', class: col.numeric ? 'numeric' : null, dataset: { key: col.key } }, button);
    button.addEventListener('click', () => {
      if (sortKey === col.key) desc = !desc;
      else { sortKey = col.key; desc = Boolean(col.numeric); }
      draw();
    });
    return [col.key, th];
  }));
  const filter = filterable
    ? h('input', { type: 'search', class: 'filter', placeholder, 'aria-label': `Filter ${caption || name}`, value: filterValue || null,
      /** @param {Event} e */
      oninput: (e) => {
        needle = /** @type {HTMLInputElement} */ (e.target).value.trim().toLowerCase();
        showAll = false;
        draw();
      } })
    : null;
  const chooser = columns.length > 3 ? h('details', { class: 'col-chooser' },
    h('summary', { title: 'Show or hide columns' }, 'Columns'),
    h('div', { class: 'col-menu', role: 'group', 'aria-label': 'Columns shown' }, columns.map((col) => h('label', {},
      h('input', { type: 'checkbox', checked: !hidden.has(col.key), dataset: { column: col.key },
        /** @param {Event} e */
        onchange: (e) => {
          if (/** @type {HTMLInputElement} */ (e.target).checked) hidden.delete(col.key); else hidden.add(col.key);
          writeHidden(name, [...hidden]);
          draw();
        } }), ` ${col.label}`)))) : null;

  /**
   * Row order for the sorted column: numbers by value, anything else as text, missing last.
   * @param {Record<string, unknown>} a
   * @param {Record<string, unknown>} b
   */
  function compare(a, b) {
    const key = /** @type {string} */ (sortKey); // only called while a column is sorted
    const x = a[key];
    const y = b[key];
    if (x === y) return 0;
    if (x === undefined || x === null) return 1; // missing values last whatever the direction
    if (y === undefined || y === null) return -1;
    const r = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return desc ? -r : r;
  }

  const table = h('table', { class: 'data', dataset: { table: name } },
    caption ? h('caption', { class: 'sr-only' }, caption) : null,
    h('thead', {}, headRow), tbody);
  const scroll = h('div', { class: 'table-scroll' }, table);
  const bar = topScrollbar(scroll, table);

  function draw() {
    const shown = columns.filter((c) => !hidden.has(c.key));
    let view = allRows;
    if (needle) view = view.filter((r) => filterKeys.some((k) => String(r[k] ?? '').toLowerCase().includes(needle)));
    if (sortKey) view = [...view].sort(compare);
    // Every column has its header cell (made once, below).
    headRow.replaceChildren(...shown.map((c) => /** @type {HTMLTableCellElement} */ (headers.get(c.key))));
    for (const th of headers.values()) {
      const active = th.dataset.key === sortKey;
      if (active) th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    }
    const drawn = showAll ? view : view.slice(0, maxRows);
    tbody.replaceChildren(...drawn.map((row) => h('tr', {}, shown.map((col) => {
      const value = row[col.key];
      const text = col.format ? col.format(value, row) : (col.numeric ? fmtNum(value) : value ?? '');
      return h('td', { class: col.numeric ? 'numeric' : null, dataset: { key: col.key, value: value ?? '' } }, text);
    }))));
    count.textContent = view.length === allRows.length
      ? plural(allRows.length, 'row')
      : `${view.length.toLocaleString('en-US')} of ${plural(allRows.length, 'row')}`;
    if (hidden.size) count.textContent += ` · ${plural(hidden.size, 'column')} hidden`;
    more.hidden = drawn.length === view.length;
    more.textContent = `Show all ${plural(view.length, 'row')}`;
    requestAnimationFrame(() => bar.update());
  }

  const box = /** @type {TableBox} */ (h('div', { class: 'table-box' },
    h('div', { class: 'table-tools' }, filter, count, chooser), bar, scroll, more));
  box.setRows = (newRows) => { allRows = newRows; draw(); };
  draw();
  return box;
}
