// @ts-check
// Op stats: four pies (host/device x op/op type), a sortable and filterable table of every op,
// include/exclude idle (the tool's include_idle option, drawn by the shell), export as CSV.
import { pieChart } from '../charts.js';
import { dataTable } from '../table.js';
import { card, code, fmtNum, fmtPct, fmtUs, h, num, typeName } from '../util.js';

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
    { key: 'rank', label: '#', numeric: true },
    { key: 'side', label: 'Host/device' },
    { key: 'type', label: 'Op type', format: (v) => typeName(v) },
    { key: 'name', label: 'Operation', format: (v) => code(v) },
    { key: 'occurrences', label: 'Occurrences', numeric: true },
    { key: 'total_time_us', label: 'Total time', numeric: true, format: fmtUs },
    { key: 'avg_time_us', label: 'Avg. time', numeric: true, format: fmtUs },
    { key: 'self_time_us', label: 'Total self time', numeric: true, format: fmtUs },
    { key: 'avg_self_time_us', label: 'Avg. self time', numeric: true, format: fmtUs },
    { key: 'self_time_percent', label: 'Self time (%)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'cumulative_self_time_percent', label: 'Cumulative (%)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'eager_percent', label: 'Eager (%)', numeric: true, format: (v) => fmtPct(v) },
  ];
  if (new Set(rows.map((r) => r.side)).size < 2) columns.splice(1, 1); // one side: no column
  if (rows.some((r) => r.flop_rate_gflops !== null && r.flop_rate_gflops !== undefined)) {
    columns.push({ key: 'flop_rate_gflops', label: 'GFLOP/s', numeric: true, format: fmtNum });
  }
  return dataTable({ columns, rows, name: 'op_stats', caption: 'Ops', filterable: true,
    placeholder: 'Filter by op name, type or side… (/)', sort: { key: 'rank', desc: false }, filterValue });
}

export async function render(root, data, ctx) {
  const exportLink = h('a', { class: 'button', href: ctx.csvUrl(), download: '', id: 'export-csv' }, 'Export as CSV');
  root.append(
    h('div', { class: 'toolbar' }, exportLink,
      h('span', { class: 'muted' }, 'Idle: host ', num(data.host_idle_us, fmtUs(data.host_idle_us), 'host_idle_us'),
        ', device ', num(data.device_idle_us, fmtUs(data.device_idle_us), 'device_idle_us'),
        data.include_idle ? ' (shown as IDLE rows)' : ' (not included)')),
    pies(data),
    card(['Ops ', h('span', { class: 'muted' }, '(', num((data.rows || []).length, String((data.rows || []).length), 'rows.length'), ')')],
      table(data, (ctx.params && ctx.params.filter) || '')),
  );
}
