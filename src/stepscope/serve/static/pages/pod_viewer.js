// @ts-check
// Pod viewer: a step slider, one stacked column of step-time categories per worker, a details
// card per worker, the slowest worker of the step flagged (none when the workers are even).
// Fields: docs/tools/pod_viewer.md.
import { stackedBarChart } from '../charts.js';
import { dataTable } from '../table.js';
import { card, fmtInt, fmtMs, h, note, num } from '../util.js';
import { categoriesFor } from './_common.js';
import { ensureStyles, exportCsv } from './_gpu_tools.js';

// What bounds a step (the overview's Ranks table's columns): `bound_ms` keys and their labels.
const BOUND = [['input', 'Input'], ['compute', 'Compute'], ['host', 'Python / host'], ['collectives', 'Collectives']];

function workerCard(w, j, stepIndex, cats) {
  const rows = cats.map((c) => h('tr', {},
    h('td', {}, h('span', { class: 'swatch', style: { background: c.color } }), c.label),
    h('td', { class: 'numeric' }, num(w.breakdown_ms[c.key], fmtMs(w.breakdown_ms[c.key]), `steps.${stepIndex}.workers.${j}.breakdown_ms.${c.key}`))));
  // A wait no op covers (the loop's on a Python batch iterator) is "All others" in XProf's
  // categories and input by what bounds the step: both shown, each named.
  const bound = w.bound_ms ? h('p', { class: 'pod-bound', dataset: { bound: 'step' } }, 'What bounds it: ',
    ...BOUND.flatMap(([key, label], k) => [k ? ' · ' : '', `${label.toLowerCase()} `,
      num(w.bound_ms[key], fmtMs(w.bound_ms[key]), `steps.${stepIndex}.workers.${j}.bound_ms.${key}`)])) : null;
  return h('section', { class: `card${w.is_slowest ? ' slowest' : ''}`, dataset: { worker: w.host } },
    h('h2', {}, w.host, w.is_slowest ? h('span', { class: 'badge badge-bad', style: { marginLeft: '8px' } }, 'slowest') : null),
    h('p', {}, 'Step time ', num(w.duration_ms, fmtMs(w.duration_ms), `steps.${stepIndex}.workers.${j}.duration_ms`),
      ' · bottleneck: ', h('strong', {}, (cats.find((c) => c.key === w.bottleneck) || {}).label || w.bottleneck)),
    h('p', { class: 'muted' }, w.step_name),
    bound,
    h('table', { class: 'breakdown', 'aria-label': "XProf's categories" }, h('tbody', {}, rows)));
}

// Host x step heat map on a canvas (a pod has up to thousands of hosts): the colour is the time
// a host is late against the median host (its own work, waits excluded); a click picks the step.
// Hosts are named at the left and steps along the top (every n-th when they are many), and a
// legend gives the colour scale.
const NO_DATA = '#bdc1c6';
const lateColor = (t) => `rgb(255, ${Math.round(238 - 183 * t)}, ${Math.round(232 - 197 * t)})`; // on time: a pale tint

function heatMap(heat, onStep) {
  const hosts = heat.hosts.length, steps = heat.steps.length;
  const cell = Math.max(2, Math.min(40, Math.floor(900 / Math.max(steps, 1))));
  const row = Math.max(2, Math.min(22, Math.floor(600 / Math.max(hosts, 1))));
  const canvas = h('canvas', { width: String(steps * cell), height: String(hosts * row), class: 'pod-heat',
    role: 'img', 'aria-label': `Time late per host (${hosts}) and step (${steps}); click a cell for its step` });
  let max = 0;
  for (const r of heat.late_ms) for (const v of r) if (v !== null && v > max) max = v;
  // A canvas always has a 2D context (null only after another context type was taken).
  const g = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  g.fillStyle = '#dadce0'; // the lines between cells
  g.fillRect(0, 0, canvas.width, canvas.height);
  for (let i = 0; i < hosts; i++) {
    for (let k = 0; k < steps; k++) {
      const v = heat.late_ms[i][k];
      g.fillStyle = v === null ? NO_DATA : lateColor(Math.max(0, v) / (max || 1));
      g.fillRect(k * cell, i * row, cell - (cell > 6 ? 1 : 0), row - (row > 6 ? 1 : 0));
    }
  }
  const at = (e) => {
    const box = canvas.getBoundingClientRect();
    const k = Math.floor((e.clientX - box.left) * canvas.width / box.width / cell);
    const i = Math.floor((e.clientY - box.top) * canvas.height / box.height / row);
    return i >= 0 && i < hosts && k >= 0 && k < steps ? [i, k] : null;
  };
  canvas.addEventListener('mousemove', (e) => {
    const p = at(e);
    canvas.title = p ? `${heat.hosts[p[0]]}, step ${heat.steps[p[1]]}: step ${fmtMs(heat.step_ms[p[0]][p[1]])}, `
      + `late ${fmtMs(heat.late_ms[p[0]][p[1]])}, waiting ${fmtMs(heat.wait_ms[p[0]][p[1]])}` : '';
  });
  canvas.addEventListener('click', (e) => { const p = at(e); if (p) onStep(p[1]); });
  // labels: as many as fit (one per 16 px of rows, one per 36 px of columns)
  const hostEvery = Math.max(1, Math.ceil(16 / row));
  const stepEvery = Math.max(1, Math.ceil(36 / cell));
  const hostLabels = h('div', { class: 'pod-heat-hosts', style: { height: `${hosts * row}px` } },
    heat.hosts.map((name, i) => (i % hostEvery ? null : h('span', { style: { top: `${i * row}px`, height: `${row * hostEvery}px`,
      lineHeight: `${Math.min(row * hostEvery, 18)}px` }, title: name }, name))));
  const stepLabels = h('div', { class: 'pod-heat-steps', style: { width: `${steps * cell}px` } },
    heat.steps.map((n, k) => (k % stepEvery ? null : h('span', { style: { left: `${k * cell}px`, width: `${cell * stepEvery}px` } }, String(n)))));
  const legend = h('p', { class: 'pod-heat-legend muted' }, 'Late against the median worker: ',
    h('span', { class: 'pod-heat-scale', style: { background: `linear-gradient(to right, ${lateColor(0)}, ${lateColor(1)})` } }),
    ` 0 to ${fmtMs(max)} · `, h('span', { class: 'swatch', style: { background: NO_DATA } }), 'no data');
  return h('figure', { class: 'pod-heat-map', dataset: { chart: 'pod_heat' } },
    h('div', { class: 'pod-heat-grid' }, h('span', { class: 'pod-heat-corner muted' }, 'worker ↓ step →'), stepLabels, hostLabels, canvas),
    legend);
}

function stragglerCard(data) {
  const list = data.stragglers || [];
  const byArrival = data.straggler_rule === 'collective arrival';
  const clock = data.clock ? note(data.clock) : null;
  // What held every worker alike (every one waiting for a core, a collective stalled after
  // all arrived): beside "No straggler", which alone read as a job with nothing holding it.
  const alike = (data.held_alike || []).map((t) => note(t, 'warn'));
  if (!list.length) {
    const none = byArrival
      ? 'No straggler: no worker arrived last at its collectives repeatedly (by 10% of the median worker\'s own time in 3 or more steps, and in 75% of the steps or by 20%).'
      : 'No straggler: every worker\'s own work (step time minus waiting in collectives) is within 10% of the median worker\'s in every step.';
    return card('Stragglers', [...alike, note(none), clock]);
  }
  // The explanation names the worker, its late steps and why ("w1 is late at steps 0-1, 3,
  // ... from input"): the worker in bold, each said once (a prefix of the steps and the
  // reason said the 28 steps' ranges twice in a row).
  const item = (s) => (s.explanation.startsWith(`${s.host} `)
    ? [h('strong', {}, s.host), s.explanation.slice(s.host.length)]
    : [h('strong', {}, s.host), ` — ${s.reason_label.toLowerCase()}: `, s.explanation]);
  return card('Stragglers', [...alike, h('ul', { class: 'pod-stragglers' }, list.map((s) => h('li', { dataset: { host: s.host } },
    ...item(s)))),
  note(byArrival ? 'Found by collective arrival: the same collective matched on every worker, the last to arrive named.'
    : 'Found by own time: no collectives to match across workers.'), clock]);
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const steps = data.steps || [];
  if (!steps.length) {
    root.append(note('No steps in this run: the pod viewer compares workers step by step.'));
    return;
  }
  const cats = categoriesFor((data.categories || []).map((c) => c.key));
  const view = h('div', { class: 'pod-view' });
  const label = h('output', { id: 'pod-step-label' });
  const slider = h('input', { type: 'range', id: 'pod-step', min: '0', max: String(steps.length - 1), value: '0',
    'aria-label': 'Step', oninput: (e) => draw(Number(e.target.value)) });
  function draw(i) {
    const step = steps[i];
    label.textContent = `Step ${step.step_num} (${i + 1} of ${steps.length})`;
    const present = step.workers.map((w, j) => [w, j]).filter(([w]) => w);
    const chart = stackedBarChart({
      series: cats,
      bars: present.map(([w]) => ({ label: w.host, values: w.breakdown_ms,
        tip: `${w.host}: ${fmtMs(w.duration_ms)}${w.is_slowest ? ' (slowest)' : ''}` })),
      title: `Step ${step.step_num}: step time per worker (XProf's categories)`, unit: 'ms',
    });
    const spread = num(step.spread_ms, fmtMs(step.spread_ms), `steps.${i}.spread_ms`);
    // No slowest worker when all took the same time (or one worker ran the step).
    const who = step.slowest_worker
      ? [': slowest worker ', h('strong', { id: 'pod-slowest' }, step.slowest_worker), ', spread ', spread]
      : [': ', h('strong', { id: 'pod-even' }, present.length > 1 ? 'the workers are even' : 'one worker'),
        ' (spread ', spread, ')'];
    view.replaceChildren(
      card(['Step ', num(step.step_num, String(step.step_num), `steps.${i}.step_num`), ...who], chart),
      h('div', { class: 'pod-cards' }, present.map(([w, j]) => workerCard(w, j, i, cats))));
    view.dataset.step = String(step.step_num);
  }
  // The worker's figures by what bounds its steps, as the overview's Ranks table gives them
  // (`bound_ms`): a loop waiting on its Python batch iterator has that wait as input there.
  const rows = (data.workers || []).map((/** @type {any} */ w) => ({
    ...w,
    input_ms: (w.bound_ms || {}).input || 0,
    compute_ms: (w.bound_ms || {}).compute || 0,
    host_ms: (w.bound_ms || {}).host || 0,
    collectives_ms: (w.bound_ms || {}).collectives || 0,
  }));
  const workers = dataTable({
    columns: [
      { key: 'host', label: 'Worker', pin: true },
      { key: 'role', label: 'Role' },
      { key: 'steps', label: 'Steps', numeric: true, format: fmtInt },
      { key: 'avg_step_ms', label: 'Avg step time', numeric: true, format: fmtMs },
      { key: 'input_ms', label: 'Input', numeric: true, format: fmtMs, title: 'by what bounds the steps, average per step: a wait on a Python batch iterator included' },
      { key: 'compute_ms', label: 'Compute', numeric: true, format: fmtMs, title: 'by what bounds the steps, average per step' },
      { key: 'host_ms', label: 'Python / host', numeric: true, format: fmtMs, title: 'Python / host work and dispatch, by what bounds the steps, average per step' },
      { key: 'collectives_ms', label: 'Collectives', numeric: true, format: fmtMs, title: 'by what bounds the steps, average per step' },
      { key: 'wait_ms', label: 'Waiting for the last', numeric: true, format: fmtMs, title: 'average per step' },
      { key: 'late_arrivals', label: 'Last arrivals', numeric: true, format: fmtInt, title: 'collective calls it arrived last at' },
      { key: 'slowest_in_steps', label: 'Slowest in steps', numeric: true, format: fmtInt },
      { key: 'clock_offset_ms', label: 'Clock offset', numeric: true, format: (v) => (v === null || v === undefined ? '—' : fmtMs(v)), title: 'estimated from the collectives\' exits, against the median worker' },
    ],
    rows, name: 'pod_workers', caption: 'Workers, by what bounds their steps', sort: { key: 'avg_step_ms', desc: true },
  });
  const pick = (k) => { slider.value = String(k); draw(k); };
  root.append(...[
    h('div', { class: 'toolbar' }, exportCsv(ctx), h('span', { class: 'muted' }, `Steps from: ${data.step_source}`)),
    stragglerCard(data),
    data.heatmap ? card('Late per worker and step (click a cell for its step)', heatMap(data.heatmap, pick)) : null,
    h('div', { class: 'pod-controls' }, slider, label),
    view,
    card('Workers', workers)].filter(Boolean));
  draw(0);
}
