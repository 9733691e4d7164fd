// @ts-check
// Trace viewer: a canvas timeline of every event, fed by level-of-detail windows from the
// server (api/tool/trace_viewer/window). The view is redrawn from the last window while the
// next one (3x the visible span, debounced) is on its way, so panning never waits.
import { fmtInt, h, note, pageStyle } from '../util.js';
import { TraceClient } from './_trace_data.js';
import { drawFrame, readTheme, scaleOf } from './_trace_draw.js';
import { AXIS_H, GUTTER, ROW_H, buildLayout, trackKey } from './_trace_layout.js';
import { bindInput, onKey } from './_trace_input.js';
import { measurePan, measureZoom } from './_trace_measure.js';
import { initialCollapsed, podControls, podParams, revealLine, tracksNear } from './_trace_pod.js';
import { boxDetails, eventDetails, markDetails, shortcutsDialog } from './_trace_panel.js';
import { bindResize, initialSteps, loadSteps, readPins, readSetting, runSearch, summaryOf, toolbar, writePins, writeSetting } from './_trace_toolbar.js';

const MAX_RES = 16384;
const MIN_SPAN_NS = 10;
const WHEEL_KEY = 'stepscope.trace_viewer.wheel';
const FETCH_DELAY_MS = 60;
const MATCH_MIN_PX = 24; // a search match is zoomed to at least this width

const ensureStyles = () => pageStyle('trace_viewer', 'trace_viewer.css');

/**
 * @typedef {object} TraceElements the page's elements the view draws into
 * @property {HTMLCanvasElement} canvas
 * @property {HTMLElement} spacer
 * @property {HTMLElement} scroller
 * @property {HTMLElement} details the details pane's body
 * @property {HTMLElement} drawer the details pane (beside the timeline, or over its right edge)
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
    this.drawer = els.drawer;
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
    /** @type {[number, number] | null} */ this.initialRange = null; // set by initialSteps
    /** @type {HTMLElement | undefined} */ this.summary = undefined; // the line above the toolbar
    /** @type {HTMLElement[]} */ this.modeButtons = [];
    /** @type {string[] | undefined} */ this.tickLabels = undefined;
    /** @type {number | undefined} */ this.flowsDrawn = undefined;
    /** @type {number | undefined} */ this.flowsCapped = undefined;
    /** @param {KeyboardEvent} e */
    this.keyListener = (e) => onKey(this, e);
    this.root = root;
    this.structure = structure;
    this.client = new TraceClient(ctx.run, ctx.host, structure.hosts ? podParams(ctx) : {});
    this.duration = Math.max(structure.duration_ns, 1);
    this.view = { t0: 0, t1: this.duration };
    this.collapsed = initialCollapsed(structure); // host bands of a multi-host view
    this.pinKey = `${ctx.run}\u0000${ctx.host}`;
    this.pinned = new Set(readPins(this.pinKey)); // tracks kept at the top (`line:N`, `counter:N`)
    this.trackFilter = '';
    this.theme = readTheme();
    /** @type {any} */ this.hoverBand = null; // the gutter's track under the pointer (its pin shows)
    this.layout = buildLayout(structure, this.collapsed, this.choice());
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
      if (hit !== this.data) { this.data = hit; this.client.shown = hit; this.invalidate(); }
      return;
    }
    clearTimeout(this.fetchTimer);
    this.root.dataset.loading = '1'; // from now: a fetch is queued (tests wait on it too)
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
      this.client.shown = data;
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
    if (this.initialRange) { // the steps, when they are a small part of the trace
      const [a, b] = this.initialRange;
      this.initialRange = null;
      if (this.summary) this.summary.textContent = summaryOf(this, true);
      this.fitRange(a, b);
      return;
    }
    this.requestData();
  }

  /** What the reader chose of the layout: pinned tracks and the track filter. */
  choice() {
    return { pinned: this.pinned, filter: this.trackFilter };
  }

  relayout() {
    this.layout = buildLayout(this.structure, this.collapsed, this.choice());
    this.root.dataset.pinned = [...this.pinned].join(' ');
    this.root.dataset.tracks = String(this.layout.bands.filter((b) => b.kind === 'track' || b.kind === 'counter').length);
    this.spacer.style.height = `${Math.max(0, this.layout.height + AXIS_H - this.H)}px`;
    this.invalidate();
    if (this.structure.hosts && this.W) this.requestData(); // other tracks in view
  }

  /** Pins a track (or counter) to the top of the timeline, or unpins it; remembered per run. */
  togglePin(band) {
    const key = trackKey(band);
    if (this.pinned.has(key)) this.pinned.delete(key); else this.pinned.add(key);
    writePins(this.pinKey, [...this.pinned]);
    this.relayout();
  }

  setTrackFilter(text) {
    this.trackFilter = text;
    this.relayout();
  }

  // ---- details pane --------------------------------------------------------------------------
  /** Shows `nodes` in the details pane, opening it. */
  showDetails(...nodes) {
    this.details.replaceChildren(...nodes);
    this.setDrawer(true);
  }

  setDrawer(open) {
    const was = !this.drawer.hidden;
    this.drawer.hidden = !open;
    this.drawer.parentElement?.classList.toggle('details-open', open);
    this.root.dataset.details = open ? 'open' : 'closed';
    if (was !== open) requestAnimationFrame(() => this.resize()); // beside: the timeline's width changes
  }

  // ---- selection -------------------------------------------------------------------------
  async selectEvent(brief, center = false) {
    this.selected = brief;
    this.box = null;
    this.invalidate();
    if (center && brief) {
      this.bringIntoView(brief);
      revealLine(this, brief.line); // its host may be collapsed
      const ly = this.layout.lineY[brief.line];
      const y = ly + brief.depth * ROW_H;
      const P = this.layout.pinnedH;
      const hidden = ly >= P && (y < this.scrollY + P || y > this.scrollY + this.H - AXIS_H - ROW_H);
      if (hidden) this.scroller.scrollTop = Math.max(0, y - P - (this.H - AXIS_H - P) / 2);
    }
    if (!brief) { this.setDrawer(false); return; }
    try {
      const detail = await this.client.event(brief.event);
      if (this.selected !== brief) return;
      this.selected = { ...brief, ...detail };
      this.showDetails(eventDetails(detail, (f) => this.selectEvent(f, true), this.opStatsHref(detail)));
      this.root.dataset.selected = String(detail.event);
      this.invalidate();
    } catch (err) {
      this.showDetails(note(err.message, 'error'));
    }
  }

  /**
   * Moves the view to an event (a search match, a flow's other end): centred, and zoomed in
   * until it is at least MATCH_MIN_PX wide (out, when it is wider than the view); the view's
   * span is kept when the event is wide enough already.
   */
  bringIntoView(brief) {
    const { t0, t1 } = this.view;
    const span = t1 - t0;
    const plotW = Math.max(1, this.W - GUTTER);
    const end = brief.start_ns + brief.dur_ns;
    if (brief.dur_ns > span * 0.9) { this.fitRange(brief.start_ns, end, 0.2); return; }
    const mid = brief.start_ns + brief.dur_ns / 2;
    const narrow = brief.dur_ns > 0 && (brief.dur_ns * plotW) / span < MATCH_MIN_PX;
    // a narrow event gets a tenth of the plot (never less than MATCH_MIN_PX, nor under 10 ns)
    const want = narrow ? Math.max(MIN_SPAN_NS, Math.min(span, (brief.dur_ns * plotW) / Math.max(MATCH_MIN_PX, plotW / 10))) : span;
    if (narrow || brief.start_ns < t0 || end > t1) this.setView(mid - want / 2, mid + want / 2);
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
      this.showDetails(boxDetails(result, box.t0, box.t1));
      this.root.dataset.boxCount = String(result.count);
    } catch (err) {
      this.showDetails(note(err.message, 'error'));
    }
  }

  setMark(t0, t1) {
    this.mark = { t0: Math.min(t0, t1), t1: Math.max(t0, t1) };
    this.showDetails(markDetails(this.mark));
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

  setWheelMode(mode) {
    this.wheelMode = mode;
    writeSetting(WHEEL_KEY, mode);
  }

  showShortcuts() {
    if (!this.shortcuts) {
      this.shortcuts = shortcutsDialog();
      this.root.append(this.shortcuts);
    }
    this.shortcuts.showModal();
  }

  bind() { bindInput(this); }

  // ---- measurement (browser tests, benchmarks) ---------------------------------------------
  /** Frame-time probes (`window.stepscopeTrace.measurePan(...)`), see _trace_measure.js. */
  measurePan(frames = 120, fraction = 0.01) { return measurePan(this, frames, fraction); }

  measureZoom(frames = 120, factor = 1.04) { return measureZoom(this, frames, factor); }
}

/** The timeline's height: down to the window's bottom edge (the page does not scroll). */
function fitHeight(scroller, drawer) {
  const top = scroller.getBoundingClientRect().top;
  const height = `${Math.max(240, Math.floor(window.innerHeight - top - 10))}px`;
  scroller.style.height = height;
  drawer.style.maxHeight = height;
}

export async function render(root, data, ctx) {
  await ensureStyles();
  if (!data.events) {
    root.append(note('This trace has no events.', 'warn'));
    return;
  }
  root.classList.add('tv-page');
  const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'tv-canvas mode-select', 'aria-label': 'Timeline' }));
  const spacer = h('div', { class: 'tv-spacer' });
  const scroller = h('div', { class: 'tv-scroll', tabindex: '0', 'aria-label': 'Timeline; W S zoom, A D pan, ? shortcuts' }, canvas, spacer);
  const details = h('div', { class: 'tv-details-body', 'aria-live': 'polite' });
  const status = h('span', { class: 'tv-status' });
  const flowNote = h('span', { class: 'tv-flow-note muted' });
  const searchCount = h('span', { class: 'count', 'aria-live': 'polite' });
  const tooltip = h('div', { class: 'tooltip', hidden: true, role: 'tooltip' });
  // The details of a selection: beside the timeline on a wide window (the handle between them
  // resizes), over the timeline's right edge otherwise; closed until something is selected.
  const close = h('button', { type: 'button', class: 'tv-close', 'aria-label': 'Close the details', title: 'Close (Esc)' }, '×');
  const drawer = h('aside', { class: 'card tv-details', 'aria-label': 'Details', hidden: true }, close, details);
  const view = new TraceView(root, data, ctx, { canvas, spacer, scroller, details, drawer, status, searchCount, tooltip, flowNote });
  close.addEventListener('click', () => { view.mark = null; view.box = null; view.selectEvent(null); view.invalidate(); });
  const handle = h('div', { class: 'tv-resize', role: 'separator', 'aria-orientation': 'vertical', title: 'Drag to resize the details pane' });
  const main = h('div', { class: 'tv-main', dataset: { details: 'closed' } }, scroller, handle, drawer);
  bindResize(handle, main);
  view.summary = h('span', { class: 'tv-summary' }, summaryOf(view));
  const bar = toolbar(view);
  bar.append(h('span', { class: 'tv-status-line' }, view.summary, h('br'), status, ' ', flowNote));
  root.append(bar, data.hosts ? h('div', { class: 'tv-toolbar' }, podControls(view, data, ctx)) : '', main, tooltip);
  root.dataset.loading = '1';
  root.dataset.details = 'closed';
  // #/trace_viewer?...&step=N opens with step N in view (the Compare page and a flight
  // recorder run's banner link here)
  // (and a flight recorder run opens at its trigger step)
  const wanted = new URLSearchParams(location.hash.split('?')[1] || '').get('step');
  const trigger = ctx.savedBy && ctx.savedBy.step !== null ? ctx.savedBy.step : null;
  initialSteps(view, wanted === null ? trigger : Number(wanted));
  view.bind();
  const fit = () => { if (root.isConnected) fitHeight(scroller, drawer); else window.removeEventListener('resize', fit); };
  window.addEventListener('resize', fit);
  requestAnimationFrame(fit); // once the page is in the document
  new ResizeObserver(fit).observe(bar); // the toolbar grows when the steps arrive, or wraps
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const retheme = () => { view.theme = readTheme(); view.invalidate(); };
  dark.addEventListener('change', retheme);
  /** @type {any} */ (window).stepscopeTrace = view; // for the browser tests and the curious
}
