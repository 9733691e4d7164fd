// @ts-check
// GPU kernel stats: summary, pie of the kernels with the most time, sortable/filterable table.
// Fields: docs/tools/kernel_stats.md.
import { pieChart } from '../charts.js';
import { dataTable } from '../table.js';
import { field, unitsAt } from '../units.js';
import { card, fmtInt, fmtNum, fmtUs, h, num } from '../util.js';
import { ensureStyles, exportCsv, tile } from './_gpu_tools.js';

const yesNo = (v) => (v ? 'Yes' : 'No');

const f = (path, value) => field('kernel_stats', path, value);

function summary(s) {
  return card('Summary', h('div', { class: 'metric-row' },
    tile('Kernel launches', f('summary.kernel_count', s.kernel_count)),
    tile('Kernel/op pairs', f('summary.unique_kernel_op_pairs', s.unique_kernel_op_pairs)),
    tile('Total kernel time', f('summary.total_kernel_time_us', s.total_kernel_time_us)),
    tile('Time on TensorCores', f('summary.tensor_core_time_pct', s.tensor_core_time_pct)),
    tile('Time in TensorCore-eligible ops', f('summary.eligible_op_time_pct', s.eligible_op_time_pct)),
    tile('Eligible but not on TensorCores', f('summary.eligible_without_tensor_core_us', s.eligible_without_tensor_core_us))),
  s.rows_left_out ? h('p', { class: 'muted' }, `${fmtInt(s.rows_left_out)} more kernel/op pairs with less time are left out (top 1000 kept).`) : null);
}

// The kernel's name is pinned and gets the room the numbers leave; the numbers follow it, then
// the launch configuration and the op (text that may be read after scrolling sideways).
function table(rows) {
  const columns = [
    { key: 'rank', label: '#', numeric: true, pin: true },
    { key: 'kernel_name', label: 'Kernel name', mono: true, pin: true, wide: true },
    { key: 'occurrences', label: 'Occur\u00adrences', numeric: true },
    { key: 'total_duration_us', label: 'Total duration', numeric: true },
    { key: 'avg_duration_us', label: 'Avg duration', numeric: true },
    { key: 'min_duration_us', label: 'Min duration', numeric: true },
    { key: 'max_duration_us', label: 'Max duration', numeric: true },
    { key: 'occupancy_pct', label: 'Occupancy', numeric: true },
    { key: 'registers_per_thread', label: 'Registers / thread', numeric: true },
    { key: 'shared_memory_bytes', label: 'Shared memory', numeric: true },
    { key: 'op_tensor_core_eligible', label: 'Op TensorCore eligible', format: yesNo, filter: false },
    { key: 'uses_tensor_core', label: 'Kernel uses TensorCore', format: yesNo, filter: false },
    { key: 'op_name', label: 'Op name', mono: true, wide: true },
    { key: 'block_dim', label: 'Block dim' },
    { key: 'grid_dim', label: 'Grid dim' },
    { key: 'hlo_ops', label: 'HLO ops', mono: true, wide: true },
  ];
  return dataTable({ columns, rows, name: 'kernel_stats', caption: 'Kernels', filterable: true, units: unitsAt('kernel_stats', 'rows[]'),
    placeholder: 'Filter by kernel or op name… (/)', sort: { key: 'total_duration_us', desc: true } });
}

export async function render(root, data, ctx) {
  await ensureStyles();
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
