// Trace viewer details pane: one selected event (all stats, flow links), the aggregate of a
// box selection, the timing mark. Profile text only ever goes into text nodes.
import { dataTable } from '../table.js';
import { fmtInt, fmtNs, h, note } from '../util.js';

function statValue(key, value) {
  if (typeof value === 'number' && /(_ns|_ps)$/.test(key)) return `${fmtInt(value)} (${fmtNs(key.endsWith('_ps') ? value / 1000 : value)})`;
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : String(value);
  return String(value);
}

/** Details of one event (the `event` endpoint's answer); `go(brief)` jumps to another event. */
export function eventDetails(e, go) {
  const rows = [
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
        { key: 'name', label: 'Name' },
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

export function keysHelp() {
  const k = (text) => h('kbd', {}, text);
  return h('p', { class: 'tv-keys' },
    k('W'), k('S'), ' or wheel: zoom · ', k('A'), k('D'), ' or Shift+wheel: pan · drag on the time axis: mark a range · ',
    k('1'), '–', k('4'), ': select / pan / zoom / timing · ', k('M'), ': mark the selected event · ',
    k('F'), ': fit to selection · ', k('Esc'), ': clear · ', k('/'), ': search · wheel over track names: scroll');
}
