// @ts-check
// Small SVG charts: stacked bars, pies, lines. Drawn in a fixed coordinate system (viewBox)
// and scaled by CSS, so they need no layout measurement and render in one pass. Their text is
// one size on screen whatever the chart's width (`chartSvg`).
import { h, svg } from './util.js';

/** The size of every chart's text on screen, in CSS pixels (the page's small text). */
export const CHART_TEXT_PX = 12;

// One observer for every chart: a chart drawn in a viewBox W units wide and shown C pixels
// wide scales its text by C / W, so its font size is set to CHART_TEXT_PX * W / C units: the
// roofline (640 units wide, 1,000 px on screen) and Compare's charts (960 units, 400 px) then
// read alike.
const sized = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const el = /** @type {SVGSVGElement} */ (entry.target);
    if (!el.isConnected) { sized.unobserve(el); continue; } // the page moved on
    const units = el.viewBox.baseVal ? el.viewBox.baseVal.width : 0;
    const shown = entry.contentRect.width;
    if (units > 0 && shown > 0) el.style.fontSize = `${((CHART_TEXT_PX * units) / shown).toFixed(2)}px`;
  }
});

/**
 * The root of a chart: an SVG drawn in a W x H viewBox, scaled to its box's width, its text
 * kept at CHART_TEXT_PX on screen. Text inside sets no size of its own (relative sizes only).
 * @param {number} W
 * @param {number} H
 * @param {Record<string, unknown>} [attrs] more attributes (class: added to `chart`)
 * @returns {SVGSVGElement}
 */
export function chartSvg(W, H, attrs = {}) {
  const { class: extra, ...rest } = attrs;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: extra ? `chart ${extra}` : 'chart', ...rest });
  sized.observe(root);
  return root;
}

export const PALETTE = ['#1a73e8', '#e8710a', '#12b5cb', '#9334e6', '#f9ab00', '#e52592',
  '#7cb342', '#795548', '#5f6368', '#00897b', '#c5221f', '#3949ab'];

// ---- tooltip: one per document, follows elements carrying data-tip ----------------------------

/** @type {HTMLDivElement | null} */
let tooltip = null;
/** @param {MouseEvent} event */
function showTip(event) {
  const target = event.target instanceof Element
    ? /** @type {HTMLElement | SVGElement | null} */ (event.target.closest('[data-tip]'))
    : null;
  if (!target) return hideTip();
  if (!tooltip) {
    tooltip = h('div', { class: 'tooltip', role: 'tooltip' });
    document.body.append(tooltip);
  }
  tooltip.textContent = target.dataset.tip ?? '';
  tooltip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
  const y = Math.min(event.clientY + 14, window.innerHeight - tooltip.offsetHeight - 8);
  tooltip.style.left = `${Math.max(4, x)}px`;
  tooltip.style.top = `${Math.max(4, y)}px`;
  return undefined;
}
function hideTip() {
  if (tooltip) tooltip.hidden = true;
}
/**
 * @template {HTMLElement} E
 * @param {E} el
 * @returns {E}
 */
function withTips(el) {
  el.addEventListener('mousemove', showTip);
  el.addEventListener('mouseleave', hideTip);
  return el;
}

// ---- axes -----------------------------------------------------------------------------------

/**
 * About `count` round tick values covering [0, max].
 * @param {number} max
 * @param {number} [count]
 * @returns {number[]}
 */
export function niceTicks(max, count = 5) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  // 10 * mag >= raw always (mag is raw's power of ten), so find() never comes back empty
  const step = /** @type {number} */ ([1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw));
  const ticks = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/**
 * About `count` round tick values covering [0, max] bytes, round in binary units (256 MiB,
 * 512 MiB: the labels fmtBytes writes), not in decimal ones (190.7 MiB).
 * @param {number} max
 * @param {number} [count]
 */
export function niceByteTicks(max, count = 5) {
  let unit = 1;
  while (max / unit >= 1024 && unit < 1024 ** 5) unit *= 1024;
  return niceTicks(max / unit, count).map((v) => v * unit);
}

/**
 * Grid lines and labels of a y axis, drawn into `g`.
 * @param {SVGElement} g
 * @param {number[]} ticks
 * @param {(v: number) => number} scale
 * @param {number} left
 * @param {number} right
 * @param {string} unit
 */
function yAxis(g, ticks, scale, left, right, unit) {
  for (const t of ticks) {
    const y = scale(t);
    g.append(svg('line', { x1: left, x2: right, y1: y, y2: y, class: 'grid' }));
    g.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, `${t}`));
  }
  if (unit) g.append(svg('text', { x: left - 6, y: scale(ticks[ticks.length - 1]) - 10, 'text-anchor': 'end', class: 'axis unit' }, unit));
}

/**
 * @typedef {{label: string, color: string}} LegendItem
 */

/** @param {LegendItem[]} items */
function legend(items) {
  return h('ul', { class: 'legend' }, items.map((item) => h('li', { title: item.label },
    h('span', { class: 'swatch', style: { background: item.color } }), h('span', { class: 'legend-text' }, item.label))));
}

// ---- stacked bars -----------------------------------------------------------------------------

// A few bars this many times taller than all the others (a warm-up step of 3.7 s beside steps
// of 8 ms) are cut at the axis' top, which then fits the others: drawn to the tallest, they
// were one bar and a flat line (decision 550). In charts of 5 bars or more: at most a tenth of
// them, and one where a tenth is less than one (5 to 19 bars: one of 5 is a fifth).
const CUT_RATIO = 4;
const CUT_MIN_BARS = 5;

/**
 * The y axis' highest value for bars of these totals: the tallest, or, where the tallest few
 * (at most a tenth, and one of 5 to 19 bars) are CUT_RATIO times the next one or more, that
 * next one.
 * @param {number[]} totals
 * @returns {number}
 */
export function tallBarsCut(totals) {
  const sorted = totals.filter((v) => v > 0).sort((a, b) => b - a);
  const tallest = sorted.length ? sorted[0] : 0;
  if (totals.length < CUT_MIN_BARS) return tallest;
  let best = 0;
  let bestRatio = CUT_RATIO;
  for (let k = 1; k <= Math.max(1, Math.floor(totals.length / 10)) && k < sorted.length; k += 1) {
    const ratio = sorted[k - 1] / sorted[k];
    if (ratio >= bestRatio) { best = k; bestRatio = ratio; }
  }
  return best ? sorted[best] : tallest;
}

/**
 * series: [{key, label, color}] (bottom to top); bars: [{label, values: {key: number}, tip}].
 * Series that are zero in every bar are left out of the legend.
 * A bar with `mark` (a word, e.g. "trigger") is outlined and labelled above.
 * @param {{series: Array<{key: string, label: string, color: string}>, bars: Array<{label: string, values: Record<string, number>, tip?: string, mark?: string}>,
 *   unit?: string, height?: number, width?: number, title?: string, ariaLabel?: string}} options
 *   width: the viewBox's width, about the width the chart is shown at (960: a full-width
 *   card; a half-width card's 960 units shrank the margins under the 12 px text, the unit
 *   over the top tick's value)
 */
export function stackedBarChart({ series, bars, unit = 'ms', height = 280, width = 960, title = '', ariaLabel }) {
  const W = width;
  const H = height;
  const m = { top: 24, right: 12, bottom: 36, left: 56 };
  const totals = bars.map((b) => series.reduce((s, c) => s + (b.values[c.key] || 0), 0));
  const axisMax = tallBarsCut(totals);
  const ticks = niceTicks(axisMax);
  const top = ticks[ticks.length - 1];
  /** @param {number} v the height of v, cut at the axis' top (a cut bar ends there) */
  const sy = (v) => m.top + (H - m.top - m.bottom) * (1 - Math.min(v, top) / top);
  const plotW = W - m.left - m.right;
  const slot = plotW / Math.max(1, bars.length);
  const barW = Math.max(1, Math.min(48, slot * 0.8));
  const root = chartSvg(W, H, { role: 'img', 'aria-label': ariaLabel || title });
  const g = svg('g');
  root.append(g);
  yAxis(g, ticks, sy, m.left, W - m.right, unit);
  const labelEvery = Math.ceil(bars.length / 24);
  bars.forEach((bar, i) => {
    const x = m.left + slot * i + (slot - barW) / 2;
    const group = svg('g', { class: bar.mark ? 'bar marked' : 'bar', 'data-tip': bar.tip || `${bar.label}: ${totals[i]}`,
      dataset: bar.mark ? { mark: bar.mark } : null });
    // a cut bar's parts keep their shares of it, squeezed to the axis' height: cut at the
    // top, a warm-up step's 2.6 s of compilation above its 1 s of host work was not drawn
    const squeeze = totals[i] > top ? top / totals[i] : 1;
    let acc = 0;
    for (const s of series) {
      const v = (bar.values[s.key] || 0) * squeeze;
      if (v <= 0) continue;
      const y1 = sy(acc + v);
      group.append(svg('rect', { x, y: y1, width: barW, height: Math.max(0.5, sy(acc) - y1), fill: s.color, 'data-series': s.key }));
      acc += v;
    }
    if (totals[i] > top) { // cut: a break across its top, its height written above it
      const yb = m.top + 6;
      group.dataset.cut = String(totals[i]);
      group.append(svg('path', { d: `M${x - 2} ${yb + 3} L${x + barW + 2} ${yb - 3} M${x - 2} ${yb + 7} L${x + barW + 2} ${yb + 1}`, class: 'bar-break' }));
      g.append(svg('text', { x: x + barW / 2, y: m.top - 4, 'text-anchor': 'middle', class: 'axis cut-label' },
        `↑ ${Number(totals[i].toPrecision(4))}`));
    }
    g.append(group);
    if (bar.mark) {
      g.append(svg('text', { x: x + barW / 2, y: Math.max(12, sy(totals[i]) - 6), 'text-anchor': 'middle', class: 'mark-label' }, `▼ ${bar.mark}`));
    }
    if (i % labelEvery === 0 || bar.mark) {
      g.append(svg('text', { x: x + barW / 2, y: H - m.bottom + 16, 'text-anchor': 'middle', class: 'axis' }, bar.label));
    }
  });
  g.append(svg('line', { x1: m.left, x2: W - m.right, y1: sy(0), y2: sy(0), class: 'baseline' }));
  const used = series.filter((s) => bars.some((b) => (b.values[s.key] || 0) > 0));
  return withTips(h('figure', { class: 'chart-box' }, title ? h('figcaption', {}, title) : null, root, legend(used)));
}

// ---- pie ------------------------------------------------------------------------------------------

/**
 * A slice of a pie: its label, value and (optionally) colour.
 * @typedef {{label: string, value: number, color?: string}} Slice
 */

/**
 * slices: [{label, value}]; the largest `maxSlices - 1` are drawn, the rest merged as "Other".
 * @param {{slices: Slice[], title?: string, maxSlices?: number, format?: (v: number) => string,
 *   empty?: string}} options
 */
export function pieChart({ slices, title = '', maxSlices = 10, format = (v) => String(v), empty = 'No data' }) {
  const sorted = slices.filter((s) => s.value > 0).sort((a, b) => b.value - a.value);
  let shown = sorted;
  if (sorted.length > maxSlices) {
    const rest = sorted.slice(maxSlices - 1).reduce((s, x) => s + x.value, 0);
    shown = [...sorted.slice(0, maxSlices - 1), { label: 'Other', value: rest }];
  }
  const total = shown.reduce((s, x) => s + x.value, 0);
  const R = 90;
  const described = shown.map((x) => `${x.label} ${((100 * x.value) / (total || 1)).toFixed(1)}%`).join(', ');
  const root = svg('svg', { viewBox: '-100 -100 200 200', class: 'chart pie', role: 'img',
    'aria-label': `${title || 'Shares'}: ${described || empty}` });
  /** @type {LegendItem[]} */
  const items = [];
  let angle = -Math.PI / 2;
  shown.forEach((slice, i) => {
    const color = slice.color || (slice.label === 'Other' ? '#bdc1c6' : PALETTE[i % PALETTE.length]);
    const frac = slice.value / total;
    const pct = `${(frac * 100).toFixed(1)}%`;
    const tip = `${slice.label}: ${format(slice.value)} (${pct})`;
    if (frac >= 0.9999) {
      root.append(svg('circle', { r: R, fill: color, 'data-tip': tip, class: 'slice' }));
    } else {
      const end = angle + frac * 2 * Math.PI;
      const large = end - angle > Math.PI ? 1 : 0;
      const [x0, y0, x1, y1] = [R * Math.cos(angle), R * Math.sin(angle), R * Math.cos(end), R * Math.sin(end)];
      root.append(svg('path', { d: `M0 0 L${x0.toFixed(3)} ${y0.toFixed(3)} A${R} ${R} 0 ${large} 1 ${x1.toFixed(3)} ${y1.toFixed(3)} Z`, fill: color, 'data-tip': tip, class: 'slice' }));
      angle = end;
    }
    items.push({ color, label: `${pct} ${slice.label}` }); // the share first: long names get cut
  });
  const body = total > 0 ? [root, legend(items)] : [h('p', { class: 'empty' }, empty)];
  return withTips(h('figure', { class: 'chart-box pie-box' }, title ? h('figcaption', {}, title) : null, ...body));
}

// ---- lines --------------------------------------------------------------------------------------

/**
 * series: [{label, color, points: [[x, y], ...]}] sharing one y axis starting at 0.
 * @param {{series: Array<{label: string, color: string, points: Array<[number, number]>}>,
 *   unit?: string, height?: number, title?: string, xLabel?: string}} options
 */
export function lineChart({ series, unit = '', height = 220, title = '', xLabel = '' }) {
  const W = 960;
  const H = height;
  const m = { top: 24, right: 16, bottom: 36, left: 56 };
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const ticks = niceTicks(Math.max(0, ...ys));
  const top = ticks[ticks.length - 1];
  /** @param {number} v */
  const sx = (v) => m.left + (W - m.left - m.right) * (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5);
  /** @param {number} v */
  const sy = (v) => m.top + (H - m.top - m.bottom) * (1 - v / top);
  const root = chartSvg(W, H, { role: 'img', 'aria-label': title });
  yAxis(root, ticks, sy, m.left, W - m.right, unit);
  for (const s of series) {
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${sx(p[0]).toFixed(1)} ${sy(p[1]).toFixed(1)}`).join(' ');
    root.append(svg('path', { d, class: 'line', stroke: s.color, fill: 'none' }));
    for (const p of s.points) {
      root.append(svg('circle', { cx: sx(p[0]), cy: sy(p[1]), r: 3, fill: s.color, 'data-tip': `${s.label} @ ${p[0]}: ${p[1]}` }));
    }
  }
  if (xs.length) {
    root.append(svg('text', { x: sx(x0), y: H - m.bottom + 16, 'text-anchor': 'start', class: 'axis' }, `${x0}`));
    root.append(svg('text', { x: sx(x1), y: H - m.bottom + 16, 'text-anchor': 'end', class: 'axis' }, `${x1}`));
    if (xLabel) root.append(svg('text', { x: W / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis' }, xLabel));
  }
  return withTips(h('figure', { class: 'chart-box' }, title ? h('figcaption', {}, title) : null, root,
    legend(series.map((s) => ({ color: s.color, label: s.label })))));
}
