// @ts-check
// The one table of the UI: sortable (headers are buttons: Tab to reach, Enter/Space to sort),
// filterable (a substring of the text columns), only the first `maxRows` rows drawn until asked
// for all. Built so that the numbers are always on screen, at a laptop's width too:
// - columns are laid out pinned first (the row's name: rank, op, kernel), then every numeric
//   column, then the other text; pinned columns stay at the left while the table scrolls
//   sideways;
// - text stays on one line, cut with an ellipsis: long names ("wide" columns) get the room the
//   pinned and numeric columns leave, measured after each draw and on resize; a click on a row's
//   text (or "Wrap text") shows it whole;
// - numbers are written in the unit their field declares (`units`, from api/units), through
//   util.fmtUnit, unless a column formats its own.
// "Columns" hides or shows columns (remembered per table); the header row stays on top.
import { fmtUnit, h, plural } from './util.js';

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
 * A column of a table.
 * @typedef {object} Column
 * @property {string} key the row field shown
 * @property {string} label
 * @property {boolean} [numeric] a number: right-aligned, sorted largest first on the first click
 * @property {boolean} [pin] part of the row's name: laid out first and kept at the left
 * @property {boolean} [wide] long text (names): cut to the room the other columns leave
 * @property {boolean} [mono] text in a monospace font (code: op, kernel and file names)
 * @property {string} [unit] the value's unit (else the table's `units[key]`)
 * @property {(value: any, row: any) => import('./util.js').Child} [format] the cell's content
 * @property {string} [title] the header's tooltip
 * @property {boolean} [filter] matched by the filter (default: text columns)
 */

const MIN_WIDE_PX = 120;
const MAX_WIDE_PX = 560;

/**
 * The columns in the order shown: pinned, numeric, the rest (each in the order given).
 * @param {Column[]} columns
 */
export function layoutOrder(columns) {
  const pinned = columns.filter((c) => c.pin);
  const numeric = columns.filter((c) => !c.pin && c.numeric);
  return [...pinned, ...numeric, ...columns.filter((c) => !c.pin && !c.numeric)];
}

/**
 * rows: plain objects. sort: {key, desc}. filterValue: the filter's initial text. units: the
 * unit of each row key (a tool's declared fields, `unitsAt`). Returns an element with
 * .setRows(rows).
 * @param {{columns: Column[], rows: any[], sort?: {key: string, desc?: boolean} | null, filterable?: boolean,
 *   maxRows?: number, caption?: string, name?: string, placeholder?: string, filterValue?: string,
 *   units?: Record<string, string>}} options
 * @returns {TableBox}
 */
export function dataTable({ columns: given, rows, sort = null, filterable = false, maxRows = 200,
  caption = '', name = 'table', placeholder = 'Filter…', filterValue = '', units = {} }) {
  const columns = layoutOrder(given);
  let allRows = rows;
  let sortKey = sort ? sort.key : null;
  let desc = sort ? sort.desc !== false : false;
  let needle = filterValue.trim().toLowerCase();
  let showAll = false;
  const hidden = new Set(readHidden(name).filter((k) => columns.some((c) => c.key === k)));
  const filterKeys = columns.filter((c) => c.filter || (!c.numeric && c.filter !== false)).map((c) => c.key);
  const pinIndex = new Map(columns.filter((c) => c.pin).map((c, i) => [c.key, i]));
  /** @param {Column} col */
  const cellClass = (col) => [col.numeric ? 'numeric' : 'text', col.wide ? 'wide' : null,
    col.pin ? 'pin' : null].filter(Boolean).join(' ');
  /** @param {Column} col */
  const pinStyle = (col) => (col.pin ? { left: `var(--pin-left-${pinIndex.get(col.key)}, 0px)` } : null);

  const headRow = h('tr');
  const tbody = h('tbody');
  const count = h('span', { class: 'count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'link more', hidden: true, onclick: () => { showAll = true; draw(); } });
  const headers = new Map(columns.map((col) => {
    const button = h('button', { type: 'button', class: 'sort', title: col.title || null }, col.label);
    const th = h('th', { scope: 'col', class: cellClass(col), dataset: { key: col.key }, style: pinStyle(col) }, button);
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
  const hasText = columns.some((c) => !c.numeric);
  const wrapAll = hasText ? h('label', { class: 'wrap-toggle', title: 'Show every name whole, over several lines' },
    h('input', { type: 'checkbox', dataset: { control: 'wrap' },
      /** @param {Event} e */
      onchange: (e) => { table.classList.toggle('wrapped', /** @type {HTMLInputElement} */ (e.target).checked); fitSoon(); } }),
    ' Wrap text') : null;

  // A click on a row's text shows that row's text whole (and a second click cuts it again).
  tbody.addEventListener('click', (e) => {
    const cell = e.target instanceof Element ? e.target.closest('td.text') : null;
    if (!cell || (e.target instanceof Element && e.target.closest('a, button'))) return;
    const row = /** @type {HTMLElement} */ (cell.parentElement);
    row.classList.toggle('expanded');
    fitSoon();
  });

  /**
   * The room of the pinned long-text columns: what the pinned and numeric columns leave of
   * the box's width (measured with the long text at its narrowest), and the offsets that keep
   * the pinned columns at the left.
   */
  function fit() {
    const avail = scroll.clientWidth;
    if (!avail || !table.isConnected) return;
    const cells = /** @type {HTMLTableCellElement[]} */ ([...headRow.children]);
    const flexible = cells.filter((th) => th.classList.contains('pin') && th.classList.contains('wide'));
    if (flexible.length) {
      table.style.setProperty('--wide-w', `${MIN_WIDE_PX}px`);
      table.style.width = 'max-content';
      let fixed = 0;
      for (const th of cells) {
        if (th.classList.contains('numeric') || (th.classList.contains('pin') && !th.classList.contains('wide'))) {
          fixed += th.getBoundingClientRect().width;
        }
      }
      const padding = flexible.reduce((n, th) => n + th.getBoundingClientRect().width, 0) - flexible.length * MIN_WIDE_PX;
      const room = Math.floor((avail - fixed - padding - 2) / flexible.length);
      table.style.setProperty('--wide-w', `${Math.max(MIN_WIDE_PX, Math.min(MAX_WIDE_PX, room))}px`);
      table.style.width = '';
    }
    let left = 0;
    for (const th of cells) {
      if (!th.classList.contains('pin')) break;
      table.style.setProperty(`--pin-left-${pinIndex.get(th.dataset.key || '')}`, `${left}px`);
      left += th.getBoundingClientRect().width;
    }
    bar.update();
  }
  let fitQueued = false;
  function fitSoon() {
    if (fitQueued) return;
    fitQueued = true;
    requestAnimationFrame(() => { fitQueued = false; fit(); });
  }
  new ResizeObserver(fitSoon).observe(scroll);

  /**
   * @param {Column} col
   * @param {any} row
   */
  function cell(col, row) {
    const value = row[col.key];
    if (col.numeric) {
      const text = col.format ? col.format(value, row) : fmtUnit(value, col.unit ?? units[col.key]);
      return h('td', { class: cellClass(col), dataset: { key: col.key, value: value ?? '' }, style: pinStyle(col) }, text);
    }
    const content = col.format ? col.format(value, row) : value ?? '';
    const title = value === null || value === undefined || typeof value === 'object' ? null : String(value);
    return h('td', { class: cellClass(col), dataset: { key: col.key, value: value ?? '' }, style: pinStyle(col) },
      h('span', { class: col.mono ? 'cell-text mono' : 'cell-text', title }, content));
  }

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
    tbody.replaceChildren(...drawn.map((row) => h('tr', {}, shown.map((col) => cell(col, row)))));
    count.textContent = view.length === allRows.length
      ? plural(allRows.length, 'row')
      : `${view.length.toLocaleString('en-US')} of ${plural(allRows.length, 'row')}`;
    if (hidden.size) count.textContent += ` · ${plural(hidden.size, 'column')} hidden`;
    more.hidden = drawn.length === view.length;
    more.textContent = `Show all ${plural(view.length, 'row')}`;
    fitSoon();
  }

  const box = /** @type {TableBox} */ (h('div', { class: 'table-box' },
    h('div', { class: 'table-tools' }, filter, count, wrapAll, chooser), bar, scroll, more));
  box.setRows = (newRows) => { allRows = newRows; draw(); };
  draw();
  return box;
}
