// @ts-check
// HLO op stats: device peaks, totals, and every HLO op with category, framework op, time,
// FLOPs, bytes and what bounds it. Fields: docs/tools/hlo_stats.md.
import { dataTable } from '../table.js';
import { card, code, fmtBytes, fmtInt, fmtNum, fmtPct, fmtUs, h, num } from '../util.js';
import { ensureStyles, exportCsv, tile } from './_gpu_tools.js';

export function deviceTiles(d) {
  return [
    tile('Device', h('span', {}, d.device || '–')),
    tile('Peak compute', num(d.peak_gflops_per_s, `${fmtNum(d.peak_gflops_per_s)} GFLOP/s`, 'device.peak_gflops_per_s')),
    tile('Peak memory bandwidth', num(d.peak_memory_gb_per_s, `${fmtNum(d.peak_memory_gb_per_s)} GB/s`, 'device.peak_memory_gb_per_s')),
    tile('Ridge point', num(d.ridge_point_flops_per_byte, `${fmtNum(d.ridge_point_flops_per_byte)} FLOP/byte`, 'device.ridge_point_flops_per_byte')),
    tile('Peaks from', h('span', {}, d.source || 'unknown')),
  ];
}

export async function render(root, data, ctx) {
  ensureStyles();
  const s = data.summary || {};
  const rows = data.rows || [];
  const columns = [
    { key: 'rank', label: '#', numeric: true },
    ...((s.hosts || []).length > 1 ? [{ key: 'host', label: 'Host' }] : []),
    { key: 'category', label: 'Category' },
    { key: 'hlo_op_name', label: 'HLO op', format: (v) => code(v) },
    { key: 'tf_op_name', label: 'Framework op', format: (v) => code(v) },
    { key: 'occurrences', label: 'Occurrences', numeric: true, format: fmtInt },
    { key: 'total_time_us', label: 'Total time', numeric: true, format: fmtUs },
    { key: 'avg_time_us', label: 'Avg time', numeric: true, format: fmtUs },
    { key: 'self_time_percent', label: 'Time (%)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'flop_rate_gflops', label: 'GFLOP/s', numeric: true, format: fmtNum },
    { key: 'memory_bw_gbps', label: 'GB/s', numeric: true, format: fmtNum },
    { key: 'operational_intensity', label: 'FLOP/byte', numeric: true, format: fmtNum },
    { key: 'library_gflops', label: 'cuBLAS/cuDNN GFLOP (est.)', numeric: true, format: fmtNum },
    { key: 'bound_by', label: 'Bound by' },
    { key: 'expression', label: 'Expression', format: (v) => code(v) },
  ];
  root.append(
    h('div', { class: 'toolbar' }, exportCsv(ctx)),
    card('Device', h('div', { class: 'metric-row' }, deviceTiles(data.device || {}))),
    card('Totals', h('div', { class: 'metric-row' },
      tile('HLO ops', num(s.hlo_ops, fmtInt(s.hlo_ops), 'summary.hlo_ops')),
      tile('Device time in HLO ops', num(s.total_time_us, fmtUs(s.total_time_us), 'summary.total_time_us')),
      tile('FLOPs', num(s.total_gflops, `${fmtNum(s.total_gflops)} GFLOP`, 'summary.total_gflops')),
      tile('Bytes accessed', num(s.total_bytes_accessed, fmtBytes(s.total_bytes_accessed), 'summary.total_bytes_accessed')),
      tile('Device idle', num(s.device_idle_us, fmtUs(s.device_idle_us), 'summary.device_idle_us')))),
    card('HLO ops', dataTable({ columns, rows, name: 'hlo_stats', caption: 'HLO ops', filterable: true,
      placeholder: 'Filter by HLO op, framework op or category… (/)', sort: { key: 'total_time_us', desc: true } })),
  );
}
