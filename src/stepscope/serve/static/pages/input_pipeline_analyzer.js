// @ts-check
// Input pipeline analyzer: summary, device-side step chart and stats, host-side breakdown of
// input time, a sortable table of input ops, and the tf.data pipelines found.
import { pieChart, stackedBarChart } from '../charts.js';
import { dataTable } from '../table.js';
import { CATEGORIES } from './_common.js';
import { card, fmtInt, fmtMs, fmtNs, fmtPct, h, label, note, num } from '../util.js';

const BOUND = {
  high: ['HIGHLY input-bound', 'badge-bad'],
  moderate: ['MODERATELY input-bound', 'badge-warn'],
  potential: ['POTENTIALLY input-bound', 'badge-warn'],
  no: ['NOT input-bound', 'badge-good'],
  unknown: ['No steps measured', 'badge-warn'],
};
const HOST_CATEGORIES = [
  ['enqueue', 'Enqueuing data to the device', '#1a73e8'],
  ['demanded_file_read', 'Reading data from files on demand', '#d93025'],
  ['advanced_file_read', 'Reading data from files in advance', '#f29900'],
  ['preprocessing', 'Data preprocessing', '#9334e6'],
  ['other', 'Other data reading or processing', '#9aa0a6'],
];

function summary(data) {
  const ib = data.input_bound || {};
  const [text, cls] = BOUND[ib.classification] || [String(ib.classification || ''), 'badge-warn'];
  return card('Summary',
    h('p', {}, h('span', { class: `badge ${cls}` }, text), ' ', ib.statement || ''),
    h('div', { class: 'metric-row' },
      h('div', { class: 'metric' }, h('div', { class: 'label' }, 'Average step time'),
        h('div', { class: 'big' }, num(data.step_time_ms?.avg, fmtMs(data.step_time_ms?.avg), 'step_time_ms.avg'))),
      h('div', { class: 'metric' }, h('div', { class: 'label' }, 'Average input time'),
        h('div', { class: 'big' }, num(data.input_time_ms?.avg, fmtMs(data.input_time_ms?.avg), 'input_time_ms.avg'))),
      h('div', { class: 'metric' }, h('div', { class: 'label' }, 'Waiting for input'),
        h('div', { class: 'big' }, num(ib.percent, fmtPct(ib.percent), 'input_bound.percent')))),
    (data.recommendations || []).length
      ? [h('h3', {}, 'Recommendations'), h('ul', { class: 'links' }, data.recommendations.map((r) => h('li', {}, r)))]
      : null);
}

function stepStats(data) {
  const stats = [['Step time', 'step_time_ms'], ['Input time', 'input_time_ms']];
  return h('table', { class: 'breakdown stats', dataset: { table: 'step_stats' } },
    h('thead', {}, h('tr', {}, h('th', {}, ''), ['avg', 'stddev', 'min', 'max'].map((k) =>
      h('th', { class: 'numeric' }, k === 'stddev' ? 'Std. dev.' : label(k))))),
    h('tbody', {}, stats.map(([title, key]) => h('tr', {}, h('td', {}, title),
      ['avg', 'stddev', 'min', 'max'].map((k) => h('td', { class: 'numeric' },
        num(data[key]?.[k], fmtMs(data[key]?.[k]), `${key}.${k}`)))))));
}

function deviceSide(data) {
  const steps = data.steps || [];
  if (!steps.length) return card('Device-side analysis', note('No steps were found in this profile.', 'warn'));
  // The overview's colours; the server always serves these two categories.
  const color = (key) => /** @type {import('./_common.js').Category} */ (CATEGORIES.find((c) => c.key === key)).color;
  const series = [
    { key: 'compute', label: 'Compute and other', color: color('device_compute') },
    { key: 'input', label: 'Waiting for input', color: color('input') },
  ];
  const bars = steps.map((s) => ({
    label: String(s.step),
    values: { input: s.input_ns / 1e6, compute: Math.max(0, s.duration_ns - s.input_ns) / 1e6 },
    tip: `${s.name || `Step ${s.step}`}: ${fmtNs(s.duration_ns)}\nWaiting for input: ${fmtNs(s.input_ns)} (${fmtPct((100 * s.input_ns) / (s.duration_ns || 1))})`,
  }));
  return card('Device-side analysis: step time and time waiting for input',
    stackedBarChart({ series, bars, unit: 'ms', ariaLabel: 'Step time and input wait, per step' }),
    stepStats(data));
}

function hostSide(data) {
  const bd = data.host_breakdown_ms || {};
  const total = Object.values(bd).reduce((s, v) => s + (Number(v) || 0), 0);
  const rows = HOST_CATEGORIES.map(([key, title, color]) => h('tr', { dataset: { category: key } },
    h('td', {}, h('span', { class: 'swatch', style: { background: color } }), title),
    h('td', { class: 'numeric' }, num(bd[key], bd[key] ? fmtMs(bd[key]) : '0', `host_breakdown_ms.${key}`)),
    h('td', { class: 'numeric' }, fmtPct(total > 0 ? (100 * (bd[key] || 0)) / total : 0))));
  const pie = pieChart({ slices: HOST_CATEGORIES.map(([key, title, color]) => ({ label: title, value: bd[key] || 0, color })),
    format: fmtMs, empty: 'No input time on the host.' });
  return card('Host-side analysis: where input time goes',
    h('div', { class: 'split' }, h('table', { class: 'breakdown', dataset: { table: 'host_breakdown' } }, h('tbody', {}, rows)), pie));
}

function inputOps(data) {
  const ops = data.input_ops || [];
  if (!ops.length) return card('Input ops', note('No input-pipeline ops were recorded on the host.'));
  const columns = [
    { key: 'op', label: 'Input op', mono: true, pin: true, wide: true },
    { key: 'count', label: 'Count', numeric: true, format: fmtInt },
    { key: 'total_ms', label: 'Total time', numeric: true, format: fmtMs },
    { key: 'total_percent', label: 'Total (%)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'self_ms', label: 'Self time', numeric: true, format: fmtMs },
    { key: 'self_percent', label: 'Self (%)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'category', label: 'Category', format: (v) => label(v) },
  ];
  return card('Input ops on the host', dataTable({ columns, rows: ops, name: 'input_ops', caption: 'Input ops',
    filterable: true, sort: { key: 'self_ms', desc: true } }));
}

function pipelines(data) {
  const list = data.pipelines || [];
  if (!list.length) return null;
  const columns = [
    { key: 'name', label: 'Pipeline', pin: true, wide: true },
    { key: 'calls', label: 'Calls', numeric: true, format: fmtInt },
    { key: 'slow_calls', label: 'Slow calls', numeric: true, format: fmtInt },
    { key: 'avg_latency_ms', label: 'Avg. latency', numeric: true, format: fmtMs },
    { key: 'max_latency_ms', label: 'Max latency', numeric: true, format: fmtMs },
    { key: 'bottleneck', label: 'Bottleneck', mono: true },
    { key: 'bottleneck_self_ms', label: 'Bottleneck self time', numeric: true, format: fmtMs },
    { key: 'advice', label: 'Advice' },
  ];
  return card('tf.data pipelines', dataTable({ columns, rows: list, name: 'pipelines' }));
}

// PyTorch DataLoader worker processes captured into the profile: one block per loader, its
// verdict and advice first (what to change), then a row per worker and the functions their
// stack samples saw inside their batches.
const VERDICTS = {
  keeping_up: ['The workers keep up', 'good'],
  workers_busy: ['The workers cannot keep up', 'bad'],
  workers_idle: ['Batches made, slow to come across', 'warn'],
  uneven_batches: ['Batches of uneven cost', 'warn'],
  partly_busy: ['Workers partly busy', 'warn'], // answers cached before decision 392
};

// A figure the capture did not record is -1 (an older capture, a platform without it).
const fmtKnownMs = (v) => (v < 0 ? '—' : fmtMs(v));

function loaderBlock(l, i) {
  const path = `loader_workers.${i}`;
  // The step side (ready before asked, waited for, transfer) is timed only by an
  // instrumented loader (stepscope.steps); a plain loop's rows have none of its batches.
  const stepSide = l.rows.some((r) => r.ready_batches + r.waited_batches > 0);
  const columns = [
    { key: 'worker', label: 'Worker process', pin: true, wide: true },
    { key: 'batches', label: 'Batches', numeric: true, format: fmtInt },
    { key: 'busy_ms', label: 'Busy', numeric: true, format: fmtMs },
    { key: 'busy_percent', label: 'Busy (% of steps)', numeric: true, format: (v) => fmtPct(v) },
    { key: 'ms_per_batch', label: 'Per batch', numeric: true, format: fmtMs },
    { key: 'get_item_ms', label: '__getitem__', numeric: true, format: fmtMs },
    { key: 'collate_ms', label: 'collate_fn', numeric: true, format: fmtMs },
    { key: 'cpu_ms', label: 'On CPU', numeric: true, format: fmtKnownMs },
    { key: 'cpu_wait_ms', label: 'Waiting for a CPU', numeric: true, format: fmtKnownMs },
    ...(stepSide ? [
      { key: 'ready_batches', label: 'Ready when asked', numeric: true, format: fmtInt },
      { key: 'waited_batches', label: 'Waited for', numeric: true, format: fmtInt },
      { key: 'wait_ms', label: 'Step waiting', numeric: true, format: fmtMs },
      { key: 'transfer_ms', label: 'Transfer', numeric: true, format: fmtMs },
    ] : []),
  ];
  const [title, kind] = VERDICTS[l.verdict] || [l.verdict, 'warn'];
  const functions = l.functions || [];
  return h('div', { class: 'loader-workers', dataset: { loader: l.loader } },
    l.verdict ? h('p', {},
      h('span', { class: `badge badge-${kind}`, dataset: { verdict: l.verdict } }, title),
      ' ', h('span', { dataset: { field: `${path}.advice` } }, l.advice)) : null,
    h('p', {}, l.summary),
    l.settings ? h('p', {}, 'Settings at iter(): ', h('code', { dataset: { field: `${path}.settings` } }, l.settings)) : null,
    l.startup_ms > 0
      ? note(`The workers took ${fmtMs(l.startup_ms)} to start before their first batch; their busy shares count from it.`)
      : null,
    dataTable({ columns, rows: l.rows, name: 'loader_workers', caption: `Workers of ${l.loader}` }),
    functions.length ? dataTable({
      columns: [
        { key: 'function', label: 'Function (stack samples inside the batches)', pin: true, wide: true, mono: true },
        { key: 'percent', label: 'Share of samples', numeric: true, format: (v) => fmtPct(v) },
        { key: 'ms_per_batch', label: 'Per batch', numeric: true, format: fmtMs },
        { key: 'samples', label: 'Samples', numeric: true, format: fmtInt },
        { key: 'stack', label: 'Stack', mono: true },
      ],
      rows: functions,
      name: 'loader_worker_functions',
      caption: `Where the workers of ${l.loader} spend their batches`,
    }) : null);
}

function loaderWorkers(data) {
  const loaders = data.loader_workers || [];
  if (!loaders.length) return null;
  return card('DataLoader worker processes', ...loaders.map(loaderBlock));
}

// The Python iterators (generators, `__next__`, `map`...) the loop got its batches from, as
// the stack sampler saw it: the input time of a loop with no DataLoader or tf.data to name.
function pythonIterators(data) {
  const rows = data.python_iterators || [];
  if (!rows.length) return null;
  const columns = [
    { key: 'function', label: 'Iterator', pin: true, wide: true, mono: true },
    { key: 'ms_per_step', label: 'Per step', numeric: true, format: fmtMs },
    { key: 'percent', label: 'Of the step time', numeric: true, format: (v) => fmtPct(v) },
    { key: 'samples', label: 'Samples', numeric: true, format: fmtInt },
    { key: 'stack', label: 'Stack (outermost first)', mono: true },
  ];
  return card('Python iterators the loop gets its batches from',
    h('p', {}, 'The stack sampler saw the training loop waiting here for its next batch; the trace times those waits.'),
    dataTable({ columns, rows, name: 'python_iterators', caption: 'Python iterators the loop waits on' }));
}

export async function render(root, data) {
  root.append(summary(data), deviceSide(data), hostSide(data), inputOps(data));
  const w = loaderWorkers(data);
  if (w) root.append(w);
  const it = pythonIterators(data);
  if (it) root.append(it);
  const p = pipelines(data);
  if (p) root.append(p);
}
