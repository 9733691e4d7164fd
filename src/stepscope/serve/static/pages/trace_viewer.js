// @ts-check
// Trace viewer: a canvas timeline of every event, fed by level-of-detail windows from the
// server (api/tool/trace_viewer/window). The view is redrawn from the last window while the
// next one (3x the visible span, debounced) is on its way, so panning never waits.
import { fmtInt, fmtNs, h, note } from '../util.js';
import { TraceClient } from './_trace_data.js';
import { AXIS_H, GUTTER, ROW_H, bandAt, buildLayout, counterIndexAt, drawFrame, hitTest, scaleOf } from './_trace_draw.js';
import { measurePan, measureZoom } from './_trace_measure.js';
import { initialCollapsed, podControls, podParams, revealLine, tracksNear } from './_trace_pod.js';
import { boxDetails, counterDetails, eventDetails, keysHelp, markDetails, shortcutsDialog } from './_trace_panel.js';
import { bindResize, counterValue, initialSteps, loadSteps, readSetting, runSearch, summaryOf, toolbar, writeSetting } from './_trace_toolbar.js';

const MAX_RES = 16384;
const MIN_SPAN_NS = 10;
const WHEEL_KEY = 'stepscope.trace_viewer.wheel';
const FETCH_DELAY_MS = 60;

function ensureStyles() {
  if (document.querySelector('link[data-page-style="trace_viewer"]')) return;
  document.head.append(h('link', { rel: 'stylesheet', href: 'static/pages/trace_viewer.css', dataset: { pageStyle: 'trace_viewer' } }));
}

/**
 * @typedef {object} TraceElements the page's elements the view draws into
 * @property {HTMLCanvasElement} canvas
 * @property {HTMLElement} spacer
 * @property {HTMLElement} scroller
 * @property {HTMLElement} details
 * @property {HTMLElement} status
 * @property {HTMLElement} searchCount
 * @property {HTMLElement} tooltip
 * @property {HTMLElement} flowNote
 */

class TraceView {
  /** @param {TraceElements} els */
  constructor(root, structure, ctx, els) {
    this.canvas = els.canvas;
    this.spacer = els.spacer;
    this.scroller = els.scroller;
    this.details = els.details;
    this.status = els.status;
    this.searchCount = els.searchCount;
    this.tooltip = els.tooltip;
    this.flowNote = els.flowNote;
    // Set by the toolbar (_trace_toolbar.js) and by drawFrame (_trace_draw.js).
    /** @type {any} */ this.stepInput = undefined;
    /** @type {any} */ this.stepBox = undefined; /** @type {any} */ this.originBox = undefined;
    // one host's steps come from their endpoint after the first window (`loadSteps`)
    this.stepsWanted = !structure.steps;
    structure.steps ??= { number: [], start_ns: [], dur_ns: [], event: [] };
    /** @type {number | null} */ this.wantedStep = null;
    /** @type {HTMLElement | undefined} */ this.summary = undefined; // the line above the toolbar
    /** @type {HTMLElement[]} */ this.modeButtons = [];
    /** @type {string[] | undefined} */ this.tickLabels = undefined;
    /** @type {number | undefined} */ this.flowsDrawn = undefined;
    /** @type {number | undefined} */ this.flowsCapped = undefined;
    /** @param {KeyboardEvent} e */
    this.keyListener = (e) => this.onKey(e);
    this.root = root;
    this.structure = structure;
    this.client = new TraceClient(ctx.run, ctx.host, structure.hosts ? podParams(ctx) : {});
    this.duration = Math.max(structure.duration_ns, 1);
    this.view = { t0: 0, t1: this.duration };
    this.collapsed = initialCollapsed(structure); // host bands of a multi-host view
    this.layout = buildLayout(structure, this.collapsed);
    this.data = null;
    this.mode = 'select';
    this.scrollY = 0;
    this.W = 0;
    this.H = 0;
    this.flowMode = 'auto'; // auto: all flows when few, else the selected event's
    this.selected = null; // brief of the selected event {event, line, depth, start_ns, dur_ns}
    this.mark = null;
    this.box = null;
    this.matches = null;
    this.query = '';
    /** @type {any} */ this.searchResults = null; // set by runSearch (_trace_toolbar.js)
    this.drawCount = 0;
    this.drawTimes = [];
    this.frameScheduled = false;
    this.pending = null;
    this.fetchTimer = 0;
    this.searchTimer = 0;
    this.ctx = this.canvas.getContext('2d', { alpha: false });
    this.page = ctx;
    // Perfetto's convention by default (wheel scrolls the tracks, Ctrl/Cmd+wheel or a pinch
    // zooms); XProf users can make the plain wheel zoom. Remembered in this browser.
    this.wheelMode = readSetting(WHEEL_KEY, 'scroll');
    this.origin = 0;
    this.originLabel = '';
    this.originMode = 'trace';
    this.counterHover = null;
  }

  /** Time labels count from the trace start or from the start of the current step. */
  setOrigin(mode) {
    this.originMode = mode;
    const s = this.structure.steps;
    if (mode === 'step' && s.number.length) {
      const i = this.stepIndex ?? this.stepAt((this.view.t0 + this.view.t1) / 2);
      this.origin = s.start_ns[i];
      this.originLabel = `start of step ${s.number[i]}`;
    } else {
      this.origin = 0;
      this.originLabel = '';
    }
    this.root.dataset.origin = String(this.origin);
    this.invalidate();
  }

  /** Index of the step holding time t, or the nearest one. */
  stepAt(t) {
    const s = this.structure.steps;
    let best = 0;
    for (let i = 0; i < s.number.length; i += 1) {
      if (s.start_ns[i] <= t) best = i;
    }
    return best;
  }

  // ---- view ------------------------------------------------------------------------------
  setView(t0, t1) {
    let span = Math.max(t1 - t0, MIN_SPAN_NS);
    span = Math.min(span, this.duration * 1.2);
    const mid = (t0 + t1) / 2;
    let a = mid - span / 2;
    const margin = this.duration * 0.1;
    a = Math.min(Math.max(a, -margin), this.duration + margin - span);
    this.view = { t0: a, t1: a + span };
    this.invalidate();
    this.requestData();
  }

  zoom(factor, px = GUTTER + (this.W - GUTTER) / 2) {
    const t = scaleOf(this).t(px);
    const { t0, t1 } = this.view;
    this.setView(t - (t - t0) / factor, t + (t1 - t) / factor);
  }

  panPixels(dx) {
    const dt = dx / scaleOf(this).k;
    this.setView(this.view.t0 + dt, this.view.t1 + dt);
  }

  fitRange(t0, t1, pad = 0.03) {
    const span = Math.max(t1 - t0, MIN_SPAN_NS);
    this.setView(t0 - span * pad, t1 + span * pad);
  }

  fitStep(k) {
    const s = this.structure.steps;
    if (!s.number.length) return;
    const i = Math.max(0, Math.min(k, s.number.length - 1));
    this.stepIndex = i;
    this.stepInput.value = String(s.number[i]);
    this.fitRange(s.start_ns[i], s.start_ns[i] + s.dur_ns[i]);
    if (this.originMode === 'step') this.setOrigin('step');
  }

  // ---- data ------------------------------------------------------------------------------
  requestData() {
    const { t0, t1 } = this.view;
    const plotW = Math.max(1, this.W - GUTTER);
    const bucket = (t1 - t0) / plotW;
    const a = Math.max(0, t0);
    const b = Math.min(this.duration, t1);
    // Several hosts: a window holds the tracks near the view only (none: nothing to fetch).
    const need = this.structure.hosts ? tracksNear(this.layout, this.scrollY, this.H) : null;
    if (need && !need.lines.length && !need.counters.length) return;
    const hit = this.client.cached(a, Math.max(b, a + 1), bucket, need);
    const want = need && tracksNear(this.layout, this.scrollY, this.H, this.H / 4);
    if (hit) {
      if (hit !== this.data) { this.data = hit; this.invalidate(); }
      return;
    }
    clearTimeout(this.fetchTimer);
    this.fetchTimer = setTimeout(() => this.fetchWindow(a, b, bucket, want), this.data ? FETCH_DELAY_MS : 0);
  }

  /** @param {import('./_trace_pod.js').TrackNeed | null} [need] */
  async fetchWindow(a, b, bucket, need = null) {
    const span = Math.max(b - a, 1);
    // A window 3x the view (1.5x with several hosts, whose windows hold many more rows).
    const margin = Math.max(0, Math.min(span * (this.structure.hosts ? 0.25 : 1), (MAX_RES * bucket - span) / 2));
    const f0 = Math.max(0, a - margin);
    const f1 = Math.min(this.duration, b + margin);
    const res = Math.max(1, Math.min(MAX_RES, Math.ceil((f1 - f0) / bucket)));
    if (this.pending) this.pending.abort();
    const controller = new AbortController();
    this.pending = controller;
    this.root.dataset.loading = '1';
    try {
      const data = await this.client.window(f0, Math.max(f1, f0 + 1), res, controller.signal, need);
      if (controller.signal.aborted) return;
      this.data = data;
      this.status.textContent = `${fmtInt(data.n)} events in this window · ${fmtInt(data.flows.n)} flows`;
      this.invalidate();
      if (this.stepsWanted) loadSteps(this);
    } catch (err) {
      if (err.name !== 'AbortError') this.status.textContent = `Error: ${err.message}`;
    } finally {
      if (this.pending === controller) {
        this.pending = null;
        this.root.dataset.loading = '0';
        this.root.dataset.fetches = String(this.client.fetches);
      }
    }
    if (this.query) this.scheduleSearch();
  }

  // ---- drawing ---------------------------------------------------------------------------
  invalidate() {
    if (this.frameScheduled) return;
    this.frameScheduled = true;
    requestAnimationFrame(() => this.frame());
  }

  frame() {
    this.frameScheduled = false;
    if (!this.canvas.isConnected || this.W === 0) return;
    const started = performance.now();
    const drawn = drawFrame(this.ctx, this);
    const ms = performance.now() - started;
    this.drawTimes.push(ms);
    if (this.drawTimes.length > 1000) this.drawTimes.splice(0, 500);
    this.drawCount += 1;
    this.root.dataset.drawCount = String(this.drawCount);
    this.root.dataset.drawn = String(drawn);
    this.root.dataset.flowsDrawn = String(this.flowsDrawn || 0);
    this.root.dataset.ticks = (this.tickLabels || []).join('|');
    this.flowNote.textContent = this.flowsCapped ? `showing the ${fmtInt(this.flowsDrawn)} longest of ${fmtInt(this.flowsCapped)} flows in view` : '';
  }

  resize() {
    const rect = this.scroller.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.W = Math.max(300, Math.floor(rect.width - (this.scroller.offsetWidth - this.scroller.clientWidth) - 2));
    this.H = Math.max(200, Math.floor(this.scroller.clientHeight));
    this.dpr = dpr;
    this.canvas.width = Math.round(this.W * dpr);
    this.canvas.height = Math.round(this.H * dpr);
    this.canvas.style.height = `${this.H}px`;
    this.canvas.style.width = `${this.W}px`;
    this.relayout();
    if (this.initialStep !== undefined) { // asked for by the address (Compare page links)
      const k = this.initialStep;
      this.initialStep = undefined;
      this.fitStep(k);
      return;
    }
    this.requestData();
  }

  relayout() {
    this.layout = buildLayout(this.structure, this.collapsed);
    this.spacer.style.height = `${Math.max(0, this.layout.height + AXIS_H - this.H)}px`;
    this.invalidate();
    if (this.structure.hosts && this.W) this.requestData(); // other tracks in view
  }

  // ---- selection -------------------------------------------------------------------------
  async selectEvent(brief, center = false) {
    this.selected = brief;
    this.box = null;
    this.invalidate();
    if (center && brief) {
      const { t0, t1 } = this.view;
      const span = t1 - t0;
      if (brief.dur_ns > span * 0.9) this.fitRange(brief.start_ns, brief.start_ns + brief.dur_ns, 0.2);
      else if (brief.start_ns < t0 || brief.start_ns + brief.dur_ns > t1) {
        const mid = brief.start_ns + brief.dur_ns / 2;
        this.setView(mid - span / 2, mid + span / 2);
      }
      revealLine(this, brief.line); // its host may be collapsed
      const y = this.layout.lineY[brief.line] + brief.depth * ROW_H;
      if (y < this.scrollY || y > this.scrollY + this.H - AXIS_H - ROW_H) this.scroller.scrollTop = Math.max(0, y - (this.H - AXIS_H) / 2);
    }
    if (!brief) { this.details.replaceChildren(keysHelp()); return; }
    try {
      const detail = await this.client.event(brief.event);
      if (this.selected !== brief) return;
      this.selected = { ...brief, ...detail };
      this.details.replaceChildren(eventDetails(detail, (f) => this.selectEvent(f, true), this.opStatsHref(detail)), keysHelp());
      this.root.dataset.selected = String(detail.event);
      this.invalidate();
    } catch (err) {
      this.details.replaceChildren(note(err.message, 'error'));
    }
  }

  async selectBox(box) {
    this.box = box;
    this.selected = null;
    const rows = [];
    for (const b of this.layout.bands) {
      if (b.kind !== 'track' || b.y + b.h <= box.y0 || b.y >= box.y1) continue;
      const top = this.layout.lineY[b.line];
      const d0 = Math.max(0, Math.floor((box.y0 - top) / ROW_H));
      const d1 = Math.min(b.rows - 1, Math.floor((box.y1 - top) / ROW_H));
      if (d1 >= d0) rows.push(`${b.line}:${d0}-${d1}`);
    }
    this.invalidate();
    if (!rows.length) return;
    try {
      const result = await this.client.select({ t0: Math.floor(Math.max(0, box.t0)), t1: Math.ceil(box.t1), rows: rows.join(',') });
      if (this.box !== box) return;
      this.details.replaceChildren(boxDetails(result, box.t0, box.t1), keysHelp());
      this.root.dataset.boxCount = String(result.count);
    } catch (err) {
      this.details.replaceChildren(note(err.message, 'error'));
    }
  }

  setMark(t0, t1) {
    this.mark = { t0: Math.min(t0, t1), t1: Math.max(t0, t1) };
    this.details.replaceChildren(markDetails(this.mark), keysHelp());
    this.root.dataset.mark = String(this.mark.t1 - this.mark.t0);
    this.invalidate();
  }

  /** Link to the event's op in op_stats (its table filtered to the name), when that tool exists. */
  opStatsHref(detail) {
    if (!this.page.hasTool || !this.page.hasTool('op_stats')) return null;
    const name = detail.display_name || detail.name;
    return this.page.href('op_stats', { filter: name });
  }

  // ---- search ----------------------------------------------------------------------------
  scheduleSearch() {
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.runSearch(), 120);
  }

  /** Search the whole trace for the query; matches in view are highlighted (_trace_toolbar.js). */
  runSearch() { return runSearch(this); }

  jumpToMatch(step) {
    const r = this.searchResults;
    if (!r || !r.event.length) return;
    this.matchIndex = ((this.matchIndex ?? -1) + step + r.event.length) % r.event.length;
    const i = this.matchIndex;
    this.selectEvent({ event: r.event[i], line: r.line[i], depth: r.depth[i], start_ns: r.start_ns[i], dur_ns: r.dur_ns[i] }, true);
  }

  // ---- input -----------------------------------------------------------------------------
  setMode(mode) {
    this.mode = mode;
    for (const b of this.modeButtons) b.setAttribute('aria-pressed', String(b.dataset.mode === mode));
    this.canvas.className = `tv-canvas mode-${mode}`;
  }

  /**
   * Wheel conventions of Perfetto: the wheel scrolls the tracks (natively), Ctrl/Cmd+wheel and
   * a trackpad pinch (which Chromium sends as a wheel event with ctrlKey) zoom at the pointer,
   * Shift+wheel and horizontal swipes pan. With wheelMode 'zoom' (XProf) the plain wheel zooms.
   */
  onWheel(e) {
    const px = e.offsetX;
    const horizontal = Math.abs(e.deltaX) > Math.abs(e.deltaY);
    const zoomKey = e.ctrlKey || e.metaKey;
    if (px < GUTTER && !zoomKey && !e.shiftKey) return; // scroll the tracks natively
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    if (e.shiftKey || (horizontal && !zoomKey)) {
      e.preventDefault();
      this.panPixels(((e.shiftKey ? e.deltaY : 0) + e.deltaX) * unit);
      return;
    }
    if (zoomKey || this.wheelMode === 'zoom') {
      e.preventDefault();
      // A pinch gives small deltas: zoom faster per unit than for a mouse wheel notch.
      const rate = zoomKey && Math.abs(e.deltaY) < 50 ? 100 : 400;
      this.zoom(Math.exp((-e.deltaY * unit) / rate), Math.max(px, GUTTER));
    }
    // Otherwise the scroller scrolls the tracks.
  }

  setWheelMode(mode) {
    this.wheelMode = mode;
    writeSetting(WHEEL_KEY, mode);
  }

  onPointerDown(e) {
    const px = e.offsetX;
    const py = e.offsetY;
    this.canvas.setPointerCapture(e.pointerId);
    this.scroller.focus({ preventScroll: true });
    if (px < GUTTER && py >= AXIS_H) {
      const band = bandAt(this.layout, py - AXIS_H + this.scrollY);
      if (band && (band.kind === 'section' || band.kind === 'host')) {
        if (this.collapsed.has(band.key)) this.collapsed.delete(band.key);
        else this.collapsed.add(band.key);
        this.relayout();
      }
      return;
    }
    const mode = py < AXIS_H ? 'timing' : this.mode;
    this.drag = { mode, x0: px, y0: py, x: px, y: py, t0: scaleOf(this).t(px), view: { ...this.view }, scroll: this.scrollY, moved: false };
  }

  onPointerMove(e) {
    const d = this.drag;
    if (!d) return;
    d.x = e.offsetX;
    d.y = e.offsetY;
    d.moved = d.moved || Math.abs(d.x - d.x0) + Math.abs(d.y - d.y0) > 3;
    if (!d.moved) return;
    const sc = scaleOf(this);
    if (d.mode === 'pan') {
      const dt = (d.x - d.x0) / sc.k;
      this.setView(d.view.t0 - dt, d.view.t1 - dt);
      this.scroller.scrollTop = d.scroll - (d.y - d.y0);
    } else if (d.mode === 'timing' || d.mode === 'zoom') {
      this.setMark(d.t0, sc.t(d.x));
    } else if (d.mode === 'select') {
      const y0 = d.y0 - AXIS_H + this.scrollY;
      const y1 = d.y - AXIS_H + this.scrollY;
      this.box = { t0: Math.min(d.t0, sc.t(d.x)), t1: Math.max(d.t0, sc.t(d.x)), y0: Math.min(y0, y1), y1: Math.max(y0, y1) };
      this.invalidate();
    }
  }

  onPointerUp(e) {
    const d = this.drag;
    this.drag = null;
    if (!d) return;
    if (!d.moved) {
      if (d.mode === 'select' || d.mode === 'timing') this.clickEvent(e.offsetX, e.offsetY, d.mode);
      return;
    }
    if (d.mode === 'zoom' && this.mark) {
      const { t0, t1 } = this.mark;
      this.mark = null;
      this.fitRange(t0, t1, 0);
    } else if (d.mode === 'select' && this.box) {
      this.selectBox(this.box);
    }
  }

  /** The counter band and its value under screen point (px, py), or null. */
  counterAt(px, py) {
    if (!this.data || px < GUTTER || py < AXIS_H) return null;
    const band = bandAt(this.layout, py - AXIS_H + this.scrollY);
    if (!band || band.kind !== 'counter') return null;
    const c = this.data.counters.find((x) => x.id === band.counter);
    if (!c) return null;
    const t = scaleOf(this).t(px);
    const j = counterIndexAt(c, t, this.data.t1);
    if (j < 0 || !(c.v[j] >= 0)) return { counter: c, band, t, value: null };
    return { counter: c, band, t, value: c.v[j], from: c.t[j], to: c.t[j] + (c.t.length > 1 ? c.t[1] - c.t[0] : 0) };
  }

  /** A tooltip with the name and duration of the event (or the counter value) under the pointer. */
  hover(e) {
    if (this.drag && this.drag.moved) { this.tooltip.hidden = true; return; }
    const cv = this.counterAt(e.offsetX, e.offsetY);
    const before = this.counterHover;
    this.counterHover = cv ? { t: cv.t, y: cv.band.y } : null;
    if (cv || before) this.invalidate();
    let text = '';
    if (cv) {
      text = `${cv.counter.name}\n${cv.value === null ? 'no value here' : counterValue(cv.counter, cv.value)} at ${fmtNs(cv.t - this.origin)}`;
    } else {
      const i = hitTest(this, e.offsetX, e.offsetY);
      if (i >= 0) {
        const d = this.data;
        text = `${d.names[d.name[i]]}\n${fmtNs(d.dur[i])} at ${fmtNs(d.start[i] - this.origin)}`;
      }
    }
    if (!text) { this.tooltip.hidden = true; return; }
    this.tooltip.textContent = text;
    this.tooltip.style.left = `${e.clientX + 14}px`;
    this.tooltip.style.top = `${e.clientY + 14}px`;
    this.tooltip.hidden = false;
  }

  clickEvent(px, py, mode) {
    const cv = mode === 'select' ? this.counterAt(px, py) : null;
    if (cv) {
      this.selected = null;
      this.details.replaceChildren(counterDetails(cv, counterValue, this.origin), keysHelp());
      this.root.dataset.counterValue = cv.value === null ? '' : String(cv.value);
      this.invalidate();
      return;
    }
    const i = hitTest(this, px, py);
    if (i < 0) { if (mode === 'select') this.selectEvent(null); return; }
    const d = this.data;
    const brief = { event: d.event[i], line: d.line[i], depth: d.depth[i], start_ns: d.start[i], dur_ns: d.dur[i] };
    if (mode === 'timing') this.setMark(brief.start_ns, brief.start_ns + brief.dur_ns);
    else this.selectEvent(brief);
  }

  /**
   * Keys work whenever the page has focus (listened on the window, before the shell): W/S zoom at
   * the pointer, A/D pan, 1-4 pick the mouse mode. The shell's 1-9 tool switching is off while
   * the viewer is open, so no single key leaves the view; ? lists the viewer's keys.
   */
  onKey(e) {
    if (!this.root.isConnected) { window.removeEventListener('keydown', this.keyListener, true); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'select' || tag === 'textarea') return;
    if (this.shortcuts && this.shortcuts.open) return; // the dialog handles its own keys
    const key = e.key.toLowerCase();
    const fast = e.shiftKey ? 3 : 1;
    const handled = {
      w: () => this.zoom(1.25 ** fast, this.mouseX), s: () => this.zoom(0.8 ** fast, this.mouseX),
      a: () => this.panPixels(-0.1 * fast * (this.W - GUTTER)), d: () => this.panPixels(0.1 * fast * (this.W - GUTTER)),
      1: () => this.setMode('select'), 2: () => this.setMode('pan'), 3: () => this.setMode('zoom'), 4: () => this.setMode('timing'),
      m: () => this.selected && this.setMark(this.selected.start_ns, this.selected.start_ns + this.selected.dur_ns),
      f: () => {
        const r = this.mark || (this.selected && { t0: this.selected.start_ns, t1: this.selected.start_ns + this.selected.dur_ns })
          || (this.box && { t0: this.box.t0, t1: this.box.t1 });
        if (r) this.fitRange(r.t0, r.t1);
      },
      '?': () => this.showShortcuts(),
      escape: () => { this.mark = null; this.box = null; this.selectEvent(null); },
    }[key] || (/^[5-9]$/.test(key) ? () => {} : null);
    if (!handled) return;
    e.preventDefault();
    e.stopPropagation(); // the shell would switch tools on digits and open its own help on ?
    handled();
  }

  showShortcuts() {
    if (!this.shortcuts) {
      this.shortcuts = shortcutsDialog();
      this.root.append(this.shortcuts);
    }
    this.shortcuts.showModal();
  }

  bind() {
    const c = this.canvas;
    c.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    c.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    c.addEventListener('pointermove', (e) => {
      this.mouseX = e.offsetX;
      this.onPointerMove(e);
      this.hover(e);
    });
    c.addEventListener('pointerleave', () => {
      this.tooltip.hidden = true;
      if (this.counterHover) { this.counterHover = null; this.invalidate(); }
    });
    c.addEventListener('pointerup', (e) => this.onPointerUp(e));
    window.addEventListener('keydown', this.keyListener, true);
    this.scroller.addEventListener('scroll', () => {
      this.scrollY = this.scroller.scrollTop;
      this.invalidate();
      if (this.structure.hosts) this.requestData();
    });
    const observer = new ResizeObserver(() => {
      if (!this.root.isConnected && this.W) {
        observer.disconnect();
        window.removeEventListener('keydown', this.keyListener, true);
        return;
      }
      this.resize();
    });
    observer.observe(this.scroller);
  }

  // ---- measurement (browser tests, benchmarks) ---------------------------------------------
  /** Frame-time probes (`window.stepscopeTrace.measurePan(...)`), see _trace_measure.js. */
  measurePan(frames = 120, fraction = 0.01) { return measurePan(this, frames, fraction); }

  measureZoom(frames = 120, factor = 1.04) { return measureZoom(this, frames, factor); }
}

export async function render(root, data, ctx) {
  ensureStyles();
  if (!data.events) {
    root.append(note('This trace has no events.', 'warn'));
    return;
  }
  const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'tv-canvas mode-select', 'aria-label': 'Timeline' }));
  const spacer = h('div', { class: 'tv-spacer' });
  const scroller = h('div', { class: 'tv-scroll', tabindex: '0', 'aria-label': 'Timeline; W S zoom, A D pan, ? shortcuts' }, canvas, spacer);
  const details = h('section', { class: 'card tv-details', 'aria-live': 'polite' }, keysHelp());
  const status = h('span', { class: 'tv-status' });
  const flowNote = h('span', { class: 'tv-flow-note muted' });
  const searchCount = h('span', { class: 'count' });
  const tooltip = h('div', { class: 'tooltip', hidden: true, role: 'tooltip' });
  const view = new TraceView(root, data, ctx, { canvas, spacer, scroller, details, status, searchCount, tooltip, flowNote });
  const handle = h('div', { class: 'tv-resize', role: 'separator', 'aria-orientation': 'vertical', title: 'Drag to resize the details pane' });
  const main = h('div', { class: 'tv-main' }, scroller, handle, details);
  bindResize(handle, main);
  view.summary = h('p', { class: 'loading' }, summaryOf(view));
  root.append(view.summary, toolbar(view), data.hosts ? h('div', { class: 'tv-toolbar' }, podControls(view, data, ctx)) : '', main, tooltip);
  root.dataset.loading = '1';
  // #/trace_viewer?...&step=N opens with step N in view (the Compare page links here)
  const wanted = new URLSearchParams(location.hash.split('?')[1] || '').get('step');
  initialSteps(view, wanted === null ? null : Number(wanted));
  view.bind();
  /** @type {any} */ (window).stepscopeTrace = view; // for the browser tests and the curious
}
