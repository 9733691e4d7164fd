// A sortable, filterable table. Headers are buttons (Tab to reach, Enter/Space to sort);
// the filter matches a substring of the text columns. Only the first `maxRows` rows are drawn
// until asked for all, so tables of thousands of ops stay fast.
import { fmtNum, h } from './util.js';

/**
 * columns: [{key, label, numeric?, format?(value, row), title?, filter?}]
 * rows: plain objects. sort: {key, desc}. Returns an element with .setRows(rows).
 */
export function dataTable({ columns, rows, sort = null, filterable = false, maxRows = 200,
  caption = '', name = 'table', placeholder = 'Filter…', filterValue = '' }) {
  let allRows = rows;
  let sortKey = sort ? sort.key : null;
  let desc = sort ? sort.desc !== false : false;
  let needle = filterValue.trim().toLowerCase();
  let showAll = false;
  const filterKeys = columns.filter((c) => c.filter || (!c.numeric && c.filter !== false)).map((c) => c.key);

  const tbody = h('tbody');
  const count = h('span', { class: 'count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'link more', hidden: true, onclick: () => { showAll = true; draw(); } });
  const headers = columns.map((col) => {
    const button = h('button', { type: 'button', class: 'sort', title: col.title || null }, col.label);
    const th = h('th', { scope: 'col', class: col.numeric ? 'numeric' : null, dataset: { key: col.key } }, button);
    button.addEventListener('click', () => {
      if (sortKey === col.key) desc = !desc;
      else { sortKey = col.key; desc = Boolean(col.numeric); }
      draw();
    });
    return th;
  });
  const filter = filterable
    ? h('input', { type: 'search', class: 'filter', placeholder, 'aria-label': `Filter ${caption || name}`, value: filterValue || null,
      oninput: (e) => { needle = e.target.value.trim().toLowerCase(); showAll = false; draw(); } })
    : null;

  function compare(a, b) {
    const x = a[sortKey];
    const y = b[sortKey];
    if (x === y) return 0;
    if (x === undefined || x === null) return 1; // missing values last whatever the direction
    if (y === undefined || y === null) return -1;
    const r = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return desc ? -r : r;
  }

  function draw() {
    let view = allRows;
    if (needle) view = view.filter((r) => filterKeys.some((k) => String(r[k] ?? '').toLowerCase().includes(needle)));
    if (sortKey) view = [...view].sort(compare);
    for (const th of headers) {
      const active = th.dataset.key === sortKey;
      if (active) th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    }
    const drawn = showAll ? view : view.slice(0, maxRows);
    tbody.replaceChildren(...drawn.map((row) => h('tr', {}, columns.map((col) => {
      const value = row[col.key];
      const text = col.format ? col.format(value, row) : (col.numeric ? fmtNum(value) : value ?? '');
      return h('td', { class: col.numeric ? 'numeric' : null, dataset: { key: col.key, value: value ?? '' } }, text);
    }))));
    count.textContent = view.length === allRows.length
      ? `${allRows.length.toLocaleString('en-US')} rows`
      : `${view.length.toLocaleString('en-US')} of ${allRows.length.toLocaleString('en-US')} rows`;
    more.hidden = drawn.length === view.length;
    more.textContent = `Show all ${view.length.toLocaleString('en-US')} rows`;
  }

  const table = h('table', { class: 'data', dataset: { table: name } },
    caption ? h('caption', { class: 'sr-only' }, caption) : null,
    h('thead', {}, h('tr', {}, headers)), tbody);
  const box = h('div', { class: 'table-box' },
    h('div', { class: 'table-tools' }, filter, count), h('div', { class: 'table-scroll' }, table), more);
  box.setRows = (newRows) => { allRows = newRows; draw(); };
  draw();
  return box;
}
