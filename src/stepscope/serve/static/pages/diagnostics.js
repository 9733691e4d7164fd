// @ts-check
// Diagnostics: each finding with severity, what was seen, evidence (steps, events, time) and
// the fix. Fields: docs/tools/diagnostics.md.
import { card, code, fmtByKey, fmtInt, fmtMs, h, label, note, num } from '../util.js';
import { ensureStyles, exportCsv, severityBadge } from './_gpu_tools.js';

function evidence(f, i) {
  if (!f.events.length) return null;
  return h('table', { class: 'evidence', dataset: { table: `evidence-${f.id}` } },
    h('thead', {}, h('tr', {}, h('th', {}, 'Events'), h('th', { class: 'numeric' }, 'Count'),
      h('th', { class: 'numeric' }, 'Time'), h('th', {}, 'Detail'))),
    h('tbody', {}, f.events.map((e, j) => h('tr', {},
      h('td', {}, code(e.name)),
      h('td', { class: 'numeric' }, num(e.count, fmtInt(e.count), `findings.${i}.events.${j}.count`)),
      h('td', { class: 'numeric' }, num(e.total_ms, fmtMs(e.total_ms), `findings.${i}.events.${j}.total_ms`)),
      h('td', {}, e.detail)))));
}

function findingCard(f, i) {
  // A measure's key names its unit (_ms, _pct...): the label leaves it out, the value says it.
  const metrics = Object.entries(f.metrics || {})
    .filter(([, v]) => v !== '' && v !== null && v !== undefined) // (a caller not found: nothing to say)
    .map(([k, v]) => `${label(k)}: ${fmtByKey(k, v)}`);
  return h('section', { class: 'card finding', dataset: { finding: f.id, severity: f.severity } },
    h('h2', {}, severityBadge(f.severity), f.title, f.host ? h('span', { class: 'muted' }, ` · ${f.host}`) : null),
    h('p', {}, f.summary),
    h('p', { class: 'muted' }, 'Time at stake: ', num(f.time_ms, fmtMs(f.time_ms), `findings.${i}.time_ms`),
      f.steps.length ? ` · steps ${f.steps.join(', ')}` : ''),
    evidence(f, i),
    metrics.length ? h('p', { class: 'muted' }, metrics.join(' · ')) : null,
    h('p', { class: 'fix' }, h('strong', {}, 'Fix: '), f.fix));
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const findings = data.findings || [];
  const counts = ['high', 'medium', 'low'].map((s) => [s, findings.filter((f) => f.severity === s).length]);
  root.append(h('div', { class: 'toolbar' }, exportCsv(ctx),
    h('span', {}, num(findings.length, String(findings.length), 'findings.length'), ' findings: ',
      counts.map(([s, n], k) => [k ? ', ' : '', `${n} ${s}`]))));
  if (!findings.length) {
    root.append(note('No problem found by any check for this run and host.'));
  }
  root.append(...findings.map(findingCard));
  root.append(card('Checks run', h('ul', { class: 'links' },
    (data.checks || []).map((c) => h('li', {}, h('strong', {}, c.id), ` — ${c.description}`)))));
}
