// @ts-check
// tf.data bottleneck analysis: the conclusion, every pipeline's latency summary, and for the
// chosen pipeline its iterator graph (critical path and bottleneck marked), per-iterator stats
// and the fix. Fields: docs/tools/tf_data_bottleneck_analysis.md.
import { dataTable } from '../table.js';
import { card, code, fmtInt, fmtPct, fmtUs, h, note, num } from '../util.js';
import { ensureStyles, exportCsv } from './_gpu_tools.js';

function tree(graph, a) {
  const children = new Map();
  const ids = new Set(graph.map((n) => n.id));
  for (const n of graph) {
    const parent = n.parent_id !== null && ids.has(n.parent_id) ? n.parent_id : '';
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(n);
  }
  const item = (n, path) => {
    const i = graph.indexOf(n);
    const cls = `pipeline-node${n.on_critical_path ? ' critical' : ''}${n.is_bottleneck ? ' bottleneck' : ''}`;
    const box = h('span', { class: cls, title: n.long_name_explained, dataset: { node: n.name } },
      h('span', {}, n.name), n.dataset ? h('span', { class: 'muted' }, n.dataset) : null,
      h('span', {}, 'self ', num(n.self_time_us, fmtUs(n.self_time_us), `analyses.${a}.graph.${i}.self_time_us`)),
      h('span', { class: 'muted' }, `${fmtInt(n.calls)} call${n.calls === 1 ? '' : 's'}`),
      n.is_bottleneck ? h('span', { class: 'badge badge-bad' }, 'bottleneck') : null);
    const kids = (children.get(n.id) || []).filter((k) => !path.has(k.id));
    const next = new Set(path).add(n.id);
    return h('li', {}, box, kids.length ? h('ul', {}, kids.map((k) => item(k, next))) : null);
  };
  return h('ul', { class: 'pipeline-tree', 'aria-label': 'Pipeline: each iterator under the one that calls it' }, (children.get('') || []).map((n) => item(n, new Set())));
}

function nodeTable(graph) {
  return dataTable({
    columns: [
      { key: 'name', label: 'Iterator', pin: true },
      { key: 'long_name_explained', label: 'Position', filter: true },
      { key: 'long_name', label: 'Long name', mono: true, wide: true },
      { key: 'start_time_us', label: 'Start (in call)', numeric: true, format: fmtUs },
      { key: 'total_duration_us', label: 'Total duration', numeric: true, format: fmtUs },
      { key: 'self_time_us', label: 'Self time', numeric: true, format: fmtUs },
      { key: 'calls', label: 'Calls', numeric: true, format: fmtInt },
      { key: 'on_critical_path', label: 'Critical path', format: (v) => (v ? 'Yes' : 'No') },
    ],
    rows: graph, name: 'iterators', caption: 'Iterators of the slowest call', sort: { key: 'self_time_us', desc: true },
  });
}

function analysisView(an, a) {
  return [
    card(['Pipeline ', an.input_pipeline, ' on ', an.host, ': slowest call ',
      num(an.max_latency_us, fmtUs(an.max_latency_us), `analyses.${a}.max_latency_us`)],
    h('p', {}, 'Root: ', code(an.root), ` · ${fmtInt(an.calls)} calls, ${fmtInt(an.slow_calls)} over 50 µs`),
    an.bottleneck_iterator
      ? h('p', { class: 'lead', id: 'bottleneck' }, 'Bottleneck: ', h('strong', {}, an.bottleneck_iterator), ' — ',
        an.graph.find((n) => n.is_bottleneck)?.long_name_explained || an.bottleneck_long_name, ', self time ',
        num(an.bottleneck_self_us, fmtUs(an.bottleneck_self_us), `analyses.${a}.bottleneck_self_us`))
      : note('No iterator spends time of its own in the slowest call.'),
    an.suggestion ? h('p', { class: 'note', id: 'suggestion' }, an.suggestion) : null),
    card('Input pipeline graph of the slowest call', h('p', { class: 'muted' },
      'Orange: on the critical path (the consumer waited for it). Red: the bottleneck.'), tree(an.graph, a)),
    card('Iterators', nodeTable(an.graph)),
  ];
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const analyses = data.analyses || [];
  root.append(h('div', { class: 'toolbar' }, exportCsv(ctx)), note(data.conclusion, analyses.length ? 'warn' : 'info'));
  if (!analyses.length) return;
  const summary = dataTable({
    columns: [
      { key: 'host', label: 'Host', pin: true },
      ...(data.summary.some((r) => r.host_input_percent !== null && r.host_input_percent !== undefined)
        ? [{ key: 'host_input_percent', label: 'Host input (%)', numeric: true, format: (v) => fmtPct(v) }] : []),
      { key: 'input_pipeline', label: 'Pipeline' },
      { key: 'calls', label: 'Calls', numeric: true, format: fmtInt },
      { key: 'avg_latency_us', label: 'Avg latency', numeric: true, format: fmtUs },
      { key: 'min_latency_us', label: 'Min latency', numeric: true, format: fmtUs },
      { key: 'max_latency_us', label: 'Max latency', numeric: true, format: fmtUs },
      { key: 'slow_calls', label: 'Calls > 50 µs', numeric: true, format: fmtInt },
      { key: 'bottleneck_iterator', label: 'Bottleneck' },
    ],
    rows: data.summary, name: 'pipelines', caption: 'Input pipelines',
  });
  const body = h('div', { class: 'pipeline-body' });
  const draw = (a) => { body.replaceChildren(...analysisView(analyses[a], a)); body.dataset.pipeline = String(a); };
  const select = h('select', { id: 'pipeline-select', 'aria-label': 'Input pipeline', onchange: (e) => draw(Number(e.target.value)) },
    analyses.map((an, a) => h('option', { value: String(a) }, `${an.host} · ${an.input_pipeline} (${an.root})`)));
  // (Element.append writes a null child as the text "null": leave the picker out instead.)
  root.append(card('Input pipelines, most input-bound host first', summary),
    ...(analyses.length > 1 ? [h('div', { class: 'toolbar' }, h('label', { class: 'options' }, 'Pipeline ', select))] : []),
    body);
  draw(0);
}
