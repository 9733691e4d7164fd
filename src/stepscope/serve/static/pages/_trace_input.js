// @ts-check
// Trace viewer input: the wheel (Perfetto's conventions, or XProf's), the pointer (select,
// pan, zoom, timing, box selection, the gutter's collapse and pin), hover tooltips, keys.
// Each function takes the view (trace_viewer.js) it drives.
import { fmtNs } from '../util.js';
import { PIN_X, bucketEnd, counterIndexAt, hitTest, scaleOf } from './_trace_draw.js';
import { AXIS_H, GUTTER, bandAt, toLayout, trackKey } from './_trace_layout.js';
import { counterDetails } from './_trace_panel.js';
import { counterValue } from './_trace_toolbar.js';

/**
 * Wheel conventions of Perfetto: the wheel scrolls the tracks (natively), Ctrl/Cmd+wheel and
 * a trackpad pinch (which Chromium sends as a wheel event with ctrlKey) zoom at the pointer,
 * Shift+wheel and horizontal swipes pan. With wheelMode 'zoom' (XProf) the plain wheel zooms.
 */
function onWheel(view, e) {
  const px = e.offsetX;
  const horizontal = Math.abs(e.deltaX) > Math.abs(e.deltaY);
  const zoomKey = e.ctrlKey || e.metaKey;
  if (px < GUTTER && !zoomKey && !e.shiftKey) return; // scroll the tracks natively
  const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
  if (e.shiftKey || (horizontal && !zoomKey)) {
    e.preventDefault();
    view.panPixels(((e.shiftKey ? e.deltaY : 0) + e.deltaX) * unit);
    return;
  }
  if (zoomKey || view.wheelMode === 'zoom') {
    e.preventDefault();
    // A pinch gives small deltas: zoom faster per unit than for a mouse wheel notch.
    const rate = zoomKey && Math.abs(e.deltaY) < 50 ? 100 : 400;
    view.zoom(Math.exp((-e.deltaY * unit) / rate), Math.max(px, GUTTER));
  }
  // Otherwise the scroller scrolls the tracks.
}

function onPointerDown(view, e) {
  const px = e.offsetX;
  const py = e.offsetY;
  view.canvas.setPointerCapture(e.pointerId);
  view.scroller.focus({ preventScroll: true });
  if (px < GUTTER && py >= AXIS_H) {
    const band = bandAt(view.layout, toLayout(view, py));
    if (band && (band.kind === 'section' || band.kind === 'host') && !band.pinned) {
      if (view.collapsed.has(band.key)) view.collapsed.delete(band.key);
      else view.collapsed.add(band.key);
      view.relayout();
    } else if (band && (band.kind === 'track' || band.kind === 'counter') && px >= PIN_X - 10) {
      view.togglePin(band);
    }
    return;
  }
  const mode = py < AXIS_H ? 'timing' : view.mode;
  view.drag = { mode, x0: px, y0: py, x: px, y: py, t0: scaleOf(view).t(px), view: { ...view.view }, scroll: view.scrollY, moved: false };
}

function onPointerMove(view, e) {
  const d = view.drag;
  if (!d) return;
  d.x = e.offsetX;
  d.y = e.offsetY;
  d.moved = d.moved || Math.abs(d.x - d.x0) + Math.abs(d.y - d.y0) > 3;
  if (!d.moved) return;
  const sc = scaleOf(view);
  if (d.mode === 'pan') {
    const dt = (d.x - d.x0) / sc.k;
    view.setView(d.view.t0 - dt, d.view.t1 - dt);
    view.scroller.scrollTop = d.scroll - (d.y - d.y0);
  } else if (d.mode === 'timing' || d.mode === 'zoom') {
    view.setMark(d.t0, sc.t(d.x));
  } else if (d.mode === 'select') {
    const y0 = toLayout(view, d.y0);
    const y1 = toLayout(view, d.y);
    view.box = { t0: Math.min(d.t0, sc.t(d.x)), t1: Math.max(d.t0, sc.t(d.x)), y0: Math.min(y0, y1), y1: Math.max(y0, y1) };
    view.invalidate();
  }
}

function onPointerUp(view, e) {
  const d = view.drag;
  view.drag = null;
  if (!d) return;
  if (!d.moved) {
    if (d.mode === 'select' || d.mode === 'timing') clickEvent(view, e.offsetX, e.offsetY, d.mode);
    return;
  }
  if (d.mode === 'zoom' && view.mark) {
    const { t0, t1 } = view.mark;
    view.mark = null;
    view.fitRange(t0, t1, 0);
  } else if (d.mode === 'select' && view.box) {
    view.selectBox(view.box);
  }
}

/** The counter band and its value under screen point (px, py), or null. */
function counterAt(view, px, py) {
  if (!view.data || px < GUTTER || py < AXIS_H) return null;
  const band = bandAt(view.layout, toLayout(view, py));
  if (!band || band.kind !== 'counter') return null;
  const c = view.data.counters.find((x) => x.id === band.counter);
  if (!c) return null;
  const t = scaleOf(view).t(px);
  const j = counterIndexAt(c, t, view.data.t1);
  if (j < 0 || !(c.v[j] >= 0)) return { counter: c, band, t, value: null };
  return { counter: c, band, t, value: c.v[j], from: c.t[j], to: bucketEnd(c, j, view.data.t1) };
}

/** A tooltip with the name and duration of the event (or the counter value) under the pointer. */
function hover(view, e) {
  if (view.drag && view.drag.moved) { view.tooltip.hidden = true; return; }
  const inGutter = e.offsetX < GUTTER && e.offsetY >= AXIS_H;
  const band = inGutter ? bandAt(view.layout, toLayout(view, e.offsetY)) : null;
  const hoverBand = band && (band.kind === 'track' || band.kind === 'counter') ? band : null;
  if (hoverBand !== view.hoverBand) { view.hoverBand = hoverBand; view.invalidate(); }
  if (hoverBand && e.offsetX >= PIN_X - 10) {
    view.canvas.title = view.pinned.has(trackKey(hoverBand)) ? 'Unpin this track' : 'Pin this track to the top';
  } else view.canvas.removeAttribute('title');
  const cv = counterAt(view, e.offsetX, e.offsetY);
  const before = view.counterHover;
  view.counterHover = cv ? { t: cv.t, y: cv.band.y } : null;
  if (cv || before) view.invalidate();
  let text = '';
  if (cv) {
    text = `${cv.counter.name}\n${cv.value === null ? 'no value here' : counterValue(cv.counter, cv.value)} at ${fmtNs(cv.t - view.origin)}`;
  } else {
    const i = hitTest(view, e.offsetX, e.offsetY);
    if (i >= 0) {
      const d = view.data;
      text = `${d.names[d.name[i]]}\n${fmtNs(d.dur[i])} at ${fmtNs(d.start[i] - view.origin)}`;
    }
  }
  if (!text) { view.tooltip.hidden = true; return; }
  view.tooltip.textContent = text;
  view.tooltip.style.left = `${e.clientX + 14}px`;
  view.tooltip.style.top = `${e.clientY + 14}px`;
  view.tooltip.hidden = false;
}

function clickEvent(view, px, py, mode) {
  const cv = mode === 'select' ? counterAt(view, px, py) : null;
  if (cv) {
    view.selected = null;
    view.showDetails(counterDetails(cv, counterValue, view.origin));
    view.root.dataset.counterValue = cv.value === null ? '' : String(cv.value);
    view.invalidate();
    return;
  }
  const i = hitTest(view, px, py);
  if (i < 0) { if (mode === 'select') view.selectEvent(null); return; }
  const d = view.data;
  const brief = { event: d.event[i], line: d.line[i], depth: d.depth[i], start_ns: d.start[i], dur_ns: d.dur[i] };
  if (mode === 'timing') view.setMark(brief.start_ns, brief.start_ns + brief.dur_ns);
  else view.selectEvent(brief);
}

/**
 * Keys work whenever the page has focus (listened on the window, before the shell): W/S zoom at
 * the pointer, A/D pan, 1-4 pick the mouse mode. The shell's 1-9 tool switching is off while
 * the viewer is open, so no single key leaves the view; ? lists the viewer's keys.
 */
export function onKey(view, e) {
  if (!view.root.isConnected) { window.removeEventListener('keydown', view.keyListener, true); return; }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const tag = (e.target.tagName || '').toLowerCase();
  if (tag === 'input' || tag === 'select' || tag === 'textarea') return;
  if (view.shortcuts && view.shortcuts.open) return; // the dialog handles its own keys
  const key = e.key.toLowerCase();
  const fast = e.shiftKey ? 3 : 1;
  const handled = {
    w: () => view.zoom(1.25 ** fast, view.mouseX), s: () => view.zoom(0.8 ** fast, view.mouseX),
    a: () => view.panPixels(-0.1 * fast * (view.W - GUTTER)), d: () => view.panPixels(0.1 * fast * (view.W - GUTTER)),
    1: () => view.setMode('select'), 2: () => view.setMode('pan'), 3: () => view.setMode('zoom'), 4: () => view.setMode('timing'),
    m: () => view.selected && view.setMark(view.selected.start_ns, view.selected.start_ns + view.selected.dur_ns),
    f: () => {
      const r = view.mark || (view.selected && { t0: view.selected.start_ns, t1: view.selected.start_ns + view.selected.dur_ns })
        || (view.box && { t0: view.box.t0, t1: view.box.t1 });
      if (r) view.fitRange(r.t0, r.t1);
    },
    '?': () => view.showShortcuts(),
    escape: () => { view.mark = null; view.box = null; view.selectEvent(null); },
  }[key] || (/^[5-9]$/.test(key) ? () => {} : null);
  if (!handled) return;
  e.preventDefault();
  e.stopPropagation(); // the shell would switch tools on digits and open its own help on ?
  handled();
}

export function bindInput(view) {
  const c = view.canvas;
  c.addEventListener('wheel', (e) => onWheel(view, e), { passive: false });
  c.addEventListener('pointerdown', (e) => onPointerDown(view, e));
  c.addEventListener('pointermove', (e) => {
    view.mouseX = e.offsetX;
    onPointerMove(view, e);
    hover(view, e);
  });
  c.addEventListener('pointerleave', () => {
    view.tooltip.hidden = true;
    if (view.hoverBand) { view.hoverBand = null; view.invalidate(); }
    if (view.counterHover) { view.counterHover = null; view.invalidate(); }
  });
  c.addEventListener('pointerup', (e) => onPointerUp(view, e));
  window.addEventListener('keydown', view.keyListener, true);
  view.scroller.addEventListener('scroll', () => {
    view.scrollY = view.scroller.scrollTop;
    view.invalidate();
    if (view.structure.hosts) view.requestData();
  });
  const observer = new ResizeObserver(() => {
    if (!view.root.isConnected && view.W) {
      observer.disconnect();
      window.removeEventListener('keydown', view.keyListener, true);
      return;
    }
    view.resize();
  });
  observer.observe(view.scroller);
}
