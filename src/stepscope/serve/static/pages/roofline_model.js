// @ts-check
// Roofline model: each HLO op at its FLOPs per byte against the device's compute and memory
// roofs (log-log), per step or the whole run, and the table of points. Fields:
// docs/tools/roofline_model.md.
import { PALETTE, chartSvg } from '../charts.js';
import { dataTable } from '../table.js';
import { field, unitsAt } from '../units.js';
import { card, fmtInt, fmtNum, fmtUnit, fmtUs, h, svg } from '../util.js';
import { ensureStyles, tile } from './_gpu_tools.js';

const W = 640;
const H = 360;
const M = { left: 104, right: 20, top: 16, bottom: 46 };

/** "1.00 PFLOP/s" -> "1 PFLOP/s": a power of ten needs no decimals. */
const roundLabel = (text) => text.replace(/\.0+ /, ' ');

function plot(points, device) {
  const peakF = device.peak_gflops_per_s || 0;
  const peakB = device.peak_memory_gb_per_s || 0;
  const usable = points.filter((p) => p.operational_intensity > 0 && p.flop_rate_gflops > 0);
  const xs = usable.map((p) => p.operational_intensity).concat(peakF && peakB ? [peakF / peakB] : []);
  const ys = usable.map((p) => p.flop_rate_gflops).concat(peakF ? [peakF] : []);
  if (!xs.length) return h('p', { class: 'muted' }, 'No op has both FLOPs and bytes to place.');
  const x0 = 10 ** Math.floor(Math.log10(Math.min(...xs)) - 0.5);
  const x1 = 10 ** Math.ceil(Math.log10(Math.max(...xs)) + 0.5);
  const y0 = 10 ** Math.floor(Math.log10(Math.min(...ys)) - 0.5);
  const y1 = 10 ** Math.ceil(Math.log10(Math.max(...ys)) + 0.3);
  const sx = (v) => M.left + ((Math.log10(v) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0))) * (W - M.left - M.right);
  const sy = (v) => H - M.bottom - ((Math.log10(v) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0))) * (H - M.top - M.bottom);
  const parts = [];
  for (let e = Math.log10(x0); e <= Math.log10(x1); e += 1) {
    parts.push(svg('text', { x: sx(10 ** e), y: H - M.bottom + 16, 'text-anchor': 'middle', class: 'tick' }, fmtNum(10 ** e)));
  }
  for (let e = Math.log10(y0); e <= Math.log10(y1); e += 1) {
    parts.push(svg('text', { x: M.left - 6, y: sy(10 ** e) + 4, 'text-anchor': 'end', class: 'tick' }, roundLabel(fmtUnit(10 ** e, 'GFLOP/s'))));
  }
  if (peakF && peakB) {
    const ridge = peakF / peakB;
    const start = Math.max(x0, y0 / peakB);
    parts.push(svg('polyline', { class: 'roof', fill: 'none', 'stroke-width': 2, // (colour: the theme's text)
      points: `${sx(start)},${sy(start * peakB)} ${sx(ridge)},${sy(peakF)} ${sx(x1)},${sy(peakF)}` }));
  }
  usable.forEach((p, i) => {
    const program = p.operation === 'Program'; // the whole program: the theme's text colour
    parts.push(svg('circle', { class: program ? 'point program' : 'point', cx: sx(p.operational_intensity), cy: sy(p.flop_rate_gflops), r: program ? 6 : 4,
      fill: program ? null : PALETTE[i % PALETTE.length], dataset: { operation: p.operation } },
    svg('title', {}, `${p.operation}: ${fmtNum(p.operational_intensity)} FLOP/byte, ${fmtNum(p.flop_rate_gflops)} GFLOP/s, ${fmtUs(p.time_us)}`)));
  });
  parts.push(svg('text', { x: (W + M.left) / 2, y: H - 8, 'text-anchor': 'middle' }, 'Operational intensity (FLOP/byte)'));
  parts.push(svg('text', { x: 14, y: H / 2, transform: `rotate(-90 14 ${H / 2})`, 'text-anchor': 'middle' }, 'FLOP rate'));
  const chart = chartSvg(W, H, { role: 'img', 'aria-label': 'Roofline: ops by FLOP per byte and GFLOP/s' });
  chart.append(...parts);
  return h('figure', { dataset: { chart: 'roofline' } }, chart);
}

export async function render(root, data) {
  await ensureStyles();
  const d = data.device || {};
  const steps = data.steps || ['Total'];
  let step = 'Total';
  const chart = h('div');
  const columns = [
    ...((data.hosts || []).length > 1 ? [{ key: 'host', label: 'Host', pin: true }] : []),
    { key: 'operation', label: 'Operation', mono: true, pin: true, wide: true },
    { key: 'category', label: 'Category' },
    { key: 'time_us', label: 'Time', numeric: true },
    { key: 'operational_intensity', label: 'FLOP/byte', numeric: true },
    { key: 'flop_rate_gflops', label: 'FLOP rate', numeric: true },
    { key: 'attainable_gflops', label: 'Roof', numeric: true, title: 'the FLOP rate the roof allows at its intensity' },
    { key: 'roofline_efficiency_percent', label: 'Of roof', numeric: true },
    { key: 'bound_by', label: 'Bound by' },
  ];
  const rowsFor = () => (data.points || []).filter((p) => p.step === step);
  const table = dataTable({ columns, rows: rowsFor(), name: 'roofline_model', caption: 'Ops', filterable: true, units: unitsAt('roofline_model', 'points[]'),
    placeholder: 'Filter by op or category… (/)', sort: { key: 'time_us', desc: true } });
  const draw = () => { chart.replaceChildren(plot(rowsFor(), d)); table.setRows(rowsFor()); };
  const select = h('select', { 'aria-label': 'Step', onchange: (e) => { step = e.target.value; draw(); } },
    steps.map((s) => h('option', { value: s }, s === 'Total' ? 'Whole run' : `Step ${s}`)));
  draw();
  root.append(
    card('Device', h('div', { class: 'metric-row' },
      tile('Device', h('span', {}, d.device || '–')),
      tile('Peak compute', field('roofline_model', 'device.peak_gflops_per_s', d.peak_gflops_per_s)),
      tile('Peak memory bandwidth', field('roofline_model', 'device.peak_memory_gb_per_s', d.peak_memory_gb_per_s)),
      tile('FLOPs and bytes from', h('span', { class: 'cost-source' }, data.cost_source || '–')),
      tile('Ridge point', field('roofline_model', 'device.ridge_point_flops_per_byte', d.ridge_point_flops_per_byte)),
      tile('Peaks from', h('span', { class: 'peaks-source' }, d.source || '–')))),
    card(['Roofline ', select], chart,
      h('p', { class: 'muted' }, 'Ops left of the ridge point are limited by memory bandwidth, right of it by compute. Hover a point for its values.'),
      data.points_above_roof
        ? h('p', { class: 'muted above-roof' }, `${fmtInt(data.points_above_roof)} of the points sit above their roof: they moved more bytes per second than the memory can, so their data came from cache (or the peak bandwidth is understated).`)
        : null),
    card('Ops', table),
  );
}
