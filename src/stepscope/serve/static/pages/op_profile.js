// @ts-check
// Op profile: device time as a tree (by program or by category) with FLOP rate and memory
// bandwidth against the device's peaks; idle time included unless excluded. Fields:
// docs/tools/op_profile.md.
import { field } from '../units.js';
import { card, code, fmtPct, fmtUnit, fmtUs, h, num } from '../util.js';
import { ensureStyles, tile } from './_gpu_tools.js';

const pct = (v) => (v === null || v === undefined ? '–' : fmtPct(v));

function bar(value) {
  const width = Math.max(0, Math.min(100, value || 0));
  return h('span', { class: 'hbar-track' }, h('span', { class: 'hbar', style: { width: `${width}%` } }));
}

function rowsOf(node, depth, path, out) {
  out.push([node, depth, path]);
  (node.children || []).forEach((c, i) => rowsOf(c, depth + 1, `${path}.children.${i}`, out));
  return out;
}

function tree(rootNode, name, field) {
  const rows = rowsOf(rootNode, 0, field, []);
  const open = new Set([field]);
  const tbody = h('tbody');
  function draw() {
    tbody.replaceChildren();
    for (const [node, depth, path] of rows) {
      const parent = path.slice(0, path.lastIndexOf('.children.'));
      if (depth > 0 && !open.has(parent)) continue;
      const hasKids = (node.children || []).length > 0;
      const toggle = hasKids
        ? h('button', { type: 'button', class: 'link', 'aria-expanded': String(open.has(path)),
          onclick: () => { if (open.has(path)) open.delete(path); else open.add(path); draw(); } }, open.has(path) ? '▾' : '▸')
        : h('span', { style: { display: 'inline-block', width: '1em' } });
      tbody.append(h('tr', { dataset: { kind: node.kind, name: node.name } },
        h('td', { style: { paddingLeft: `${depth * 16}px` } }, toggle, ' ', node.kind === 'op' ? code(node.name) : node.name,
          node.tf_op_name ? h('div', { class: 'muted' }, node.tf_op_name) : null),
        h('td', { class: 'numeric' }, bar(node.time_percent), num(node.time_us, fmtUs(node.time_us), `${path}.time_us`)),
        h('td', { class: 'numeric' }, num(node.time_percent, fmtPct(node.time_percent), `${path}.time_percent`)),
        h('td', { class: 'numeric' }, fmtUnit(node.flop_rate_gflops, 'GFLOP/s')),
        h('td', { class: 'numeric' }, pct(node.flop_utilization_percent)),
        h('td', { class: 'numeric' }, fmtUnit(node.memory_bw_gbps, 'GB/s')),
        h('td', { class: 'numeric' }, pct(node.memory_bw_utilization_percent))));
    }
  }
  draw();
  const head = ['Name', 'Time', 'Time (%)', 'FLOP rate', 'FLOP util.', 'Bandwidth', 'Bandwidth util.']
    .map((t, i) => h('th', { scope: 'col', class: i ? 'numeric' : null }, t));
  return h('table', { class: 'data op-tree', dataset: { table: name } }, h('thead', {}, h('tr', {}, head)), tbody);
}

export async function render(root, data) {
  await ensureStyles();
  const d = data.device || {};
  const views = { by_program: 'By program', by_category: 'By category' };
  let view = 'by_program';
  const holder = h('div');
  const draw = () => holder.replaceChildren(tree(data[view], 'op_profile', view));
  const picker = h('div', { class: 'toolbar', role: 'radiogroup', 'aria-label': 'Group by' },
    Object.entries(views).map(([key, text]) => h('label', {},
      h('input', { type: 'radio', name: 'op-profile-view', value: key, checked: key === view,
        onchange: () => { view = key; draw(); } }), ` ${text} `)));
  draw();
  root.append(
    card('Device', h('div', { class: 'metric-row' },
      tile('Device', h('span', {}, d.device || '–')),
      tile('Peak compute', field('op_profile', 'device.peak_gflops_per_s', d.peak_gflops_per_s)),
      tile('Peak memory bandwidth', field('op_profile', 'device.peak_memory_gb_per_s', d.peak_memory_gb_per_s)),
      tile('FLOPs and bytes from', h('span', { class: 'cost-source' }, data.cost_source || '–')),
      tile('Idle', num(data.idle_us, fmtUs(data.idle_us), 'idle_us')),
      tile('Peaks from', h('span', {}, d.source || 'unknown')))),
    card('Device time', picker,
      h('p', { class: 'muted' }, data.exclude_idle ? 'Idle time excluded (option exclude_idle).' : 'Idle time included as IDLE; the exclude_idle option leaves it out.'),
      holder),
  );
}
