// @ts-check
// Overview: performance summary, step-time graph, top ops, run environment, recommendation.
// Fields: docs/tools/overview_page.md (the overview_page tool's JSON).
import { stackedBarChart } from '../charts.js';
import { dataTable } from '../table.js';
import { field, unitsAt } from '../units.js';
import { card, fmtMs, fmtNs, fmtPct, h, kvList, label, note, num } from '../util.js';
import { stepHistoryCard } from '../recorder.js';
import { adviceParts, categoriesFor, linkTools, toolLinks } from './_common.js';

const DEVICE_LABELS = { compute_cap_major: 'Compute capability (major)', compute_cap_minor: 'Compute capability (minor)',
  core_count: 'Cores (SMs / CUs)', memory_size: 'Memory', clock_rate: 'Clock', memory_bandwidth: 'Memory bandwidth' };

const BOUND = {
  high: ['HIGHLY input-bound', 'badge-bad'],
  moderate: ['MODERATELY input-bound', 'badge-warn'],
  potential: ['POTENTIALLY input-bound', 'badge-warn'],
  no: ['NOT input-bound', 'badge-good'],
  unknown: ['No steps measured', 'badge-warn'],
};

function metric(title, value, field, format = fmtMs, big = false) {
  return h('div', { class: 'metric' }, h('div', { class: 'label' }, title),
    h('div', { class: big ? 'big' : null }, num(value, format(value), field)));
}

function percentPair(title, obj, field) {
  if (!obj) return null;
  return h('div', { class: 'metric' }, h('div', { class: 'label' }, title),
    h('div', {}, Object.entries(obj).map(([k, v], i) => [i ? ' · ' : '',
      `${label(k.replace(/_percent$/, ''))} `, num(v, fmtPct(v), `${field}.${k}`)])));
}

// fp4/fp8/int8/64-bit only when present; reduced_percent repeats the others' sum.
function shownPrecision(p) {
  if (!p) return null;
  return Object.fromEntries(Object.entries(p).filter(([k, v]) => k !== 'reduced_percent' && (v > 0 || k === '16bit_percent' || k === '32bit_percent')));
}

// A job held by a straggler says so, then what bounds the ranks' mean ("...; the other ranks
// wait for it. Across the ranks: Bound by input: ..."): two statements, each on its own line
// (decision 552), the text unchanged.
const ACROSS = ' Across the ranks: ';
function headline(text) {
  const at = text.indexOf(ACROSS);
  return at < 0 ? text : [text.slice(0, at + 1), h('span', { class: 'across' }, text.slice(at + 1))];
}

// What bounds the steps: the headline first, then each limit with its share and evidence
// (`path`: where the block is in the answer, `bound_by` or `steady_state.bound_by`).
function boundBy(bound, path = 'bound_by') {
  if (!bound) return null;
  const limits = bound.limits || [];
  return h('div', { class: 'bound-by' },
    h('p', { class: 'lead', dataset: { field: `${path}.headline` } }, headline(bound.headline || '')),
    limits.length ? h('table', { class: 'breakdown', dataset: { table: path } }, h('tbody', {}, limits.map((l, i) => h('tr', { dataset: { limit: l.key }, title: l.evidence },
      h('td', {}, l.label),
      h('td', { class: 'numeric' }, num(l.ms_per_step, fmtMs(l.ms_per_step), `${path}.limits.${i}.ms_per_step`)),
      h('td', { class: 'numeric' }, num(l.percent, fmtPct(l.percent), `${path}.limits.${i}.percent`)))))) : null);
}

// The first steps compiled or warmed up (decision 362): the steps after them, beside the
// all-steps figures above (XProf's).
function steadyState(s) {
  if (!s) return null;
  const st = s.step_time_ms || {};
  return h('div', { class: 'steady-state' },
    h('h3', {}, 'Once warm'),
    h('p', { dataset: { field: 'steady_state.statement' } }, s.statement || ''),
    h('div', { class: 'metric-row' },
      metric('Median step time once warm', s.median_ms, 'steady_state.median_ms', fmtMs, true),
      metric('Average', st.avg, 'steady_state.step_time_ms.avg'),
      metric('Warm-up time', s.warmup_ms, 'steady_state.warmup_ms'),
      metric('Steps after the warm-up', s.steps, 'steady_state.steps', String)),
    boundBy(s.bound_by, 'steady_state.bound_by'));
}

function summary(data) {
  const st = data.step_time_ms || {};
  const breakdown = data.breakdown_ms || {};
  const percent = data.breakdown_percent || {};
  const cats = categoriesFor(Object.keys(breakdown));
  const max = Math.max(0, ...cats.map((c) => breakdown[c.key] || 0));
  const rows = cats.map((c) => {
    const v = breakdown[c.key] || 0;
    return h('tr', { dataset: { category: c.key } },
      h('td', {}, h('span', { class: 'swatch', style: { background: c.color } }), c.label),
      h('td', { class: 'numeric' }, field('overview_page', `breakdown_ms.${c.key}`, v)),
      h('td', { class: 'numeric' }, field('overview_page', `breakdown_percent.${c.key}`, percent[c.key])),
      h('td', { class: 'bar-cell' }, h('div', { class: 'hbar', style: { width: `${max > 0 ? (100 * v) / max : 0}%`, background: c.color } })));
  });
  const ib = data.input_bound || {};
  const [boundText, boundClass] = BOUND[ib.classification] || [String(ib.classification || ''), 'badge-warn'];
  return card('Performance summary',
    boundBy(data.bound_by),
    h('div', { class: 'metric-row' },
      metric(data.job ? 'Average job step time (slowest rank on average)' : 'Average step time', st.avg, 'step_time_ms.avg', fmtMs, true),
      metric('Standard deviation', st.stddev, 'step_time_ms.stddev'),
      metric('Min', st.min, 'step_time_ms.min'),
      metric('Max', st.max, 'step_time_ms.max'),
      metric('Steps', (data.steps || []).length, 'steps.length', String)),
    steadyState(data.steady_state),
    h('p', {}, 'XProf\'s input verdict: ',
      h('span', { class: `badge ${boundClass}`, title: ib.statement || '' }, boundText), ' ',
      h('span', { dataset: { field: 'input_bound.statement' } }, ib.statement || '')),
    data.input_staged_ms > 0 ? h('p', { class: 'muted' }, 'Input prepared inside the steps: ',
      num(data.input_staged_ms, fmtMs(data.input_staged_ms), 'input_staged_ms'),
      ' per step, before each step\'s first model op (input in "What bounds the steps"; XProf counts it as host compute, as the table below does).') : null,
    h('h3', {}, 'Average step time, by XProf\'s categories'),
    h('table', { class: 'breakdown', dataset: { table: 'breakdown' } }, h('tbody', {}, rows)),
    h('div', { class: 'metric-row spaced' },
      percentPair('Op placement (by occurrences)', data.op_placement, 'op_placement'),
      percentPair('Op time spent eagerly', data.eager, 'eager'),
      percentPair('Device compute precision', shownPrecision(data.precision), 'precision'),
      data.gpu_utilization ? metric('GPU utilization (mean)', data.gpu_utilization.mean, 'gpu_utilization.mean', fmtPct) : null),
    h('p', { class: 'muted' }, 'Steps: ', data.step_source_detail || data.step_source || 'none found'));
}

function stepGraph(data, ctx) {
  const steps = data.steps || [];
  const trigger = ctx.savedBy ? ctx.savedBy.step : null; // a flight recorder run's trigger step
  if (!steps.length) return card('Step-time graph', note('No steps were found in this profile; see the diagnostics below.', 'warn'));
  const keys = [...new Set(steps.flatMap((s) => Object.keys(s.breakdown_ns || {})))];
  const series = categoriesFor(keys);
  const bars = steps.map((s) => {
    const values = {};
    for (const k of keys) values[k] = (s.breakdown_ns?.[k] || 0) / 1e6;
    const parts = series.filter((c) => values[c.key] > 0).map((c) => `${c.label}: ${fmtNs(s.breakdown_ns[c.key])}`);
    const mark = trigger !== null && s.step === trigger ? 'trigger' : undefined;
    return { label: String(s.step), values, mark,
      tip: `${s.name || `Step ${s.step}`}${mark ? ' (the flight recorder\'s trigger)' : ''}: ${fmtNs(s.duration_ns)}\n${parts.join('\n')}` };
  });
  return card('Step-time graph',
    stackedBarChart({ series, bars, unit: 'ms', ariaLabel: 'Step time by category, per step' }),
    h('p', { class: 'muted' }, 'Each bar is one step (x: step number), stacked by where its time went. Hover for values.'));
}

function topOps(data) {
  const ops = data.top_ops || [];
  const side = ops[0]?.side;
  const title = `Top ${ops.length || 10} ${side === 'device' ? 'device' : side === 'host' ? 'host' : ''} operations by self time`;
  if (!ops.length) return card(title, note('No operations recorded.'));
  const columns = [
    { key: 'rank', label: '#', numeric: true, pin: true },
    { key: 'category', label: 'Op type', pin: true, wide: true },
    { key: 'name', label: 'Operation', mono: true, pin: true, wide: true },
    { key: 'self_time_percent', label: 'Time (%)', numeric: true },
    { key: 'cumulative_percent', label: 'Cumu\u00adlative (%)', numeric: true },
    { key: 'self_time_ns', label: 'Self time', numeric: true },
  ];
  if (ops.some((o) => o.flop_rate_gflops !== null && o.flop_rate_gflops !== undefined)) {
    columns.push({ key: 'flop_rate_gflops', label: 'FLOP rate', numeric: true });
  }
  if (ops.some((o) => o.eager_percent)) {  // TensorFlow eager ops (decision 1022)
    columns.push({ key: 'eager_percent', label: 'Eager (%)', numeric: true });
  }
  return card(title, dataTable({ columns, rows: ops, name: 'top_ops', caption: title, units: unitsAt('overview_page', 'top_ops[]') }));
}

function recommendation(data, ctx) {
  const rec = data.recommendation || {};
  const bound = data.input_bound?.classification;
  const preferred = ['high', 'moderate', 'potential'].includes(bound)
    ? ['input_pipeline_analyzer', 'tf_data_bottleneck_analysis', 'trace_viewer', 'op_stats']
    : ['op_stats', 'trace_viewer', 'kernel_stats', 'input_pipeline_analyzer'];
  return card('Recommendation for next steps',
    (rec.details || []).map((d) => h('p', { class: 'advice' }, adviceParts(d, ctx))),
    rec.tips && rec.tips.length ? [h('h3', {}, 'Where to look'),
      h('ul', { class: 'links' }, rec.tips.map((t) => h('li', {}, linkTools(t, ctx))))] : null,
    ctx.tools.length > 1 ? [h('h3', {}, 'Other tools'), toolLinks(ctx, preferred)] : null);
}

function environment(data) {
  const env = { ...(data.run_environment || {}) };
  delete env.devices;
  return card('Run environment', kvList(env, 'run_environment'));
}

// One row per device, in a card of the page's full width: every number in view.
function devicesCard(data) {
  const devices = (data.run_environment || {}).devices || [];
  if (!devices.length) return null;
  const keys = [...new Set(devices.flatMap((d) => Object.keys(d)))];
  const numeric = (k) => devices.some((d) => typeof d[k] === 'number');
  return card('Devices', dataTable({
    name: 'devices', caption: 'Devices',
    columns: keys.map((k) => ({ key: k, label: DEVICE_LABELS[k] || label(k), numeric: numeric(k), pin: k === 'plane' })),
    rows: devices,
    units: unitsAt('overview_page', 'run_environment.devices[]'),
  }));
}

/** The job of several ranks: its step time (the rank slowest on average), XProf's beside it, one row per rank. */
function jobCard(data) {
  const job = data.job;
  if (!job) return null;
  const mean = job.rank_mean_step_time_ms || {};
  const xp = job.xprof_step_time_ms || {};
  const st = job.step_time_ms || {};
  const facts = h('p', {}, `Job step time (${job.pacing_host}'s, the slowest rank on average): `,
    num(st.avg, fmtMs(st.avg), 'job.step_time_ms.avg'), '; ranks\' mean ',
    num(mean.avg, fmtMs(mean.avg), 'job.rank_mean_step_time_ms.avg'), ', spread (slowest - fastest) ',
    num(job.spread_ms, fmtMs(job.spread_ms), 'job.spread_ms'), ' per step. XProf ALL_HOSTS step time: ',
    num(xp.avg, fmtMs(xp.avg), 'job.xprof_step_time_ms.avg'), '.');
  const rows = dataTable({
    name: 'job_ranks', caption: 'Ranks, by what bounds their steps',
    columns: [
      { key: 'host', label: 'Rank', pin: true },
      { key: 'role', label: 'Role' },
      { key: 'step_ms', label: 'Step time', numeric: true, format: fmtMs },
      { key: 'input_ms', label: 'Input', numeric: true, format: fmtMs },
      { key: 'compute_ms', label: 'Compute', numeric: true, format: fmtMs },
      { key: 'host_ms', label: 'Python / host', numeric: true, format: fmtMs },
      { key: 'collectives_ms', label: 'Collectives', numeric: true, format: fmtMs },
      { key: 'waiting_ms', label: 'Waiting for the last', numeric: true, format: fmtMs },
      { key: 'late_arrivals', label: 'Last arrivals', numeric: true },
    ],
    rows: job.rows || [],
    units: unitsAt('overview_page', 'job.rows[]'),
  });
  const late = (job.stragglers || []).map((t) => note(t, 'warn'));
  return card(`Job of ${job.ranks} ranks`, [facts, note(job.xprof_note), ...late, rows,
    job.clock ? note(job.clock) : null].filter(Boolean));
}

export async function render(root, data, ctx) {
  root.append(
    h('div', { class: 'grid2' }, summary(data), recommendation(data, ctx)),
    jobCard(data) || '', // (Element.append writes a null as the text "null")
    stepGraph(data, ctx),
    ctx.savedBy ? stepHistoryCard(ctx.run, ctx.host) : '',
    topOps(data),
    devicesCard(data) || '', // (Element.append writes a null as the text "null")
    h('div', { class: 'grid2' }, environment(data),
      card('Diagnostics', h('ul', { class: 'links' }, (data.diagnostics || []).map((d) => h('li', {}, d))))),
  );
}
