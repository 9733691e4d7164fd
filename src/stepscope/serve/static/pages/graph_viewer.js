// @ts-check
// Graph viewer: the HLO graph around one instruction, operands to the left and users to the
// right by hops, drawn as boxes and arrows; click a box to center on it. Fields:
// docs/tools/graph_viewer.md.
import { card, code, fmtInt, fmtUs, getJSON, h, note, query, svg } from '../util.js';
import { ensureStyles, tile } from './_gpu_tools.js';

const BOX_W = 190;
const BOX_H = 40;
const GAP_X = 70;
const GAP_Y = 14;
// A box's colour is a class: _gpu_tools.css gives each kind a light and a dark-theme fill (fixed
// fills stayed light in the dark theme, under light text).
const KINDS = new Set(['custom-call', 'parameter', 'constant']);

function kind(node) {
  if (node.distance === 0) return 'center';
  if (node.category.endsWith('fusion')) return 'fusion';
  return KINDS.has(node.opcode) ? node.opcode : 'other';
}

function drawGraph(data, ctx) {
  const nodes = data.nodes || [];
  const layers = [...new Set(nodes.map((n) => n.distance))].sort((a, b) => a - b);
  const pos = {};
  let rows = 0;
  layers.forEach((d, col) => {
    nodes.filter((n) => n.distance === d).forEach((n, row) => {
      pos[n.name] = { x: 10 + col * (BOX_W + GAP_X), y: 10 + row * (BOX_H + GAP_Y) };
      rows = Math.max(rows, row + 1);
    });
  });
  const W = 20 + layers.length * (BOX_W + GAP_X) - GAP_X;
  const H = 20 + rows * (BOX_H + GAP_Y);
  // a group, not an image: its nodes are buttons (an image has no interactive parts)
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: Math.min(W, 1400), role: 'group',
    'aria-label': `HLO graph around ${data.node}` },
  svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }))));
  for (const e of data.edges || []) {
    const a = pos[e.from];
    const b = pos[e.to];
    if (!a || !b) continue;
    root.append(svg('line', { class: 'edge', x1: a.x + BOX_W, y1: a.y + BOX_H / 2, x2: b.x, y2: b.y + BOX_H / 2,
      'marker-end': 'url(#arrow)', dataset: { from: e.from, to: e.to } }));
  }
  for (const n of nodes) {
    const p = pos[n.name];
    const label = n.name.length > 26 ? `${n.name.slice(0, 25)}…` : n.name;
    const g = svg('g', { class: 'node', tabindex: '0', role: 'button', dataset: { name: n.name, distance: String(n.distance) },
      onclick: () => ctx.setOption('node', n.name),
      onkeydown: (ev) => { if (ev.key === 'Enter') ctx.setOption('node', n.name); } },
    svg('rect', { x: p.x, y: p.y, width: BOX_W, height: BOX_H, rx: 4, class: `box kind-${kind(n)}` }),
    svg('text', { x: p.x + 6, y: p.y + 16, class: 'node-name' }, label),
    svg('text', { x: p.x + 6, y: p.y + 32, class: 'muted' }, `${n.category}${n.time_us !== null ? ` · ${fmtUs(n.time_us)}` : ''}`),
    svg('title', {}, `${n.expression}\n${n.tf_op_name || ''}`));
    root.append(g);
  }
  return h('figure', { class: 'graph', dataset: { chart: 'hlo_graph' }, style: { overflowX: 'auto' } }, root);
}

/**
 * The controls that steer the graph: the program, an op search (names of the shown program's
 * instructions, from the tool's search endpoint), and one button per top op to center on it.
 */
function steering(data, ctx) {
  const modules = data.modules || [];
  const current = `${data.module}(${data.program_id})`;
  const select = h('select', { id: 'graph-module', 'aria-label': 'Program',
    onchange: (e) => ctx.go({ module: e.target.value, node: '' }) },
  modules.map((m) => h('option', { value: `${m.name}(${m.program_id})`, selected: `${m.name}(${m.program_id})` === current },
    `${m.name}(${m.program_id})${m.time_us ? ` · ${fmtUs(m.time_us)}` : ''}`)));
  const list = h('datalist', { id: 'graph-ops' });
  const found = h('span', { class: 'count', 'aria-live': 'polite' });
  const search = h('input', { type: 'search', class: 'filter', id: 'graph-search', list: 'graph-ops', placeholder: 'Find an op by name…',
    'aria-label': 'Find an instruction of this program by name; Enter centers the graph on it', autocomplete: 'off' });
  let timer = 0;
  let asked = '';
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const q = search.value.trim();
      if (!q || q === asked) return;
      asked = q;
      try {
        const r = await getJSON(`api/tool/graph_viewer/search?${query({ run: ctx.run, host: ctx.host, module: current, q })}`);
        if (q !== search.value.trim()) return;
        list.replaceChildren(...r.matches.map((m) => h('option', { value: m.name },
          `${m.category}${m.time_us ? ` · ${fmtUs(m.time_us)}` : ''}`)));
        found.textContent = `${fmtInt(r.total)} ${r.total === 1 ? 'match' : 'matches'}`;
      } catch (err) {
        found.textContent = err.message;
      }
    }, 150);
  });
  const open = () => { if (search.value.trim()) ctx.go({ module: current, node: search.value.trim() }); };
  search.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(); });
  const chips = (data.top_ops || []).map((op) => h('button', { type: 'button', class: `chip${op.name === data.node ? ' current' : ''}`,
    dataset: { node: op.name }, title: `${op.category}: ${fmtUs(op.time_us)}`, onclick: () => ctx.go({ module: current, node: op.name }) },
  op.name, h('span', { class: 'chip-time' }, fmtUs(op.time_us))));
  return h('div', { class: 'graph-steer' },
    h('div', { class: 'toolbar' },
      h('label', { class: 'options' }, 'Program ', select),
      h('span', {}, search, list, ' ', h('button', { type: 'button', class: 'tv-btn', onclick: open }, 'Show'), ' ', found)),
    chips.length ? h('div', { class: 'chips', role: 'group', 'aria-label': 'Ops with the most device time' },
      h('span', { class: 'muted' }, 'Top ops: '), chips) : null);
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const center = (data.nodes || []).find((n) => n.distance === 0) || {};
  // module and node are options of the tool (free text): the controls above set them
  ctx.go = (options) => {
    const params = { ...ctx.options, ...options };
    location.hash = ctx.href('graph_viewer', params).slice(1);
  };
  root.append(
    steering(data, ctx),
    card('Center', h('div', { class: 'metric-row' },
      tile('Program', h('span', {}, `${data.module}(${data.program_id})`)),
      tile('Instruction', code(data.node)),
      tile('Category', h('span', {}, center.category || '–')),
      tile('Framework op', code(center.tf_op_name || '–')),
      tile('Device time', h('span', {}, center.time_us !== null && center.time_us !== undefined ? fmtUs(center.time_us) : '–'))),
    h('p', {}, code(center.expression || ''))),
    card(`Graph (${data.depth} hops; operands left, users right)`,
      data.truncated ? note(`Only the first nodes of the walk are shown; lower the depth.`, 'warn') : null,
      drawGraph(data, ctx),
      h('p', { class: 'muted' }, 'Click an instruction to center the graph on it; hover for its HLO expression.')),
  );
}
