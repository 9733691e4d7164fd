// @ts-check
// HLO op stats: device peaks, totals, and every HLO op with category, framework op, time,
// FLOPs, bytes and what bounds it. Fields: docs/tools/hlo_stats.md.
import { dataTable } from '../table.js';
import { field, unitsAt } from '../units.js';
import { card, h } from '../util.js';
import { ensureStyles, exportCsv, tile } from './_gpu_tools.js';

/**
 * The device and its peaks (op_profile, hlo_stats and roofline_model share these fields).
 * @param {any} d the answer's `device`
 * @param {string} tool the page's tool (its declared units)
 */
export function deviceTiles(d, tool = 'hlo_stats') {
  return [
    tile('Device', h('span', {}, d.device || '–')),
    tile('Peak compute', field(tool, 'device.peak_gflops_per_s', d.peak_gflops_per_s)),
    tile('Peak memory bandwidth', field(tool, 'device.peak_memory_gb_per_s', d.peak_memory_gb_per_s)),
    tile('Ridge point', field(tool, 'device.ridge_point_flops_per_byte', d.ridge_point_flops_per_byte)),
    tile('Peaks from', h('span', {}, d.source || 'unknown')),
  ];
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const s = data.summary || {};
  const rows = data.rows || [];
  // The estimate of the vendor's GEMM/convolution library calls: a column only where such
  // calls ran, named after the vendor's libraries.
  const library = rows.some((r) => r.library_gflops > 0) ? (data.device || {}).math_libraries || 'library' : '';
  // (the header may wrap after each '/': "rocBLAS/hipBLASLt/MIOpen" is one long word)
  const libraryLabel = library.replaceAll('/', '/\u200b');
  // One line per op: the HLO op's name is pinned and the numbers follow it; the instruction
  // itself (`expression`, often hundreds of characters) is cut like any text, whole on a click.
  const columns = [
    { key: 'rank', label: '#', numeric: true, pin: true },
    ...((s.hosts || []).length > 1 ? [{ key: 'host', label: 'Host', pin: true }] : []),
    { key: 'hlo_op_name', label: 'HLO op', mono: true, pin: true, wide: true },
    { key: 'occurrences', label: 'Occur\u00adrences', numeric: true },
    { key: 'total_time_us', label: 'Total time', numeric: true },
    { key: 'avg_time_us', label: 'Avg time', numeric: true },
    { key: 'self_time_percent', label: 'Time (%)', numeric: true },
    { key: 'flop_rate_gflops', label: 'FLOP rate', numeric: true },
    { key: 'memory_bw_gbps', label: 'Memory bandwidth', numeric: true },
    { key: 'operational_intensity', label: 'FLOP/byte', numeric: true },
    ...(library ? [{ key: 'library_gflops', label: `${libraryLabel} FLOPs (est.)`, numeric: true,
      title: `stepscope's estimate of the FLOPs of ${library} custom calls, which XLA's cost model leaves at 0` }] : []),
    { key: 'category', label: 'Category' },
    { key: 'bound_by', label: 'Bound by' },
    { key: 'tf_op_name', label: 'Framework op', mono: true, wide: true },
    { key: 'expression', label: 'Expression', mono: true, wide: true },
  ];
  root.append(
    h('div', { class: 'toolbar' }, exportCsv(ctx)),
    card('Device', h('div', { class: 'metric-row' }, deviceTiles(data.device || {}))),
    card('Totals', h('div', { class: 'metric-row' },
      tile('HLO ops', field('hlo_stats', 'summary.hlo_ops', s.hlo_ops)),
      tile('Device time in HLO ops', field('hlo_stats', 'summary.total_time_us', s.total_time_us)),
      tile('FLOPs', field('hlo_stats', 'summary.total_gflops', s.total_gflops)),
      tile('Bytes accessed', field('hlo_stats', 'summary.total_bytes_accessed', s.total_bytes_accessed)),
      tile('Device idle', field('hlo_stats', 'summary.device_idle_us', s.device_idle_us)))),
    card('HLO ops', dataTable({ columns, rows, name: 'hlo_stats', caption: 'HLO ops', filterable: true, units: unitsAt('hlo_stats', 'rows[]'),
      placeholder: 'Filter by HLO op, framework op or category… (/)', sort: { key: 'total_time_us', desc: true } })),
  );
}
