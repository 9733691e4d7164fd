// @ts-check
// Trace viewer details pane: one selected event (all stats, flow links), the aggregate of a
// box selection, the timing mark. Profile text only ever goes into text nodes.
import { dataTable } from '../table.js';
import { fmtInt, fmtNs, h, note } from '../util.js';

function statValue(key, value) {
  if (typeof value === 'number' && /(_ns|_ps)$/.test(key)) return `${fmtInt(value)} (${fmtNs(key.endsWith('_ps') ? value / 1000 : value)})`;
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : String(value);
  return String(value);
}

/**
 * Details of one event (the `event` endpoint's answer); `go(brief)` jumps to another event,
 * `opHref` (or null) links to the op in op_stats.
 */
export function eventDetails(e, go, opHref = null) {
  const rows = [
    ...(e.host ? [['Host', e.host]] : []), // a multi-host view
    ['Name', e.name], ['Display name', e.display_name || '–'],
    ['Section', e.section], ['Track', e.track],
    ['Start', fmtNs(e.start_ns)], ['Duration', fmtNs(e.dur_ns)], ['End', fmtNs(e.start_ns + e.dur_ns)],
    ['Depth', String(e.depth)], ['Event', String(e.event)],
  ];
  const stats = Object.entries(e.stats || {});
  const flows = (e.flows || []).map((f) => h('li', { dataset: { flow: f.direction } },
    f.direction === 'out' ? '→ ' : '← ',
    h('button', { type: 'button', dataset: { event: f.event }, onclick: () => go(f) },
      `${f.name}`), ` (${f.kind}, ${f.section} · ${f.track}, at ${fmtNs(f.start_ns)}, ${fmtNs(f.dur_ns)})`));
  return h('div', { class: 'tv-event', dataset: { event: e.event } },
    h('h2', {}, e.name),
    opHref ? h('p', { class: 'tv-links' }, h('a', { href: opHref, dataset: { link: 'op_stats' } }, 'Show this op in Op stats')) : null,
    h('table', { class: 'data', dataset: { table: 'event' } }, h('tbody', {}, rows.map(([k, v]) =>
      h('tr', {}, h('th', { scope: 'row' }, k), h('td', { dataset: { key: k } }, v))))),
    h('h3', {}, `Stats (${stats.length})`),
    stats.length
      ? h('table', { class: 'data', dataset: { table: 'stats' } }, h('tbody', {}, stats.map(([k, v]) =>
        h('tr', {}, h('th', { scope: 'row', class: 'mono' }, k), h('td', { class: 'mono', dataset: { stat: k } }, statValue(k, v))))))
      : h('p', { class: 'empty' }, 'No stats.'),
    flows.length ? [h('h3', {}, `Flows (${flows.length})`), h('ul', { class: 'tv-flows' }, flows)] : null);
}

/** The aggregate of a box selection (the `select` endpoint's answer). */
export function boxDetails(result, t0, t1) {
  const rows = result.by_name.map((r) => ({ name: r.name, count: r.count, total_ns: r.total_ns, avg_ns: r.avg_ns }));
  return h('div', { class: 'tv-box' },
    h('h2', {}, `${fmtInt(result.count)} events selected`),
    h('p', {}, `From ${fmtNs(t0)} to ${fmtNs(t1)} · ${fmtInt(result.distinct_names)} names · total ${fmtNs(result.total_ns)}`),
    result.distinct_names > rows.length ? note(`Showing the ${rows.length} names with the most time.`) : null,
    dataTable({
      name: 'selection', caption: 'Selected events by name', filterable: true, maxRows: 100,
      sort: { key: 'total_ns', desc: true },
      columns: [
        { key: 'name', label: 'Name', pin: true, wide: true },
        { key: 'count', label: 'Count', numeric: true, format: fmtInt },
        { key: 'total_ns', label: 'Total', numeric: true, format: fmtNs },
        { key: 'avg_ns', label: 'Average', numeric: true, format: fmtNs },
      ],
      rows,
    }));
}

export function markDetails(mark) {
  return h('div', { class: 'tv-mark' },
    h('h2', {}, 'Timing'),
    h('p', {}, 'Marked range: ', h('strong', { dataset: { field: 'mark_duration', value: mark.t1 - mark.t0 } }, fmtNs(mark.t1 - mark.t0)),
      ` (from ${fmtNs(mark.t0)} to ${fmtNs(mark.t1)})`));
}

/** The value of a counter at a time (a click on a counter track). */
export function counterDetails(cv, format, origin) {
  return h('div', { class: 'tv-counter' },
    h('h2', {}, cv.counter.name),
    h('table', { class: 'data', dataset: { table: 'counter' } }, h('tbody', {},
      h('tr', {}, h('th', { scope: 'row' }, 'Value'),
        h('td', { dataset: { field: 'counter_value', value: cv.value ?? '' } }, cv.value === null ? 'no value here' : format(cv.counter, cv.value))),
      h('tr', {}, h('th', { scope: 'row' }, 'At'), h('td', {}, fmtNs(cv.t - origin))),
      cv.value === null ? null : h('tr', {}, h('th', { scope: 'row' }, 'Held from'),
        h('td', {}, `${fmtNs(cv.from - origin)} to ${fmtNs(cv.to - origin)} (largest value in this interval)`)),
      h('tr', {}, h('th', { scope: 'row' }, 'Track maximum'), h('td', {}, format(cv.counter, cv.counter.max))))));
}

const SHORTCUTS = [
  ['W / S', 'zoom in / out at the pointer (Shift: faster)'],
  ['A / D', 'pan left / right (Shift: faster)'],
  ['Wheel', 'scroll the tracks (or zoom, if chosen in the toolbar)'],
  ['Ctrl/Cmd + wheel, pinch', 'zoom at the pointer'],
  ['Shift + wheel, horizontal swipe', 'pan'],
  ['1 2 3 4', 'mouse mode: select / pan / zoom / timing'],
  ['Drag on the time axis', 'mark a time range'],
  ['M', 'mark the selected event'],
  ['F', 'fit the view to the mark, the selected event or the box'],
  ['Esc', 'clear the selection and the mark'],
  ['/', 'search events; Enter / Shift+Enter: next / previous match'],
  ['?', 'this list'],
];

/** The trace viewer's shortcuts, as a modal dialog (the shell's own list lacks them). */
export function shortcutsDialog() {
  const dialog = h('dialog', { class: 'tv-shortcuts', 'aria-label': 'Trace viewer shortcuts' },
    h('h2', {}, 'Trace viewer shortcuts'),
    h('dl', { class: 'kv' }, SHORTCUTS.map(([k, v]) => [h('dt', {}, h('kbd', {}, k)), h('dd', {}, v)])),
    h('p', { class: 'muted' }, 'Keys work whenever this page has focus, except while typing in a field. '
      + 'Digits do not switch tools here; use the tool list.'),
    h('form', { method: 'dialog' }, h('button', { type: 'submit' }, 'Close')));
  return dialog;
}

export function keysHelp() {
  const k = (text) => h('kbd', {}, text);
  return h('p', { class: 'tv-keys' },
    k('W'), k('S'), ' or Ctrl+wheel: zoom · ', k('A'), k('D'), ' or Shift+wheel: pan · wheel: scroll tracks · ',
    'drag on the time axis: mark a range · ', k('1'), '–', k('4'), ': select / pan / zoom / timing · ',
    k('M'), ': mark the selected event · ', k('F'), ': fit · ', k('Esc'), ': clear · ', k('/'), ': search · ', k('?'), ': all shortcuts');
}
