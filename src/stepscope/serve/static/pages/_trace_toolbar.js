// @ts-check
// Trace viewer toolbar (modes, steps, flows, wheel, time origin, search) and the small pieces
// of page state around the view: settings remembered in the browser, the resizable details pane.
import { fmtBytes, fmtInt, fmtNs, h } from '../util.js';
import { GUTTER } from './_trace_layout.js';

export const MODES = ['select', 'pan', 'zoom', 'timing'];

export function readSetting(key, fallback) {
  try { return localStorage.getItem(key) || fallback; } catch { return fallback; }
}

export function writeSetting(key, value) {
  try { localStorage.setItem(key, value); } catch { /* private mode: not remembered */ }
}

const PINS_KEY = 'stepscope.trace_viewer.pins.';

/** The tracks pinned on this run and host (remembered in the browser). */
export function readPins(key) {
  try { return JSON.parse(localStorage.getItem(PINS_KEY + key) || '[]'); } catch { return []; }
}

export function writePins(key, pins) {
  try {
    if (pins.length) localStorage.setItem(PINS_KEY + key, JSON.stringify(pins));
    else localStorage.removeItem(PINS_KEY + key);
  } catch { /* private mode: not remembered */ }
}

/** A counter's value in its unit. */
export function counterValue(c, v) {
  return c.unit === 'bytes' ? fmtBytes(v) : c.unit === 'percent' ? `${v.toFixed(1)}%` : String(v);
}

/** Dragging the handle between the timeline and the details pane sets the pane's width. */
export function bindResize(handle, main) {
  const saved = Number(readSetting('stepscope.trace_viewer.details_px', '0'));
  if (saved >= 240) main.style.setProperty('--tv-details-w', `${saved}px`);
  handle.addEventListener('pointerdown', (e) => {
    handle.setPointerCapture(e.pointerId);
    const right = main.getBoundingClientRect().right;
    const move = (m) => {
      const w = Math.max(240, Math.min(right - m.clientX, main.clientWidth - 400));
      main.style.setProperty('--tv-details-w', `${w}px`);
    };
    const up = () => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', up);
      writeSetting('stepscope.trace_viewer.details_px', String(parseInt(main.style.getPropertyValue('--tv-details-w'), 10) || 0));
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', up);
  });
}

/**
 * One row of controls above the timeline (it wraps on a narrow window): mouse modes, full
 * view, steps, event search, the track filter, the view options (flows, wheel, time origin)
 * in a menu, shortcuts.
 */
export function toolbar(view) {
  const modeButtons = MODES.map((m, i) => h('button', { type: 'button', dataset: { mode: m }, 'aria-pressed': String(m === 'select'),
    title: `${m[0].toUpperCase()}${m.slice(1)} (${i + 1})`, onclick: () => view.setMode(m) }, m[0].toUpperCase() + m.slice(1)));
  view.modeButtons = modeButtons;
  view.stepInput = h('input', { type: 'number', 'aria-label': 'Step number', value: '' });
  // filled by showSteps: one host's steps arrive after the first window
  view.stepBox = h('span', { hidden: true, class: 'tv-steps' });
  view.originBox = h('span', { hidden: true });
  const search = h('input', { type: 'search', class: 'filter', placeholder: 'Search events…', 'aria-label': 'Search events by name' });
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      if (search.value.trim() === view.query && view.searchResults) view.jumpToMatch(e.shiftKey ? -1 : 1);
      else { view.query = search.value.trim(); view.matchIndex = -1; view.jumpAfterSearch = true; view.runSearch(); }
    } else if (e.key === 'Escape') { search.value = ''; view.query = ''; view.runSearch(); }
  });
  view.searchInput = search;
  const tracks = h('input', { type: 'search', class: 'filter tv-track-filter', placeholder: 'Filter tracks…',
    'aria-label': 'Show only the tracks whose name (or section) holds this text', dataset: { control: 'tracks' },
    oninput: (e) => view.setTrackFilter(e.target.value) });
  const options = h('details', { class: 'tv-menu' },
    h('summary', { title: 'Flows, mouse wheel, time origin' }, 'View'),
    h('div', { class: 'tv-menu-body' },
      h('label', { title: 'auto: the selected event\'s flows and those near it (all flows when there are few)' }, 'Flows ',
        h('select', { 'aria-label': 'Flows', dataset: { control: 'flows' },
          onchange: (e) => { view.flowMode = e.target.value; view.invalidate(); e.target.blur(); } },
        h('option', { value: 'auto' }, 'auto'), h('option', { value: 'all' }, 'all'), h('option', { value: 'selected' }, 'selected event'))),
      h('label', { title: 'What the mouse wheel does over the timeline (Ctrl/Cmd+wheel always zooms, Shift+wheel pans)' }, 'Wheel ',
        h('select', { 'aria-label': 'Mouse wheel', dataset: { control: 'wheel' }, onchange: (e) => { view.setWheelMode(e.target.value); e.target.blur(); } },
          h('option', { value: 'scroll', selected: view.wheelMode === 'scroll' }, 'scrolls tracks (Perfetto)'),
          h('option', { value: 'zoom', selected: view.wheelMode === 'zoom' }, 'zooms (XProf)'))),
      view.originBox,
      h('p', { class: 'muted' }, 'Pin a track to the top: the pin at the right of its name.')));
  return h('div', { class: 'tv-toolbar' },
    h('span', { class: 'tv-modes', role: 'group', 'aria-label': 'Mouse mode' }, modeButtons),
    h('button', { type: 'button', class: 'tv-btn', onclick: () => view.setView(0, view.duration) }, 'Full view'),
    view.stepBox,
    h('span', { class: 'tv-search' }, search,
      h('button', { type: 'button', class: 'tv-btn', title: 'Previous match (Shift+Enter)', 'aria-label': 'Previous match', onclick: () => view.jumpToMatch(-1) }, '↑'),
      h('button', { type: 'button', class: 'tv-btn', title: 'Next match (Enter)', 'aria-label': 'Next match', onclick: () => view.jumpToMatch(1) }, '↓'),
      view.searchCount),
    tracks,
    options,
    h('button', { type: 'button', class: 'tv-btn', title: 'Keyboard and mouse shortcuts (?)', 'aria-label': 'Shortcuts', onclick: () => view.showShortcuts() }, '?'));
}

/** The step picker and the time-origin choice, shown once the view's steps are known (with
 * the structure on a multi-host view, from the steps endpoint after the first window on one
 * host's). */
export function showSteps(view) {
  const steps = view.structure.steps;
  const fitStep = () => {
    const i = steps.number.indexOf(Number(view.stepInput.value));
    view.fitStep(i >= 0 ? i : 0);
  };
  view.stepInput.value = steps.number.length ? String(steps.number[0]) : '';
  view.stepBox.hidden = view.originBox.hidden = !steps.number.length;
  if (!steps.number.length) return;
  view.stepBox.replaceChildren(
    h('button', { type: 'button', class: 'tv-btn', title: 'Previous step', 'aria-label': 'Previous step', onclick: () => view.fitStep((view.stepIndex ?? 1) - 1) }, '◀'),
    h('label', {}, 'Step ', view.stepInput),
    h('button', { type: 'button', class: 'tv-btn', dataset: { action: 'fit-step' }, title: 'Fit the view to this step', onclick: fitStep }, 'Fit'),
    h('button', { type: 'button', class: 'tv-btn', title: 'Next step', 'aria-label': 'Next step', onclick: () => view.fitStep((view.stepIndex ?? -1) + 1) }, '▶'));
  view.originBox.replaceChildren(h('label', { title: 'Where time labels count from' }, 'Time from ',
    h('select', { 'aria-label': 'Time origin', dataset: { control: 'origin' }, onchange: (e) => { view.setOrigin(e.target.value); e.target.blur(); } },
      h('option', { value: 'trace' }, 'trace start'), h('option', { value: 'step' }, 'step start'))));
}

/** The line above the toolbar: events, duration, steps, flows, sections or hosts. */
export function summaryOf(view, atSteps = false) {
  const data = view.structure;
  return `${fmtInt(data.events)} events over ${fmtNs(data.duration_ns)}${atSteps ? ' (opened at the steps: Full view shows all)' : ''}`
    + ` · ${view.stepsWanted ? 'finding steps' : `${fmtInt(data.steps.number.length)} steps`} · ${fmtInt(data.flows)} flows · `
    + (data.hosts ? `${data.hosts.length} hosts on one timeline (${data.align === 'start' ? 'profile starts at 0' : 'wall clock'})` : `${data.sections.length} sections`);
}

/**
 * The steps at the start: a multi-host structure has them (shown now, the address's step
 * fitted on the first layout); one host's come from `loadSteps` after the first window.
 * @param {number | null} wanted the step number the address asks for (`&step=N`)
 */
export function initialSteps(view, wanted) {
  view.wantedStep = wanted;
  if (view.stepsWanted) return;
  showSteps(view);
  const at = wanted === null ? -1 : view.structure.steps.number.indexOf(wanted);
  if (at >= 0) view.initialStep = at;
  else view.initialRange = stepsRange(view);
  view.root.dataset.steps = 'ready';
}

/** Below this share of the trace, the steps are where the trace viewer opens. */
const STEPS_SHARE_TO_OPEN_AT = 0.5;

/**
 * The time from the first step's start to the last one's end when the steps take less than
 * half the trace (a JAX trace of 4 steps in 10 ms after 9.7 s of start-up and compiling opened
 * as a nearly empty timeline, the steps a sliver at its right edge); null otherwise, or when
 * the reader has moved the view already. Full view shows the whole trace (decision 146).
 * @param {any} view
 * @returns {[number, number] | null}
 */
export function stepsRange(view) {
  const s = view.structure.steps;
  const n = s.number.length;
  if (!n || view.view.t0 !== 0 || view.view.t1 !== view.duration) return null;
  const a = s.start_ns[0];
  let b = a;
  for (let i = 0; i < n; i += 1) b = Math.max(b, s.start_ns[i] + s.dur_ns[i]);
  return b - a < STEPS_SHARE_TO_OPEN_AT * view.duration ? [a, b] : null;
}

/** One host's steps, asked for once the first window is in (the server finds them after
 * answering it): shown, and the address's step fitted. */
export async function loadSteps(view) {
  view.stepsWanted = false;
  try {
    view.structure.steps = await view.client.steps();
  } catch (err) {
    view.status.textContent = `Steps: ${err.message}`;
    return;
  }
  showSteps(view);
  if (view.summary) view.summary.textContent = summaryOf(view);
  const at = view.wantedStep === null ? -1 : view.structure.steps.number.indexOf(view.wantedStep);
  const range = at >= 0 ? null : stepsRange(view);
  if (at >= 0) view.fitStep(at);
  else if (range) view.fitRange(range[0], range[1]);
  if (range && view.summary) view.summary.textContent = summaryOf(view, true);
  view.root.dataset.steps = 'ready';
}

/** Runs the view's search query: totals in the count, matches in view for highlighting. */
export async function runSearch(view) {
  const q = view.query;
  if (!q) { view.matches = null; view.searchCount.textContent = ''; view.invalidate(); return; }
  const { t0, t1 } = view.view;
  const a = Math.max(0, Math.floor(t0));
  const b = Math.max(a + 1, Math.ceil(Math.min(t1, view.duration)));
  try {
    const r = await view.client.search({ q, limit: 200, t0: a, t1: b, res: Math.max(1, view.W - GUTTER) });
    if (q !== view.query) return;
    view.matches = r.window;
    view.searchResults = r.results;
    view.searchCount.textContent = `${fmtInt(r.total)} matches · ${fmtInt(r.window_total)} in view`;
    view.searchCount.title = `${fmtInt(r.total)} events match; ${fmtInt(r.window_total)} of them in the view`;
    view.root.dataset.matches = String(r.total);
    view.invalidate();
    // Enter on a new query goes to its first match at once (zoomed so that it can be seen)
    if (view.jumpAfterSearch) { view.jumpAfterSearch = false; if (r.total) view.jumpToMatch(1); }
  } catch (err) {
    view.searchCount.textContent = err.message;
  }
}
