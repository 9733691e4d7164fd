// @ts-check
// A run the flight recorder saved (docs/flight_recorder.md): the banner every page of it shows
// (why it was saved, the trigger step in the trace viewer) and the recorder's step-history
// chart (every step it still held, long after their events were gone), from api/recorder.
import { chartSvg, niceTicks } from './charts.js';
import { banner, card, fmtInt, fmtNs, getJSON, h, note, query, svg } from './util.js';

/** How each trigger is named on the page. */
const TRIGGERS = /** @type {Record<string, string>} */ ({
  slow_step: 'a slow step', exception: 'an exception', hang: 'a hang', signal: 'a signal (SIGUSR1)',
  remote: 'a remote request', peer: 'another rank\u2019s trigger', user: 'the program (recorder.save)',
});

/**
 * What /api/runs says of a run the recorder saved (`steps`: the first and last kept,
 * `steps_before`: the steps the recorder saw before them; null when the marker does not say).
 * @typedef {{trigger: string, reason: string, host: string, step: number | null,
 *   steps?: number[] | null, steps_before?: number | null}} SavedBy
 */

/**
 * Where the run begins in the program, when the recorder saved it mid-run (decision 530): its
 * first steps are no warm-up, and the page must not read as if the program started there.
 * @param {SavedBy} saved
 */
function midRun(saved) {
  const kept = saved.steps;
  const before = saved.steps_before;
  if (!kept || !before) return '';
  return ` It holds the loop\u2019s steps ${kept[0]} to ${kept[1]}, recorded mid-run (the recorder saw ${fmtInt(before)} steps before them): its first steps are no warm-up.`;
}

/**
 * Where a hang's thread was (the marker's `hung`, `stepscope.model.hung_stack`): its innermost
 * own frame, as `stepscope report` lists them.
 * @param {any} saved
 */
function hungAt(saved) {
  const hung = saved.hung;
  if (!hung || !hung.frames || !hung.frames.length) return '';
  const f = hung.frames[hung.frames.length - 1];
  const file = String(f.file).split(/[\\/]/).pop();
  const where = hung.in_fetch ? 'fetching the next batch for stepscope.steps (the loader is what hangs)' : 'in the step';
  return ` Thread \u2018${hung.thread}\u2019 was ${where}, at ${file}:${f.line} in ${f.function}${f.code ? `: ${f.code}` : ''}.`;
}

/**
 * The trigger step as the page names it: a hang's step is still open when the ring is saved,
 * so the run's last step is the one before it.
 * @param {string} trigger
 * @param {number} step
 */
function triggerStepText(trigger, step) {
  return trigger === 'hang' ? `the last step before the hang, ${step}` : `the trigger step ${step}`;
}

/**
 * The banner of a run the flight recorder saved: its trigger and reason, a link to the trigger
 * step in the trace viewer, and one to the step history (on the overview).
 * @param {SavedBy} saved
 * @param {(tool: string, options?: Record<string, string | number>) => string} href the run's pages
 * @param {string} tool the page shown
 */
export function recorderBanner(saved, href, tool) {
  const actions = [];
  if (saved.step !== null && saved.step !== undefined && tool !== 'trace_viewer') { // (there: opened at it)
    actions.push(h('a', { href: href('trace_viewer', { step: saved.step }), dataset: { link: 'trigger-step' } },
      `Step ${saved.step} in the trace viewer${saved.trigger === 'hang' ? ' (the last before the hang)' : ''}`));
  }
  if (tool !== 'overview_page') {
    actions.push(h('a', { href: href('overview_page'), dataset: { link: 'step-history' } }, 'Step history'));
  }
  return banner({ kind: 'recorder', severity: saved.trigger === 'user' ? 'info' : 'warn',
    title: `Saved by the flight recorder on ${TRIGGERS[saved.trigger] || saved.trigger}:`,
    body: [h('span', { dataset: { field: 'saved_by.reason' } }, saved.reason),
      // said where the steps are summed up (a taller banner would shrink the trace viewer)
      h('span', { dataset: { part: 'mid-run' } }, tool === 'overview_page' ? midRun(saved) : ''),
      h('span', { dataset: { part: 'hung' } }, tool === 'overview_page' ? hungAt(saved) : '')], actions });
}

const W = 960;
const H = 200;
const M = { top: 16, right: 16, bottom: 34, left: 64 };
const BUCKETS = W - M.left - M.right; // one column of the chart per bucket of steps

/**
 * Step durations as columns of the chart: each bucket's shortest and longest step (a slow
 * step stays visible among 100,000).
 * @param {number[]} steps
 * @param {number[]} durs
 */
function buckets(steps, durs) {
  const n = steps.length;
  const per = Math.max(1, Math.ceil(n / BUCKETS));
  const out = [];
  for (let i = 0; i < n; i += per) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let j = i; j < Math.min(n, i + per); j += 1) {
      lo = Math.min(lo, durs[j]);
      hi = Math.max(hi, durs[j]);
    }
    out.push({ first: steps[i], last: steps[Math.min(n, i + per) - 1], lo, hi });
  }
  return out;
}

/**
 * The recorder's step history: each step's duration by step number, the steps the run kept
 * shaded, the trigger step marked.
 * @param {{step_num: number[], dur_ns: number[]}} history
 * @param {any} marker the recorder's marker (`steps`: first and last kept)
 * @param {number | null} trigger the trigger step
 */
export function stepHistoryChart(history, marker, trigger) {
  const steps = history.step_num;
  const durs = history.dur_ns.map((d) => d / 1e6);
  const cols = buckets(steps, durs);
  const x0 = steps[0];
  const x1 = Math.max(steps[steps.length - 1], x0 + 1);
  const ticks = niceTicks(Math.max(...durs, 1e-3));
  const top = ticks[ticks.length - 1];
  const sx = (/** @type {number} */ v) => M.left + ((v - x0) / (x1 - x0)) * (W - M.left - M.right);
  const sy = (/** @type {number} */ v) => M.top + (1 - v / top) * (H - M.top - M.bottom);
  const root = chartSvg(W, H, { role: 'img', 'aria-label': 'Step time of every step the flight recorder held', dataset: { chart: 'step_history' } });
  const kept = Array.isArray(marker.steps) ? marker.steps : null;
  if (kept) {
    root.append(svg('rect', { class: 'kept', x: sx(kept[0]), y: M.top, width: Math.max(2, sx(kept[1]) - sx(kept[0])),
      height: H - M.top - M.bottom, 'data-tip': `Steps ${kept[0]} to ${kept[1]}: kept with their events` }));
  }
  for (const t of ticks) {
    root.append(svg('line', { x1: M.left, x2: W - M.right, y1: sy(t), y2: sy(t), class: 'grid' }),
      svg('text', { x: M.left - 6, y: sy(t) + 4, 'text-anchor': 'end', class: 'axis' }, `${t} ms`));
  }
  for (const s of niceTicks(x1 - x0, 6).filter((d) => d <= x1 - x0).map((d) => x0 + d)) {
    root.append(svg('text', { x: sx(s), y: H - M.bottom + 16, 'text-anchor': 'middle', class: 'axis' }, fmtInt(Math.round(s))));
  }
  root.append(svg('text', { x: (W + M.left - M.right) / 2, y: H - 2, 'text-anchor': 'middle', class: 'axis' }, 'Step'));
  const spikes = cols.map((c) => `M${sx(c.first).toFixed(1)} ${sy(c.lo).toFixed(1)} V${Math.min(sy(c.hi), sy(c.lo) - 1).toFixed(1)}`).join(' ');
  const line = cols.map((c, i) => `${i ? 'L' : 'M'}${sx(c.first).toFixed(1)} ${sy(c.hi).toFixed(1)}`).join(' ');
  root.append(svg('path', { d: line, class: 'history-line', fill: 'none' }),
    svg('path', { d: spikes, class: 'history-range', fill: 'none' }));
  if (trigger !== null && trigger >= x0 && trigger <= x1) {
    const k = steps.indexOf(trigger);
    root.append(svg('line', { class: 'trigger', x1: sx(trigger), x2: sx(trigger), y1: M.top, y2: H - M.bottom }),
      svg('text', { class: 'trigger-label', x: Math.min(sx(trigger) + 4, W - M.right - 120), y: M.top + 10 },
        `${marker && marker.trigger === 'hang' ? 'before the hang' : 'trigger'}: step ${trigger}${k >= 0 ? ` (${fmtNs(history.dur_ns[k])})` : ''}`));
  }
  return root;
}

/**
 * The step-history card of a recorder run (filled when api/recorder answers).
 * @param {string} run
 * @param {string} host the host shown (ALL_HOSTS: the host the recorder saved first)
 */
export function stepHistoryCard(run, host) {
  const body = h('div', {}, h('p', { class: 'loading' }, 'Loading the step history…'));
  const el = card('Step history (flight recorder)', body);
  el.dataset.card = 'step_history';
  const wanted = host === 'ALL_HOSTS' ? '' : host;
  getJSON(`api/recorder?${query({ run, host: wanted })}`).then((rec) => {
    const history = rec.history;
    if (!history || !history.step_num.length) {
      body.replaceChildren(note('The recorder\u2019s step history (its .recorder_steps.json) is missing or empty.', 'warn'));
      return;
    }
    const n = history.step_num.length;
    body.replaceChildren(stepHistoryChart(history, rec.marker, rec.trigger_step),
      h('p', { class: 'muted' }, `${fmtInt(n)} steps the recorder held on ${rec.host}, by step number; shaded: the steps this run kept with their events`
        + `${rec.trigger_step !== null ? `; red: ${triggerStepText(rec.marker.trigger, rec.trigger_step)}` : ''}. Each column is the shortest to the longest step it covers.`));
    el.dataset.steps = String(n);
  }).catch((err) => body.replaceChildren(note(err.message, 'error')));
  return el;
}
