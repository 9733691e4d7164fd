// @ts-check
// Compare: two runs (or two hosts of one run) side by side — the verdict, the step-time
// breakdown of both as bars, metric deltas with their 95% intervals and significance marks,
// the ops / kernels / input stages that changed most, and links that open the same step in
// both runs' trace viewers. Data: api/compare (serve/compare_route.py), the same diff as
// `stepscope diff --json`.
import { stackedBarChart } from '../charts.js';
import { dataTable } from '../table.js';
import { card, fmtBytes, fmtNs, getJSON, h, note, pageStyle, query } from '../util.js';
import { categoriesFor } from './_common.js';

const ALL_HOSTS = 'ALL_HOSTS';
const TABLES = [
  ['input_stages', 'Input pipeline stages (self time per step)'],
  ['host_ops', 'Host ops (self time per step)'],
  ['device_ops', 'Device ops (self time per step)'],
  ['kernels', 'Kernels (time per step)'],
];

const ensureStyles = () => pageStyle('compare', 'compare.css');

const hostsOf = (run) => (run.hosts.length > 1 ? [...run.hosts, ALL_HOSTS] : run.hosts);
const hostLabel = (host) => (host === ALL_HOSTS ? 'All hosts' : host);

/** The two sides the address asks for, completed with defaults: the first two runs, or the
 * first two hosts of a run when there is only one run. */
export function chooseSides(runs, params) {
  const find = (name) => runs.find((r) => r.run === name);
  const base = find(params.base) || find(params.run) || runs[0];
  let cand = find(params.cand);
  let candHost = params.cand_host;
  if (!cand) {
    cand = runs.find((r) => r !== base) || base;
    if (cand === base && base.hosts.length > 1 && !candHost) candHost = base.hosts[1];
  }
  const pick = (run, host, fallback) => (hostsOf(run).includes(host) ? host : fallback);
  const baseHost = pick(base, params.base_host, cand === base && base.hosts.length > 1 ? base.hosts[0] : hostsOf(base).at(-1));
  return { base: base.run, base_host: baseHost, cand: cand.run, cand_host: pick(cand, candHost, hostsOf(cand).at(-1)) };
}

function picker(legend, runs, run, host, onChange) {
  const runSelect = h('select', { 'aria-label': `${legend} run`, dataset: { side: legend.toLowerCase(), control: 'run' },
    onchange: (e) => onChange(e.target.value, '') }, runs.map((r) => h('option', { value: r.run, selected: r.run === run }, r.run)));
  const current = runs.find((r) => r.run === run);
  const hostSelect = h('select', { 'aria-label': `${legend} host`, dataset: { side: legend.toLowerCase(), control: 'host' },
    disabled: hostsOf(current).length < 2, onchange: (e) => onChange(run, e.target.value) },
  hostsOf(current).map((x) => h('option', { value: x, selected: x === host }, hostLabel(x))));
  return h('fieldset', {}, h('legend', {}, legend), h('label', {}, 'Run ', runSelect), h('label', {}, 'Host ', hostSelect));
}

const msOf = (ns) => (ns === null || ns === undefined ? null : ns / 1e6);

function fmtValue(m, v) {
  if (v === null || v === undefined) return '–';
  if (m.unit === 'ns') return fmtNs(v);
  if (m.unit === 'bytes') return fmtBytes(v);
  return `${v.toFixed(1)}%`;
}

function fmtChange(m) {
  if (m.delta === null || m.delta === undefined) return '–';
  if (m.unit === 'percent') return `${m.delta >= 0 ? '+' : ''}${m.delta.toFixed(1)} pp`;
  if (m.relative !== null && m.relative !== undefined) return `${m.relative >= 0 ? '+' : ''}${(m.relative * 100).toFixed(1)}%`;
  return m.unit === 'ns' ? `${m.delta >= 0 ? '+' : '−'}${fmtNs(Math.abs(m.delta))}` : String(m.delta);
}

function fmtInterval(m) {
  if (m.relative_ci) return `[${m.relative_ci.map((x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`).join(', ')}]`;
  if (m.ci_low !== null && m.ci_high !== null && m.unit === 'ns') return `[${fmtNs(m.ci_low)}, ${fmtNs(m.ci_high)}]`;
  return m.tested ? '–' : 'n/a';
}

function sigMark(m) {
  if (!m.tested) return h('span', { class: 'sig-none', title: 'one figure per run: compared as it is' }, 'n/a');
  if (!m.significant) return h('span', { class: 'sig-none', title: `within noise (p = ${m.p_value?.toFixed(3)})` }, '–');
  const up = m.delta > 0;
  return h('span', { class: up ? 'sig-up' : 'sig-down', title: `significant (p = ${m.p_value?.toFixed(4)})` }, up ? '▲ significant' : '▼ significant');
}

function metricsTable(metrics) {
  const rows = metrics.filter((m) => m.baseline !== null || m.candidate !== null).map((m) => h('tr', {
    dataset: { metric: m.name, significant: String(m.significant) } },
  h('th', { scope: 'row' }, m.label),
  h('td', { class: 'numeric' }, fmtValue(m, m.baseline)),
  h('td', { class: 'numeric' }, fmtValue(m, m.candidate)),
  h('td', { class: 'numeric change', dataset: { value: m.relative ?? m.delta ?? '' } }, fmtChange(m)),
  h('td', { class: 'numeric' }, fmtInterval(m)),
  h('td', { class: 'sig' }, sigMark(m))));
  return h('div', { class: 'table-scroll' }, h('table', { class: 'data cmp-metrics', dataset: { table: 'metrics' } },
    h('thead', {}, h('tr', {}, ['Metric', 'Baseline', 'Candidate', 'Change', '95% interval', 'Significance']
      .map((t, i) => h('th', { scope: 'col', class: i && i < 5 ? 'numeric' : null }, t)))),
    h('tbody', {}, rows)));
}

function breakdownChart(metrics) {
  const cats = metrics.filter((m) => m.name.startsWith('category.'));
  const key = (m) => m.name.slice('category.'.length);
  const series = categoriesFor(cats.map(key));
  const values = (side) => Object.fromEntries(cats.map((m) => [key(m), msOf(m[side]) || 0]));
  const mean = metrics.find((m) => m.name === 'step_time.mean');
  const tip = (side, label) => `${label}: ${fmtNs(mean?.[side])} mean per step`;
  return stackedBarChart({
    series,
    bars: [
      { label: 'Baseline', values: values('baseline'), tip: tip('baseline', 'Baseline') },
      { label: 'Candidate', values: values('candidate'), tip: tip('candidate', 'Candidate') },
    ],
    unit: 'ms',
    height: 220,
    width: 480, // a half-width card
    title: 'Step-time breakdown (mean per step)',
  });
}

function rowsTable(name, rows) {
  const ms = (v) => (v / 1e6).toFixed(3);
  return dataTable({
    name,
    caption: name,
    filterable: rows.length > 10,
    maxRows: 25,
    sort: null,
    columns: [
      { key: 'name', label: 'Name', mono: true, pin: true, wide: true },
      { key: 'status', label: 'Status', pin: true, format: (v) => h('span', { class: `cmp-status-${v}` }, v) },
      { key: 'baseline_ns_per_step', label: 'Baseline ms/step', numeric: true, format: ms },
      { key: 'candidate_ns_per_step', label: 'Candidate ms/step', numeric: true, format: ms },
      { key: 'delta_ns_per_step', label: 'Δ ms/step', numeric: true, format: (v) => `${v >= 0 ? '+' : ''}${ms(v)}` },
      { key: 'baseline_count', label: 'Count (base)', numeric: true },
      { key: 'candidate_count', label: 'Count (cand)', numeric: true },
    ],
    rows,
  });
}

/** The step of `side` to open for a baseline step number: the same number, else the same position. */
export function matchingStep(baseSteps, candSteps, number) {
  const exact = candSteps.find((s) => s.step_num === number);
  if (exact) return exact;
  const at = baseSteps.findIndex((s) => s.step_num === number);
  return candSteps[Math.min(Math.max(at, 0), candSteps.length - 1)];
}

function medianStep(steps) {
  const sorted = [...steps].sort((a, b) => a.dur_ns - b.dur_ns);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

function traceLinks(data, hrefFor) {
  const base = data.baseline;
  const cand = data.candidate;
  if (!base.steps.length || !cand.steps.length) return note('Trace links need steps in both runs.', 'info');
  const hostFor = (side) => (side.host === ALL_HOSTS ? side.hosts[0] : side.host);
  const baseLink = h('a', { dataset: { trace: 'baseline' } });
  const candLink = h('a', { dataset: { trace: 'candidate' } });
  const choose = (number) => {
    const b = base.steps.find((s) => s.step_num === number);
    const c = matchingStep(base.steps, cand.steps, number);
    baseLink.href = hrefFor('trace_viewer', base.run, hostFor(base), { step: b.step_num });
    baseLink.textContent = `Baseline: ${b.name} (${fmtNs(b.dur_ns)})`;
    candLink.href = hrefFor('trace_viewer', cand.run, hostFor(cand), { step: c.step_num });
    candLink.textContent = `Candidate: ${c.name} (${fmtNs(c.dur_ns)})`;
  };
  const first = medianStep(base.steps).step_num;
  const select = h('select', { 'aria-label': 'Step to open', onchange: (e) => choose(Number(e.target.value)) },
    base.steps.map((s) => h('option', { value: s.step_num, selected: s.step_num === first }, `step ${s.step_num}`)));
  choose(first);
  return h('div', { class: 'cmp-links' }, h('label', {}, 'Open ', select, ' in the trace viewer:'), baseLink, candLink);
}

export async function render(root, ctx) {
  await ensureStyles();
  const sides = chooseSides(ctx.runs, ctx.params);
  ctx.showSides?.(sides);
  const set = (changes) => ctx.go({ ...sides, ...changes });
  const swap = h('button', { type: 'button', class: 'link', dataset: { action: 'swap' },
    onclick: () => ctx.go({ base: sides.cand, base_host: sides.cand_host, cand: sides.base, cand_host: sides.base_host }) }, '⇄ Swap');
  root.append(h('h1', {}, 'Compare', h('span', { class: 'subtitle' }, ' two runs or two hosts')),
    card(null, h('div', { class: 'cmp-pickers' },
      picker('Baseline', ctx.runs, sides.base, sides.base_host, (run, host) => set({ base: run, base_host: host })),
      picker('Candidate', ctx.runs, sides.cand, sides.cand_host, (run, host) => set({ cand: run, cand_host: host })),
      swap)));
  if (sides.base === sides.cand && sides.base_host === sides.cand_host) {
    root.append(note('Baseline and candidate are the same run and host: pick another run, or another host of this run.', 'info'));
  }
  let data;
  try {
    data = await getJSON(`api/compare?${query(sides)}`);
  } catch (err) { // keep the pickers, so another choice is one click away
    root.append(note(`Cannot compare: ${err.message}`, 'error'));
    return;
  }
  const mean = data.metrics.find((m) => m.name === 'step_time.mean');
  const direction = mean && mean.significant ? (mean.delta > 0 ? 'slower' : 'faster') : 'same';
  const warm = (s) => ((s.warmup_steps || []).length ? `, warm-up: step ${s.warmup_steps.join(', ')}` : '');
  const side = (s) => `${s.run} · ${hostLabel(s.host)} · ${s.steps.length} steps (${s.step_source}${warm(s)})`;
  // once warm (a warm-up split in either run), each side's headline is its steps' after it
  const onceWarm = data.compared === 'once_warm';
  const bound = (s) => (onceWarm && s.bound_by_once_warm ? `Once warm: ${s.bound_by_once_warm}` : s.bound_by);
  root.append(
    card('Verdict', h('p', { class: 'cmp-verdict', dataset: { direction, driver: data.driver || '' } }, data.verdict),
      h('p', { class: 'cmp-sides' }, `Baseline: ${side(data.baseline)} — Candidate: ${side(data.candidate)}`),
      onceWarm ? h('p', { class: 'cmp-compared' }, 'Compared once warm: each run\'s steps after its warm-up; the warm-up is its own row. The API\'s steps=all compares every step.') : null,
      ['baseline', 'candidate'].map((name) => (bound(data[name])
        ? h('p', { class: 'cmp-bound', dataset: { side: name } }, h('strong', {}, name === 'baseline' ? 'Baseline: ' : 'Candidate: '), bound(data[name]))
        : null))),
    card('Metrics', metricsTable(data.metrics), h('p', { class: 'cmp-sides' }, data.statistic)),
    h('div', { class: 'grid2' },
      card(null, breakdownChart(data.metrics)),
      card('Same step in both traces', traceLinks(data, ctx.hrefFor))),
  );
  for (const [name, title] of TABLES) {
    if (data[name].length) root.append(card(title, rowsTable(name, data[name])));
  }
}
