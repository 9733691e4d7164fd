// @ts-check
// Trace viewer drawing: one frame on a 2D canvas, straight from the typed arrays of a window
// (the bands' places come from _trace_layout.js). Rectangles are batched by colour
// (one path and one fill per colour), so a frame costs one pass over the window's events.
import { fmtBytes, fmtNs, fmtTick } from '../util.js';
import { PALETTE } from './_trace_data.js';
import { AXIS_H, COUNTER_H, GUTTER, ROW_H, TRACK_PAD, bandAt, toLayout, toScreen } from './_trace_layout.js';
import { drawHostBand } from './_trace_pod_draw.js';

const AUTO_FLOWS = 300; // more arrows than this at once are unreadable: draw them on request
const MAX_FLOWS = 2000; // "all" draws at most this many per frame (bounded frame time)

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** Screen x of time t (ns since the trace start) and back. */
export function scaleOf(s) {
  const plotW = s.W - GUTTER;
  const k = plotW / (s.view.t1 - s.view.t0);
  return { k, x: (t) => GUTTER + (t - s.view.t0) * k, t: (x) => s.view.t0 + (x - GUTTER) / k };
}

/**
 * The events of one zone (`pinned`: the pinned tracks at the top; else the scrolling part),
 * batched by colour; long ones are queued in `labels`.
 */
function drawEvents(ctx, s, sc, labels, pinned) {
  const d = s.data;
  const { lineY, pinnedH } = s.layout;
  const top = pinned ? AXIS_H : AXIS_H - s.scrollY;
  let drawn = 0;
  for (let c = 0; c < PALETTE.length; c += 1) {
    const lo = d.colorOffsets[c];
    const hi = d.colorOffsets[c + 1];
    if (lo === hi) continue;
    ctx.fillStyle = PALETTE[c];
    ctx.beginPath();
    for (let k = lo; k < hi; k += 1) {
      const i = d.byColor[k];
      const ly = lineY[d.line[i]];
      if (ly < 0 || (ly < pinnedH) !== pinned) continue;
      const y = top + ly + d.depth[i] * ROW_H;
      if (y + ROW_H < AXIS_H || y > s.H) continue;
      let x = GUTTER + (d.start[i] - s.view.t0) * sc.k;
      let w = d.dur[i] * sc.k;
      if (x + w < GUTTER || x > s.W) continue;
      if (w < 1) w = 1;
      if (x < GUTTER) { w -= GUTTER - x; x = GUTTER; }
      if (x + w > s.W) w = s.W - x;
      ctx.rect(x, y, w, ROW_H - 1);
      drawn += 1;
      if (w > 40) labels.push(i, x, y, w);
    }
    ctx.fill();
  }
  return drawn;
}

function drawLabels(ctx, s, labels) {
  ctx.fillStyle = '#202124'; // on the light event colours, in either theme
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const cw = s.charWidth || (s.charWidth = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26);
  for (let j = 0; j < labels.length; j += 4) {
    const name = s.data.names[s.data.name[labels[j]]];
    const fit = Math.floor((labels[j + 3] - 6) / cw);
    if (fit < 3) continue;
    const text = name.length > fit ? `${name.slice(0, fit - 1)}…` : name;
    ctx.fillText(text, labels[j + 1] + 3, labels[j + 2] + ROW_H / 2);
  }
}

function eventBox(s, sc, line, depth, start, dur) {
  const ly = s.layout.lineY[line];
  if (ly === undefined || ly < 0) return null;
  const x = sc.x(start);
  return { x, y: toScreen(s, ly) + depth * ROW_H, w: Math.max(dur * sc.k, 2), h: ROW_H - 1 };
}

function drawHighlights(ctx, s, sc) {
  const m = s.matches;
  if (m) {
    ctx.fillStyle = 'rgba(255, 214, 0, 0.55)';
    ctx.strokeStyle = '#e37400';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let i = 0; i < m.event.length; i += 1) {
      const b = eventBox(s, sc, m.line[i], m.depth[i], m.start_ns[i], m.dur_ns[i]);
      if (b && b.x + b.w >= GUTTER && b.x <= s.W) ctx.rect(Math.max(b.x, GUTTER), b.y, Math.max(b.w, 3), b.h);
    }
    ctx.fill();
    ctx.stroke();
  }
  const e = s.selected;
  if (e) {
    const b = eventBox(s, sc, e.line, e.depth, e.start_ns, e.dur_ns);
    if (b) {
      ctx.strokeStyle = '#1a73e8';
      ctx.lineWidth = 2;
      ctx.strokeRect(Math.max(b.x, GUTTER - 1), b.y - 1, Math.max(b.w, 3), b.h + 2);
    }
  }
}

/** Arrows for flows given as parallel arrays (src/dst line, depth, start); returns how many. */
function drawArrows(ctx, s, sc, f, color, width) {
  const { lineY } = s.layout;
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = width;
  const heads = [];
  ctx.beginPath();
  for (let i = 0; i < f.n; i += 1) {
    const ya = lineY[f.srcLine[i]];
    const yb = lineY[f.dstLine[i]];
    if (ya === undefined || yb === undefined || ya < 0 || yb < 0) continue;
    const x1 = sc.x(f.srcStart[i]);
    const x2 = sc.x(f.dstStart[i]);
    if ((x1 < GUTTER && x2 < GUTTER) || (x1 > s.W && x2 > s.W)) continue;
    const y1 = toScreen(s, ya) + ROW_H / 2 + f.srcDepth[i] * ROW_H;
    const y2 = toScreen(s, yb) + ROW_H / 2 + f.dstDepth[i] * ROW_H;
    if ((y1 < AXIS_H && y2 < AXIS_H) || (y1 > s.H && y2 > s.H)) continue;
    const bend = Math.max(12, Math.min(80, Math.abs(x2 - x1) / 2));
    ctx.moveTo(x1, y1);
    ctx.bezierCurveTo(x1 + bend, y1, x2 - bend, y2, x2, y2);
    heads.push(x2, y2);
  }
  ctx.stroke();
  ctx.beginPath();
  for (let j = 0; j < heads.length; j += 2) {
    ctx.moveTo(heads[j], heads[j + 1]);
    ctx.lineTo(heads[j] - 6, heads[j + 1] - 3.5);
    ctx.lineTo(heads[j] - 6, heads[j + 1] + 3.5);
    ctx.closePath();
  }
  ctx.fill();
  return heads.length / 2;
}

/** The window's flows of one kind, as the parallel arrays drawArrows takes. */
function flowsOfKind(f, kind) {
  const keep = [];
  for (let i = 0; i < f.n; i += 1) if (f.kind[i] === kind) keep.push(i);
  const pick = (a) => keep.map((i) => a[i]);
  return { n: keep.length, srcLine: pick(f.srcLine), srcDepth: pick(f.srcDepth), srcStart: pick(f.srcStart),
    dstLine: pick(f.dstLine), dstDepth: pick(f.dstDepth), dstStart: pick(f.dstStart) };
}

/** Flows of the selected event (from its details), drawn whatever the flow setting. */
function selectedFlows(e) {
  const list = e && e.flows ? e.flows : [];
  const me = (k) => list.map(() => e[k]);
  const other = (k) => list.map((f) => f[k]);
  const out = list.map((f) => f.direction === 'out');
  const pick = (mine, theirs) => out.map((o, i) => (o ? mine[i] : theirs[i]));
  return { n: list.length,
    srcLine: pick(me('line'), other('line')), srcDepth: pick(me('depth'), other('depth')),
    srcStart: pick(me('start_ns'), other('start_ns')),
    dstLine: pick(other('line'), me('line')), dstDepth: pick(other('depth'), me('depth')),
    dstStart: pick(other('start_ns'), me('start_ns')) };
}

/** The flows of `f` at positions `keep` (a subset), as drawArrows takes them. */
function pickFlows(f, keep) {
  const pick = (a) => keep.map((i) => a[i]);
  return { n: keep.length, srcLine: pick(f.srcLine), srcDepth: pick(f.srcDepth), srcStart: pick(f.srcStart),
    dstLine: pick(f.dstLine), dstDepth: pick(f.dstDepth), dstStart: pick(f.dstStart) };
}

/**
 * Flows to draw besides the selected event's own. "all": every flow with an end in view, at
 * most MAX_FLOWS (the longest on screen first: short ones are hidden under their events anyway)
 * so a frame stays cheap whatever the trace. "auto": when nothing is selected, all flows if they
 * are few; with a selection, the flows that start or end near the selected event (within a
 * tenth of the view), so its neighbourhood's causality shows without the clutter.
 */
function visibleFlows(s, sc, f) {
  if (s.flowMode === 'selected' || !f.n) return [];
  const e = s.selected;
  if (s.flowMode === 'auto' && !e) return f.n <= AUTO_FLOWS ? [0, 1].map((k) => f.byKindAll(k)) : [];
  const lo = sc.t(GUTTER);
  const hi = sc.t(s.W);
  const near = s.flowMode === 'auto' ? (hi - lo) / 10 : 0;
  const keep = [0, 1].map(() => /** @type {number[]} */ ([]));
  const lengths = [0, 1].map(() => /** @type {number[]} */ ([]));
  for (let i = 0; i < f.n; i += 1) {
    const a = f.srcStart[i];
    const b = f.dstStart[i];
    if (s.flowMode === 'auto') {
      const c0 = e.start_ns - near;
      const c1 = e.start_ns + e.dur_ns + near;
      if (!((a >= c0 && a <= c1) || (b >= c0 && b <= c1))) continue;
    } else if ((a < lo && b < lo) || (a > hi && b > hi)) continue;
    keep[f.kind[i]]?.push(i);
    lengths[f.kind[i]]?.push(Math.abs(b - a));
  }
  const total = keep.reduce((n, k) => n + k.length, 0);
  if (total > MAX_FLOWS) {
    const quota = Math.floor(MAX_FLOWS / keep.length);
    keep.forEach((k, kind) => {
      if (k.length <= quota) return;
      const order = k.map((_, j) => j).sort((x, y) => lengths[kind][y] - lengths[kind][x]).slice(0, quota);
      keep[kind] = order.map((j) => k[j]);
    });
  }
  s.flowsCapped = total > MAX_FLOWS ? total : 0;
  return keep.map((k) => pickFlows(f, k));
}

function drawFlows(ctx, s, sc) {
  let drawn = 0;
  const f = s.data.flows;
  if (!f.byKindAll) {
    const cache = new Map();
    f.byKindAll = (kind) => {
      if (!cache.has(kind)) cache.set(kind, flowsOfKind(f, kind));
      return cache.get(kind);
    };
  }
  s.flowsCapped = 0;
  visibleFlows(s, sc, f).forEach((part, kind) => { drawn += drawArrows(ctx, s, sc, part, kind ? s.theme.flow1 : s.theme.flow0, 1); });
  drawn += drawArrows(ctx, s, sc, selectedFlows(s.selected), '#1a73e8', 2);
  return drawn;
}

/** Bucket index of a counter at time t, or -1 outside its samples (a bucket ends where the
 * next starts, the last at the window's end). */
export function counterIndexAt(c, t, windowT1) {
  const n = c.t.length;
  if (!n || t < c.t[0] || t >= windowT1) return -1;
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) { // last sample at or before t
    const mid = (lo + hi + 1) >> 1;
    if (c.t[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/** End of bucket j of counter c: the next bucket's start, the window's end for the last. */
export function bucketEnd(c, j, windowT1) {
  return j + 1 < c.t.length ? c.t[j + 1] : windowT1;
}

/**
 * A counter as a step function: each bucket's value holds until the next bucket, drawn as one
 * filled outline with its top edge stroked, so it reads as a continuous line at any zoom (never
 * as separate slivers); gaps only where the value is unknown (before the first sample).
 */
function drawCounters(ctx, s, sc, pinned) {
  for (const c of s.data.counters) {
    const cy = s.layout.counterY.get(c.id);
    if (cy === undefined || (cy < s.layout.pinnedH) !== pinned) continue;
    const base = toScreen(s, cy) + COUNTER_H - 3;
    if (base < AXIS_H || base - COUNTER_H > s.H) continue;
    const max = c.unit === 'percent' ? 100 : c.max || 1;
    const n = c.t.length;
    const yOf = (v) => base - (v / max) * (COUNTER_H - 8);
    const fill = new Path2D();
    const line = new Path2D();
    let open = false;
    let startX = 0;
    let lastX = 0;
    for (let j = 0; j <= n; j += 1) {
      const v = j < n ? c.v[j] : NaN;
      const x0 = Math.max(GUTTER - 1, Math.min(s.W + 1, sc.x(j < n ? c.t[j] : s.data.t1)));
      if (!(v >= 0)) {
        if (open) { fill.lineTo(lastX, base); fill.lineTo(startX, base); fill.closePath(); open = false; }
        continue;
      }
      const x1 = Math.max(GUTTER - 1, Math.min(s.W + 1, sc.x(bucketEnd(c, j, s.data.t1))));
      if (x1 < GUTTER - 1 || x0 > s.W + 1) continue;
      const y = yOf(v);
      if (!open) { fill.moveTo(x0, base); fill.lineTo(x0, y); line.moveTo(x0, y); startX = x0; open = true; }
      else { fill.lineTo(x0, y); line.lineTo(x0, y); }
      fill.lineTo(x1, y);
      line.lineTo(x1, y);
      lastX = x1;
    }
    if (open) { fill.lineTo(lastX, base); fill.lineTo(startX, base); fill.closePath(); }
    ctx.fillStyle = c.unit === 'percent' ? 'rgba(30, 142, 62, 0.30)' : 'rgba(26, 115, 232, 0.28)';
    ctx.fill(fill);
    ctx.strokeStyle = c.unit === 'percent' ? '#1e8e3e' : '#1a73e8';
    ctx.lineWidth = 1;
    ctx.stroke(line);
  }
}

/** The vertical line at the pointer on a counter track. */
function drawCounterHover(ctx, s, sc) {
  const hv = s.counterHover;
  if (hv) {
    ctx.fillStyle = s.theme.text;
    ctx.fillRect(sc.x(hv.t), toScreen(s, hv.y), 1, COUNTER_H);
  }
}

/**
 * The canvas's colours, from the page's CSS custom properties (light or dark theme).
 * @returns {Record<string, string>}
 */
export function readTheme() {
  const css = getComputedStyle(document.documentElement);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    canvas: v('--tv-canvas', '#fafafa'), panel: v('--card', '#fff'), text: v('--text', '#202124'),
    muted: v('--muted', '#5f6368'), label: v('--tv-label', '#3c4043'), line: v('--line', '#dadce0'),
    rowLine: v('--line-soft', '#f1f3f4'), section: v('--tv-section', '#e8eaed'), accent: v('--accent', '#1a73e8'),
    pinned: v('--tv-pinned', '#fef7e0'), flow0: v('--tv-flow', 'rgba(60, 64, 67, 0.75)'),
    flow1: v('--tv-flow-2', 'rgba(217, 48, 37, 0.8)'),
  };
}

/** A pushpin at (x, y): filled when the track is pinned, outlined on the hovered track. */
function drawPin(ctx, x, y, filled, color) {
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.arc(x, y - 2, 3.5, 0, 2 * Math.PI);
  if (filled) ctx.fill(); else ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x, y + 1.5);
  ctx.lineTo(x, y + 6);
  ctx.stroke();
}

export const PIN_X = GUTTER - 14; // the pin's place in the gutter (a click there pins)

/** The gutter's bands of one zone (pinned or scrolling). */
function drawGutterZone(ctx, s, pinned) {
  const th = s.theme;
  for (const b of s.layout.bands) {
    if ((b.y < s.layout.pinnedH) !== pinned) continue;
    const y = toScreen(s, b.y);
    if (y + b.h < AXIS_H || y > s.H) continue;
    if (b.kind === 'host') {
      drawHostBand(ctx, s, b, y, scaleOf(s), GUTTER);
      continue;
    }
    if (b.kind === 'section') {
      ctx.fillStyle = b.pinned ? th.pinned : th.section;
      ctx.fillRect(0, y, s.W, b.h);
      ctx.fillStyle = th.text;
      ctx.font = '600 12px system-ui, sans-serif';
      const mark = b.pinned ? '' : `${b.closed ? '▸' : '▾'} `;
      ctx.fillText(`${mark}${b.label}${b.closed || b.pinned ? `  (${b.count})` : ''}`, 6, y + b.h / 2);
      ctx.font = '12px system-ui, sans-serif';
      continue;
    }
    ctx.fillStyle = th.panel;
    ctx.fillRect(0, y, GUTTER - 1, b.h);
    ctx.fillStyle = th.rowLine;
    ctx.fillRect(0, y + b.h - 1, s.W, 1);
    ctx.fillStyle = th.label;
    const label = b.label.length > 32 ? `${b.label.slice(0, 31)}…` : b.label;
    const mid = y + Math.min(b.h, ROW_H + 2 * TRACK_PAD) / 2;
    ctx.fillText(label, 14, mid);
    if (b.pinned || s.hoverBand === b) drawPin(ctx, PIN_X, mid, Boolean(b.pinned), b.pinned ? th.accent : th.muted);
    if (b.kind === 'counter' && s.data) {
      const c = s.data.counters.find((x) => x.id === b.counter);
      if (c) {
        ctx.fillStyle = th.muted;
        ctx.fillText(`max ${b.unit === 'bytes' ? fmtBytes(c.max) : `${c.max.toFixed(1)}%`}`, 14, y + b.h - 9);
      }
    }
  }
}

function drawGutter(ctx, s) {
  ctx.font = '12px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const P = s.layout.pinnedH;
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, AXIS_H + P, s.W, s.H - AXIS_H - P);
  ctx.clip();
  drawGutterZone(ctx, s, false);
  ctx.restore();
  if (P) {
    drawGutterZone(ctx, s, true);
    ctx.fillStyle = s.theme.accent;
    ctx.fillRect(0, AXIS_H + P - 1, s.W, 1);
  }
  ctx.fillStyle = s.theme.line;
  ctx.fillRect(GUTTER - 1, AXIS_H, 1, s.H - AXIS_H);
}

/** Label of tick time `t` (ns from the origin) when ticks are `step` ns apart (util.fmtTick). */
export const tickLabel = fmtTick;

/** Tick times (ns since the trace start) and their labels, relative to `origin`. */
export function axisTicks(t0, t1, widthPx, origin = 0, minGapPx = 110) {
  const step = niceStep(((t1 - t0) * minGapPx) / Math.max(1, widthPx));
  const first = Math.ceil((t0 - origin) / step);
  const ticks = [];
  for (let i = first; origin + i * step <= t1 && ticks.length < 200; i += 1) {
    ticks.push({ t: origin + i * step, label: tickLabel(i * step, step) });
  }
  return { step, ticks };
}

function drawAxis(ctx, s, sc) {
  ctx.fillStyle = s.theme.panel;
  ctx.fillRect(0, 0, s.W, AXIS_H);
  ctx.fillStyle = s.theme.line;
  ctx.fillRect(0, AXIS_H - 1, s.W, 1);
  const span = s.view.t1 - s.view.t0;
  const { ticks } = axisTicks(s.view.t0, s.view.t1, s.W - GUTTER, s.origin || 0);
  ctx.fillStyle = s.theme.muted;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const labels = [];
  for (const tick of ticks) {
    const x = sc.x(tick.t);
    if (x < GUTTER) continue;
    ctx.fillRect(x, AXIS_H - 7, 1, 6);
    ctx.fillText(tick.label, x + 3, AXIS_H / 2 - 2);
    labels.push(tick.label);
  }
  s.tickLabels = labels; // read by the browser tests
  ctx.fillStyle = s.theme.text;
  ctx.fillText(`span ${fmtNs(span)}`, 8, AXIS_H / 2 - 2);
  if (s.originLabel) {
    ctx.fillStyle = s.theme.muted;
    ctx.fillText(`0 = ${s.originLabel}`, 110, AXIS_H / 2 - 2);
  }
}

function drawOverlays(ctx, s, sc) {
  if (s.mark) {
    const x1 = Math.max(sc.x(s.mark.t0), GUTTER);
    const x2 = Math.min(sc.x(s.mark.t1), s.W);
    if (x2 >= x1) {
      ctx.fillStyle = 'rgba(26, 115, 232, 0.10)';
      ctx.fillRect(x1, AXIS_H, x2 - x1, s.H - AXIS_H);
      ctx.fillStyle = '#1a73e8';
      ctx.fillRect(x1, 0, 1, s.H);
      ctx.fillRect(x2, 0, 1, s.H);
      ctx.fillStyle = 'rgba(26, 115, 232, 0.9)';
      const text = fmtNs(s.mark.t1 - s.mark.t0);
      const w = ctx.measureText(text).width + 10;
      const cx = Math.min(Math.max((x1 + x2) / 2 - w / 2, GUTTER), s.W - w);
      ctx.fillRect(cx, 2, w, AXIS_H - 6);
      ctx.fillStyle = '#fff';
      ctx.fillText(text, cx + 5, AXIS_H / 2 - 1);
    }
  }
  if (s.box) {
    const x1 = sc.x(s.box.t0);
    const x2 = sc.x(s.box.t1);
    const y1 = toScreen(s, s.box.y0);
    const y2 = toScreen(s, s.box.y1);
    ctx.fillStyle = 'rgba(26, 115, 232, 0.12)';
    ctx.strokeStyle = '#1a73e8';
    ctx.lineWidth = 1;
    ctx.fillRect(x1, y1, x2 - x1, y2 - y1);
    ctx.strokeRect(x1 + 0.5, y1 + 0.5, x2 - x1, y2 - y1);
  }
}

/** Events, labels and counters of one zone, clipped to it. */
function drawZone(ctx, s, sc, pinned) {
  const P = s.layout.pinnedH;
  ctx.save();
  ctx.beginPath();
  if (pinned) ctx.rect(GUTTER, AXIS_H, s.W - GUTTER, P);
  else ctx.rect(GUTTER, AXIS_H + P, s.W - GUTTER, s.H - AXIS_H - P);
  ctx.clip();
  if (pinned) {
    ctx.fillStyle = s.theme.canvas;
    ctx.fillRect(GUTTER, AXIS_H, s.W - GUTTER, P);
  }
  const labels = [];
  const drawn = drawEvents(ctx, s, sc, labels, pinned);
  drawLabels(ctx, s, labels);
  drawCounters(ctx, s, sc, pinned);
  ctx.restore();
  return drawn;
}

/** Draw one frame; returns the number of event rectangles drawn. */
export function drawFrame(ctx, s) {
  const sc = scaleOf(s);
  ctx.setTransform(s.dpr, 0, 0, s.dpr, 0, 0);
  ctx.fillStyle = s.theme.canvas;
  ctx.fillRect(0, 0, s.W, s.H);
  let drawn = 0;
  if (s.data) {
    drawn = drawZone(ctx, s, sc, false);
    if (s.layout.pinnedH) drawn += drawZone(ctx, s, sc, true);
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER, AXIS_H, s.W - GUTTER, s.H - AXIS_H);
  ctx.clip();
  if (s.data) {
    drawCounterHover(ctx, s, sc);
    s.flowsDrawn = drawFlows(ctx, s, sc);
  }
  drawHighlights(ctx, s, sc);
  ctx.restore();
  drawGutter(ctx, s);
  drawAxis(ctx, s, sc);
  drawOverlays(ctx, s, sc);
  return drawn;
}

export { bandAt };

/** Position (in the window's arrays) of the event under screen point (px, py), or -1. */
export function hitTest(s, px, py) {
  if (!s.data || px < GUTTER || py < AXIS_H) return -1;
  const cy = toLayout(s, py);
  const band = bandAt(s.layout, cy);
  if (!band || band.kind !== 'track') return -1;
  const depth = Math.floor((cy - s.layout.lineY[band.line]) / ROW_H);
  const sc = scaleOf(s);
  const t = sc.t(px);
  const slack = 3 / sc.k; // a few pixels of tolerance for 1-pixel events
  const d = s.data;
  let best = -1;
  for (let i = 0; i < d.n; i += 1) {
    if (d.line[i] !== band.line || d.depth[i] !== depth) continue;
    const end = d.start[i] + Math.max(d.dur[i], 1 / sc.k);
    if (t >= d.start[i] - slack && t <= end + slack && (best < 0 || d.dur[i] > d.dur[best])) best = i;
  }
  return best;
}
