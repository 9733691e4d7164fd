// @ts-check
// Op stats: four pies (host/device x op/op type), a sortable and filterable table of every op,
// include/exclude idle (the tool's include_idle option, drawn by the shell), export as CSV.
import { pieChart } from '../charts.js';
import { dataTable } from '../table.js';
import { field, unitsAt } from '../units.js';
import { card, fmtUs, h, num } from '../util.js';

const PIES = [
  ['host_op_type', 'Host: time per op type'],
  ['host_op', 'Host: time per op'],
  ['device_op_type', 'Device: time per op type'],
  ['device_op', 'Device: time per op'],
];

function pies(data) {
  const charts = data.pie_charts || {};
  return card('Self time breakdown', h('div', { class: 'pie-grid' }, PIES.map(([key, title]) => {
    const slices = (charts[key] || []).map((s) => ({ label: s.label, value: s.self_time_us }));
    const side = key.startsWith('host') ? 'host' : 'device';
    const figure = pieChart({ slices, title, format: fmtUs, empty: `No ${side} ops in this profile.` });
    figure.dataset.pie = key;
    return figure;
  })));
}

function table(data, filterValue) {
  const rows = data.rows || [];
  const columns = [
    { key: 'rank', label: '#', numeric: true, pin: true },
    { key: 'side', label: 'Host/\u200bdevice', pin: true },
    { key: 'type', label: 'Op type', pin: true, wide: true },
    { key: 'name', label: 'Operation', mono: true, pin: true, wide: true },
    { key: 'occurrences', label: 'Occur\u00adrences', numeric: true },
    { key: 'total_time_us', label: 'Total time', numeric: true },
    { key: 'avg_time_us', label: 'Avg. time', numeric: true },
    { key: 'self_time_us', label: 'Total self time', numeric: true },
    { key: 'avg_self_time_us', label: 'Avg. self time', numeric: true },
    { key: 'self_time_percent', label: 'Self time (%)', numeric: true },
    { key: 'cumulative_self_time_percent', label: 'Cumu\u00adlative (%)', numeric: true },
    { key: 'eager_percent', label: 'Eager (%)', numeric: true },
  ];
  // Columns that would say nothing for this run are left out: one side, no eager execution
  // (only TensorFlow runs ops eagerly), no FLOP counts in the trace.
  const drop = new Set();
  if (new Set(rows.map((r) => r.side)).size < 2) drop.add('side');
  if (!rows.some((r) => r.eager_percent > 0)) drop.add('eager_percent');
  for (let i = columns.length - 1; i >= 0; i -= 1) if (drop.has(columns[i].key)) columns.splice(i, 1);
  if (rows.some((r) => r.flop_rate_gflops !== null && r.flop_rate_gflops !== undefined)) {
    columns.push({ key: 'flop_rate_gflops', label: 'FLOP rate', numeric: true });
  }
  return dataTable({ columns, rows, name: 'op_stats', caption: 'Ops', filterable: true, units: unitsAt('op_stats', 'rows[]'),
    placeholder: 'Filter by op name, type or side… (/)', sort: { key: 'rank', desc: false }, filterValue });
}

export async function render(root, data, ctx) {
  const exportLink = h('a', { class: 'button', href: ctx.csvUrl(), download: '', id: 'export-csv' }, 'Export as CSV');
  root.append(
    h('div', { class: 'toolbar' }, exportLink,
      h('span', { class: 'muted' }, 'Idle: host ', field('op_stats', 'host_idle_us', data.host_idle_us),
        ', device ', field('op_stats', 'device_idle_us', data.device_idle_us),
        data.include_idle ? ' (shown as IDLE rows)' : ' (not included)')),
    pies(data),
    card(['Ops ', h('span', { class: 'muted' }, '(', num((data.rows || []).length, String((data.rows || []).length), 'rows.length'), ')')],
      table(data, (ctx.params && ctx.params.filter) || '')),
  );
}
