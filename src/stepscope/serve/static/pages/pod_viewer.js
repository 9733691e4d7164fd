// Pod viewer: a step slider, one stacked column of step-time categories per worker, a details
// card per worker, the slowest worker of the step flagged. Fields: docs/tools/pod_viewer.md.
import { stackedBarChart } from '../charts.js';
import { dataTable } from '../table.js';
import { card, fmtInt, fmtMs, h, note, num } from '../util.js';
import { categoriesFor } from './_common.js';
import { ensureStyles, exportCsv } from './_gpu_tools.js';

function workerCard(w, j, stepIndex, cats) {
  const rows = cats.map((c) => h('tr', {},
    h('td', {}, h('span', { class: 'swatch', style: { background: c.color } }), c.label),
    h('td', { class: 'numeric' }, num(w.breakdown_ms[c.key], fmtMs(w.breakdown_ms[c.key]), `steps.${stepIndex}.workers.${j}.breakdown_ms.${c.key}`))));
  return h('section', { class: `card${w.is_slowest ? ' slowest' : ''}`, dataset: { worker: w.host } },
    h('h2', {}, w.host, w.is_slowest ? h('span', { class: 'badge badge-bad', style: { marginLeft: '8px' } }, 'slowest') : null),
    h('p', {}, 'Step time ', num(w.duration_ms, fmtMs(w.duration_ms), `steps.${stepIndex}.workers.${j}.duration_ms`),
      ' · bottleneck: ', h('strong', {}, (cats.find((c) => c.key === w.bottleneck) || {}).label || w.bottleneck)),
    h('p', { class: 'muted' }, w.step_name),
    h('table', { class: 'breakdown' }, h('tbody', {}, rows)));
}

export async function render(root, data, ctx) {
  ensureStyles();
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
      title: `Step ${step.step_num}: step time per worker`, unit: 'ms',
    });
    view.replaceChildren(
      card(['Step ', num(step.step_num, String(step.step_num), `steps.${i}.step_num`), ': slowest worker ',
        h('strong', { id: 'pod-slowest' }, step.slowest_worker), ', spread ',
        num(step.spread_ms, fmtMs(step.spread_ms), `steps.${i}.spread_ms`)], chart),
      h('div', { class: 'pod-cards' }, present.map(([w, j]) => workerCard(w, j, i, cats))));
    view.dataset.step = String(step.step_num);
  }
  const workers = dataTable({
    columns: [
      { key: 'host', label: 'Worker' },
      { key: 'steps', label: 'Steps', numeric: true, format: fmtInt },
      { key: 'avg_step_ms', label: 'Avg step time', numeric: true, format: fmtMs },
      { key: 'slowest_in_steps', label: 'Slowest in steps', numeric: true, format: fmtInt },
    ],
    rows: data.workers || [], name: 'pod_workers', caption: 'Workers', sort: { key: 'avg_step_ms', desc: true },
  });
  root.append(
    h('div', { class: 'toolbar' }, exportCsv(ctx), h('span', { class: 'muted' }, `Steps from: ${data.step_source}`)),
    h('div', { class: 'pod-controls' }, slider, label),
    view,
    card('Workers', workers));
  draw(0);
}
