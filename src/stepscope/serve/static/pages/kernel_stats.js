// @ts-check
// GPU kernel stats: summary, pie of the kernels with the most time, sortable/filterable table.
// Fields: docs/tools/kernel_stats.md.
import { pieChart } from '../charts.js';
import { dataTable } from '../table.js';
import { card, code, fmtInt, fmtNum, fmtPct, fmtUs, h, num } from '../util.js';
import { ensureStyles, exportCsv, tile } from './_gpu_tools.js';

const yesNo = (v) => (v ? 'Yes' : 'No');

function summary(s) {
  return card('Summary', h('div', { class: 'metric-row' },
    tile('Kernel launches', num(s.kernel_count, fmtInt(s.kernel_count), 'summary.kernel_count')),
    tile('Kernel/op pairs', num(s.unique_kernel_op_pairs, fmtInt(s.unique_kernel_op_pairs), 'summary.unique_kernel_op_pairs')),
    tile('Total kernel time', num(s.total_kernel_time_us, fmtUs(s.total_kernel_time_us), 'summary.total_kernel_time_us')),
    tile('Time on TensorCores', num(s.tensor_core_time_pct, fmtPct(s.tensor_core_time_pct), 'summary.tensor_core_time_pct')),
    tile('Time in TensorCore-eligible ops', num(s.eligible_op_time_pct, fmtPct(s.eligible_op_time_pct), 'summary.eligible_op_time_pct')),
    tile('Eligible but not on TensorCores', num(s.eligible_without_tensor_core_us, fmtUs(s.eligible_without_tensor_core_us), 'summary.eligible_without_tensor_core_us'))),
  s.rows_left_out ? h('p', { class: 'muted' }, `${fmtInt(s.rows_left_out)} more kernel/op pairs with less time are left out (top 1000 kept).`) : null);
}

function table(rows) {
  const columns = [
    { key: 'rank', label: '#', numeric: true },
    { key: 'kernel_name', label: 'Kernel name', format: (v) => code(v) },
    { key: 'registers_per_thread', label: 'Registers / thread', numeric: true },
    { key: 'shared_memory_bytes', label: 'Shared mem (bytes)', numeric: true, format: fmtInt },
    { key: 'block_dim', label: 'Block dim' },
    { key: 'grid_dim', label: 'Grid dim' },
    { key: 'op_tensor_core_eligible', label: 'Op TensorCore eligible', format: yesNo, filter: false },
    { key: 'uses_tensor_core', label: 'Kernel uses TensorCore', format: yesNo, filter: false },
    { key: 'op_name', label: 'Op name', format: (v) => code(v) },
    { key: 'hlo_ops', label: 'HLO ops', format: (v) => code(v) },
    { key: 'occurrences', label: 'Occurrences', numeric: true, format: fmtInt },
    { key: 'total_duration_us', label: 'Total duration', numeric: true, format: fmtUs },
    { key: 'avg_duration_us', label: 'Avg duration', numeric: true, format: fmtUs },
    { key: 'min_duration_us', label: 'Min duration', numeric: true, format: fmtUs },
    { key: 'max_duration_us', label: 'Max duration', numeric: true, format: fmtUs },
    { key: 'occupancy_pct', label: 'Occupancy', numeric: true, format: (v) => (v === null || v === undefined ? '–' : fmtPct(v)) },
  ];
  return dataTable({ columns, rows, name: 'kernel_stats', caption: 'Kernels', filterable: true,
    placeholder: 'Filter by kernel or op name… (/)', sort: { key: 'total_duration_us', desc: true } });
}

export async function render(root, data, ctx) {
  ensureStyles();
  const rows = data.rows || [];
  const slices = (data.top_kernels || []).filter((k) => k.kernel_name !== 'Other')
    .map((k) => ({ label: k.kernel_name, value: k.total_duration_us }));
  const other = (data.top_kernels || []).find((k) => k.kernel_name === 'Other');
  if (other) slices.push({ label: 'Other', value: other.total_duration_us });
  const pie = pieChart({ slices, title: 'Kernels with the most total time', format: fmtUs, maxSlices: 11 });
  pie.dataset.pie = 'top_kernels';
  root.append(
    h('div', { class: 'toolbar' }, exportCsv(ctx),
      h('span', { class: 'muted' }, `Devices: ${(data.devices || []).join(', ') || '–'}`)),
    summary(data.summary || {}),
    card('Kernel time', pie),
    card(['Kernels ', h('span', { class: 'muted' }, '(', num(rows.length, fmtNum(rows.length), 'rows.length'), ' kernel/op pairs)')], table(rows)),
  );
}
