// @ts-check
// Memory profile: per memory (allocator) a summary, the usage/fragmentation timeline with a
// hover panel, and the allocations live at the peak. Fields: docs/tools/memory_profile.md.
import { chartSvg, niceByteTicks, niceTicks } from '../charts.js';
import { dataTable } from '../table.js';
import { card, fmtBytes, fmtTick, fmtInt, fmtMs, fmtPct, h, note, num, svg } from '../util.js';
import { ensureStyles, exportCsv, tile } from './_gpu_tools.js';

const W = 960;
const H = 280;
const M = { top: 20, right: 56, bottom: 34, left: 72 };
const COLORS = { in_use: '#1a73e8', heap: '#12b5cb', fragmentation: '#e8710a' };

function summaryCard(mem, i) {
  const s = mem.summary;
  const f = (key) => `memories.${i}.summary.${key}`;
  return card('Memory profile summary', h('div', { class: 'metric-row' },
    tile('#Allocations', num(s.allocation_count, fmtInt(s.allocation_count), f('allocation_count'))),
    tile('#Deallocations', num(s.deallocation_count, fmtInt(s.deallocation_count), f('deallocation_count'))),
    tile('Memory capacity', num(s.memory_capacity_bytes, fmtBytes(s.memory_capacity_bytes), f('memory_capacity_bytes'))),
    tile('Peak heap usage (lifetime)', num(s.peak_heap_usage_lifetime_bytes, fmtBytes(s.peak_heap_usage_lifetime_bytes), f('peak_heap_usage_lifetime_bytes')))),
  h('h3', {}, 'At the peak of this profile'),
  h('div', { class: 'metric-row' },
    tile('Peak memory usage', num(s.peak_usage_bytes, fmtBytes(s.peak_usage_bytes), f('peak_usage_bytes'))),
    tile('Timestamp', num(s.peak_time_ms, fmtMs(s.peak_time_ms), f('peak_time_ms'))),
    tile('Step', num(s.peak_step, String(s.peak_step), f('peak_step'))),
    tile('Stack reserved', num(s.stack_reserved_bytes, fmtBytes(s.stack_reserved_bytes), f('stack_reserved_bytes'))),
    tile('Heap allocated', num(s.heap_allocated_bytes, fmtBytes(s.heap_allocated_bytes), f('heap_allocated_bytes'))),
    tile('Free memory', num(s.free_memory_bytes, fmtBytes(s.free_memory_bytes), f('free_memory_bytes'))),
    tile('Fragmentation', num(s.fragmentation_pct, fmtPct(s.fragmentation_pct), f('fragmentation_pct')))));
}

// PyTorch's caching allocator, in its own terms: allocated (live tensors) and reserved.
function torchSummaryCard(mem, i) {
  const s = mem.summary;
  const f = (key) => `memories.${i}.summary.${key}`;
  const bytes = (key) => (s[key] === null || s[key] === undefined
    ? h('span', { title: 'not in the trace' }, '–') : num(s[key], fmtBytes(s[key]), f(key)));
  return card('Memory summary (PyTorch caching allocator)', h('div', { class: 'metric-row' },
    tile('Allocations', num(s.allocation_count, fmtInt(s.allocation_count), f('allocation_count'))),
    tile('Frees', num(s.free_count, fmtInt(s.free_count), f('free_count'))),
    tile('Device memory', bytes('device_memory_bytes')),
    tile('Peak allocated', bytes('peak_allocated_bytes')),
    tile('Peak allocated at', num(s.peak_allocated_time_ms, fmtMs(s.peak_allocated_time_ms), f('peak_allocated_time_ms'))),
    tile('Peak reserved', bytes('peak_reserved_bytes')),
    tile('Peak reserved at', num(s.peak_reserved_time_ms, fmtMs(s.peak_reserved_time_ms), f('peak_reserved_time_ms'))),
    tile('Step of the peak', num(s.peak_step, String(s.peak_step), f('peak_step')))),
  h('p', { class: 'muted' }, 'Allocated: bytes held by live tensors. Reserved: bytes the caching allocator holds from the device (allocated plus its cache of free blocks); it is what the device sees as used.'));
}

function nearest(times, x) {
  let lo = 0;
  let hi = times.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo > 0 && Math.abs(times[lo - 1] - x) <= Math.abs(times[lo] - x) ? lo - 1 : lo;
}

function hoverText(t, k, torch) {
  const items = torch ? [
    ['Time', fmtMs(t.time_ms[k])], ['Event', t.activity[k]], ['Op', t.op_name[k] || '–'],
    ['Step', String(t.step[k])], ['Size', fmtBytes(t.bytes[k])],
    ['Allocated', fmtBytes(t.allocated_bytes[k])], ['Reserved', fmtBytes(t.reserved_bytes[k])],
  ] : [
    ['Time', fmtMs(t.time_ms[k])], ['Event', t.activity[k]], ['Op', t.op_name[k] || '–'],
    ['Step', String(t.step[k])], ['Requested', fmtBytes(t.requested_bytes[k])],
    ['Allocated', fmtBytes(t.allocation_bytes[k])], ['Memory in use', fmtBytes(t.in_use_bytes[k])],
    ['Fragmentation', fmtPct(t.fragmentation_pct[k])], ['Region', t.region_type[k] || '–'],
    ['Data type', t.data_type[k] || '–'], ['Shape', t.shape[k] || '–'],
  ];
  return h('dl', { dataset: { index: String(k) } }, items.map(([a, b]) => [h('dt', {}, a), h('dd', {}, b)]));
}

// Both timeline charts: time on x from the first to the last event, bytes on y up to a nice tick.
function axes(times, bytes) {
  const x0 = times[0];
  const x1 = times[times.length - 1];
  const ticks = niceByteTicks(Math.max(1, ...bytes));
  const top = ticks[ticks.length - 1];
  const sx = (v) => M.left + (W - M.left - M.right) * (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5);
  const sy = (v) => M.top + (H - M.top - M.bottom) * (1 - v / top);
  return { x0, x1, ticks, sx, sy };
}

// An allocator's totals hold until its next event: a step function (never a ramp between
// events), as the path `M x0 y0 H x1 V y1 H x2 ...`.
function stepPath(times, values, sx, sy) {
  return values.map((y, i) => (i ? `H${sx(times[i]).toFixed(1)} V${sy(y).toFixed(1)}` : `M${sx(times[0]).toFixed(1)} ${sy(y).toFixed(1)}`)).join(' ');
}

// The same, closed down to the x axis: the area under a series.
function stepArea(times, values, sx, sy) {
  return `${stepPath(times, values, sx, sy)} V${sy(0).toFixed(1)} H${sx(times[0]).toFixed(1)} Z`;
}

// The grid and y labels (bytes), and one set of time ticks along the x axis.
function frame(root, times, ticks, sx, sy) {
  for (const v of ticks) {
    root.append(svg('line', { x1: M.left, x2: W - M.right, y1: sy(v), y2: sy(v), class: 'grid' }),
      svg('text', { x: M.left - 6, y: sy(v) + 4, 'text-anchor': 'end', class: 'axis' }, fmtBytes(v)));
  }
  const x0 = times[0];
  const span = times[times.length - 1] - x0;
  const offsets = span > 0 ? niceTicks(span, 6).filter((d) => d <= span) : [0];
  const step = offsets.length > 1 ? offsets[1] - offsets[0] : Math.max(span, 1e-6);
  for (const d of offsets) {
    const v = x0 + d;
    root.append(svg('line', { x1: sx(v), x2: sx(v), y1: H - M.bottom, y2: H - M.bottom + 4, class: 'grid' }),
      svg('text', { x: sx(v), y: H - M.bottom + 16, 'text-anchor': 'middle', class: 'axis x-tick' }, fmtTick(v * 1e6, step * 1e6)));
  }
  root.append(svg('text', { x: (W + M.left - M.right) / 2, y: H - 4, 'text-anchor': 'middle', class: 'axis' }, 'Time since the trace began'));
}

function timelineChart(mem) {
  if (mem.terms === 'pytorch') return torchTimelineChart(mem);
  const t = mem.timeline;
  const n = t.time_ms.length;
  if (!n) return note('No allocator events.');
  const { x0, x1, ticks, sx, sy } = axes(t.time_ms, t.in_use_bytes);
  const sf = (p) => M.top + (H - M.top - M.bottom) * (1 - p / 100);
  const root = chartSvg(W, H, { class: 'mem-chart', role: 'img', tabindex: '0',
    'aria-label': 'Memory in use, heap and fragmentation over time (arrow keys move the cursor)' });
  frame(root, t.time_ms, ticks, sx, sy);
  for (const p of [0, 50, 100]) {
    root.append(svg('text', { x: W - M.right + 6, y: sf(p) + 4, class: 'axis' }, `${p}%`));
  }
  // Memory in use (stack + heap) is an area, so it shows where the heap line lies on its top
  // edge (no stack: the two are one line).
  root.append(
    svg('path', { d: stepArea(t.time_ms, t.in_use_bytes, sx, sy), class: 'area', fill: COLORS.in_use, 'fill-opacity': '0.18', stroke: 'none' }),
    svg('path', { d: stepPath(t.time_ms, t.in_use_bytes, sx, sy), class: 'line', stroke: COLORS.in_use, 'stroke-width': 3, fill: 'none', dataset: { series: 'in_use' } }),
    svg('path', { d: stepPath(t.time_ms, t.heap_bytes, sx, sy), class: 'line thin', stroke: COLORS.heap, fill: 'none', dataset: { series: 'heap' } }),
    svg('path', { d: stepPath(t.time_ms, t.fragmentation_pct, sx, sf), class: 'line thin', stroke: COLORS.fragmentation, fill: 'none', 'stroke-dasharray': '4 3', dataset: { series: 'fragmentation' } }));
  const s = mem.summary;
  root.append(svg('circle', { cx: sx(s.peak_time_ms), cy: sy(s.peak_usage_bytes), r: 4, class: 'peak', 'data-tip': `Peak ${fmtBytes(s.peak_usage_bytes)} at ${fmtMs(s.peak_time_ms)}` }));
  const panel = hoverCursor(root, t, sx, x0, x1, false);
  return timelineCard(mem, root, panel, [['Memory in use (stack + heap)', COLORS.in_use], ['Heap allocated', COLORS.heap], ['Fragmentation (right axis)', COLORS.fragmentation]]);
}

// PyTorch's caching allocator: reserved (allocated + its cache) and allocated, as steps.
function torchTimelineChart(mem) {
  const t = mem.timeline;
  const n = t.time_ms.length;
  if (!n) return note('No allocator events.');
  const { x0, x1, ticks, sx, sy } = axes(t.time_ms, t.reserved_bytes);
  const root = chartSvg(W, H, { class: 'mem-chart', role: 'img', tabindex: '0',
    'aria-label': 'Allocated and reserved memory over time (arrow keys move the cursor)' });
  frame(root, t.time_ms, ticks, sx, sy);
  root.append(
    svg('path', { d: stepPath(t.time_ms, t.reserved_bytes, sx, sy), class: 'line', stroke: COLORS.in_use, fill: 'none', dataset: { series: 'reserved' } }),
    svg('path', { d: stepPath(t.time_ms, t.allocated_bytes, sx, sy), class: 'line', stroke: COLORS.heap, fill: 'none', dataset: { series: 'allocated' } }));
  const s = mem.summary;
  root.append(svg('circle', { cx: sx(s.peak_reserved_time_ms), cy: sy(s.peak_reserved_bytes), r: 4, class: 'peak', 'data-tip': `Peak reserved ${fmtBytes(s.peak_reserved_bytes)} at ${fmtMs(s.peak_reserved_time_ms)}` }));
  const panel = hoverCursor(root, t, sx, x0, x1, true);
  return timelineCard(mem, root, panel, [['Reserved (allocated + cache)', COLORS.in_use], ['Allocated (live tensors)', COLORS.heap]]);
}

// The vertical cursor of both timeline charts: follows the mouse, or the arrow and page keys,
// to the nearest event, whose figures the returned panel shows.
function hoverCursor(root, t, sx, x0, x1, torch) {
  const guide = svg('line', { class: 'guide', y1: M.top, y2: H - M.bottom, x1: -10, x2: -10 });
  root.append(guide);
  const panel = h('div', { class: 'mem-hover', 'aria-live': 'polite' }, h('span', { class: 'muted' }, 'Hover the chart for the event at that time.'));
  const n = t.time_ms.length;
  let current = -1;
  const show = (k) => {
    current = Math.max(0, Math.min(n - 1, k));
    const x = sx(t.time_ms[current]);
    guide.setAttribute('x1', String(x));
    guide.setAttribute('x2', String(x));
    panel.replaceChildren(hoverText(t, current, torch));
  };
  root.addEventListener('mousemove', (e) => {
    const box = root.getBoundingClientRect();
    const vx = ((e.clientX - box.left) / box.width) * W;
    show(nearest(t.time_ms, x0 + ((vx - M.left) / (W - M.left - M.right)) * (x1 - x0)));
  });
  root.addEventListener('keydown', (e) => {
    const step = { ArrowRight: 1, ArrowLeft: -1, PageDown: 50, PageUp: -50 }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    show(current < 0 ? 0 : current + step);
  });
  return panel;
}

function timelineCard(mem, root, panel, series) {
  const legend = h('ul', { class: 'legend' }, series
    .map(([label, color]) => h('li', {}, h('span', { class: 'swatch', style: { background: color } }), label)));
  const sampled = mem.snapshot_count > mem.timeline_points
    ? h('p', { class: 'muted' }, `${fmtInt(mem.snapshot_count)} allocator events shown as ${fmtInt(mem.timeline_points)} points, each the largest of its span (the peak is kept).`)
    : null;
  return card('Memory timeline', h('figure', { class: 'chart-box' }, root, legend), panel, sampled);
}

function liveTable(mem) {
  if (mem.terms === 'pytorch') {
    const columns = [
      { key: 'op_name', label: 'Op name', mono: true, pin: true, wide: true },
      { key: 'allocation_bytes', label: 'Size', numeric: true, format: fmtBytes },
      { key: 'occurrences', label: 'Occurrences', numeric: true, format: fmtInt },
    ];
    return card('Memory breakdown at the peak of reserved memory', dataTable({ columns, rows: mem.live_at_peak, name: 'live_at_peak',
      caption: 'Allocations live at the peak', filterable: true, placeholder: 'Filter by op name… (/)',
      sort: { key: 'allocation_bytes', desc: true } }));
  }
  const columns = [
    { key: 'op_name', label: 'Op name', mono: true, pin: true, wide: true },
    { key: 'allocation_bytes', label: 'Allocation size', numeric: true, format: fmtBytes },
    { key: 'requested_bytes', label: 'Requested size', numeric: true, format: fmtBytes },
    { key: 'occurrences', label: 'Occurrences', numeric: true, format: fmtInt },
    { key: 'region_type', label: 'Region type' },
    { key: 'data_type', label: 'Data type' },
    { key: 'shape', label: 'Shape', mono: true, wide: true },
  ];
  return card('Memory breakdown at the peak', dataTable({ columns, rows: mem.live_at_peak, name: 'live_at_peak',
    caption: 'Allocations live at the peak', filterable: true, placeholder: 'Filter by op name… (/)',
    sort: { key: 'allocation_bytes', desc: true } }));
}

/** Several hosts: the peak across hosts per allocator kind, and every host's own peak. */
function podPeaks(data) {
  const peaks = data.peaks_across_hosts || [];
  const rows = data.host_peaks || [];
  if (new Set(rows.map((r) => r.host)).size < 2) return null;
  const peakColumns = [
    { key: 'allocator_kind', label: 'Allocator kind', mono: true, pin: true },
    { key: 'host', label: 'Host', pin: true },
    { key: 'memory_id', label: 'Memory ID' },
    { key: 'peak_bytes', label: 'Peak', numeric: true, format: fmtBytes },
    { key: 'peak_step', label: 'Step', numeric: true },
    { key: 'peak_time_ms', label: 'At', numeric: true, format: fmtMs },
    { key: 'median_peak_bytes', label: 'Median of the hosts', numeric: true, format: fmtBytes },
    { key: 'hosts', label: 'Hosts', numeric: true, format: fmtInt },
  ];
  const hostColumns = [
    { key: 'host', label: 'Host', pin: true },
    { key: 'memory_id', label: 'Memory ID' },
    { key: 'peak_bytes', label: 'Peak', numeric: true, format: fmtBytes },
    { key: 'peak_step', label: 'Step', numeric: true },
    { key: 'peak_time_ms', label: 'At', numeric: true, format: fmtMs },
  ];
  return card('Peak across hosts',
    h('p', { class: 'muted' }, 'Peak: stack + heap (TensorFlow) or reserved (PyTorch) memory. Allocators of one kind (every GPU_*_bfc) are compared across hosts.'),
    dataTable({ columns: peakColumns, rows: peaks, name: 'peaks_across_hosts', caption: 'Highest peak per allocator kind' }),
    dataTable({ columns: hostColumns, rows, name: 'host_peaks', caption: 'Peak of each host', filterable: true,
      placeholder: 'Filter by host…', sort: { key: 'peak_bytes', desc: true }, maxRows: 50 }));
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const memories = data.memories || [];
  if (!memories.length) {
    root.append(note('No allocator events (MemoryAllocation / MemoryDeallocation) in this profile.'));
    return;
  }
  const body = h('div', { class: 'memory-body' });
  const draw = (i) => {
    const mem = memories[i];
    const summary = mem.terms === 'pytorch' ? torchSummaryCard(mem, i) : summaryCard(mem, i);
    body.replaceChildren(summary, timelineChart(mem), liveTable(mem));
    body.dataset.memory = `${mem.host}/${mem.memory_id}`;
  };
  const select = h('select', { id: 'memory-select', 'aria-label': 'Memory',
    onchange: (e) => draw(Number(e.target.value)) },
  memories.map((m, i) => h('option', { value: String(i) }, `${m.memory_id} (${m.host})`)));
  root.append(h('div', { class: 'toolbar' }, h('label', { class: 'options' }, 'Memory ID ', select), exportCsv(ctx)));
  const peaks = podPeaks(data);
  if (peaks) root.append(peaks);
  root.append(body);
  draw(0);
}
