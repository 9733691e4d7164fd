// @ts-check
// Memory viewer: one XLA program's buffer assignment: peak, heap size over the program order
// (a step curve), and the buffers live at the peak. Fields: docs/tools/memory_viewer.md.
import { lineChart } from '../charts.js';
import { dataTable } from '../table.js';
import { unitsAt } from '../units.js';
import { card, fmtInt, fmtUnit, h, num } from '../util.js';
import { ensureStyles, tile } from './_gpu_tools.js';

const mib = (v) => fmtUnit(v, 'MiB');

function heapChart(heap) {
  // Step-shaped: the heap holds its size until the next allocation or free.
  const points = [];
  heap.forEach((p, i) => {
    if (i) points.push([p.position, heap[i - 1].mib]);
    points.push([p.position, p.mib]);
  });
  return lineChart({ series: [{ label: 'Heap size (MiB)', color: '#1a73e8', points }], unit: 'MiB',
    title: 'Heap size over the program order', xLabel: 'Heap event (allocation or free, in program order)' });
}

export async function render(root, data, ctx) {
  await ensureStyles();
  const picker = h('select', { 'aria-label': 'Program', id: 'program-picker',
    onchange: (e) => ctx.setOption('module', e.target.value) },
  (data.programs || []).map((p) => h('option', { value: String(p.program_id), selected: p.program_id === data.program_id },
    `${p.module}(${p.program_id}) · peak ${mib(p.peak_mib)}`)));
  const columns = [
    { key: 'size_mib', label: 'Size', numeric: true },
    { key: 'kind', label: 'Kind' },
    { key: 'instruction', label: 'HLO instruction', mono: true, pin: true, wide: true },
    { key: 'opcode', label: 'Opcode' },
    { key: 'shape', label: 'Shape', mono: true, wide: true },
    { key: 'tf_op_name', label: 'Framework op', mono: true, wide: true },
  ];
  const live = data.live_at_peak || [];
  root.append(
    h('div', { class: 'toolbar' }, h('label', {}, 'Program ', picker)),
    card('Summary', h('div', { class: 'metric-row' },
      tile('Program', h('span', {}, `${data.module}(${data.program_id})`)),
      tile('Peak memory', num(data.peak_mib, mib(data.peak_mib), 'peak_mib')),
      tile('Live for the whole program', num(data.indefinite_mib, mib(data.indefinite_mib), 'indefinite_mib')),
      tile('Buffers live at the peak', num(live.length, fmtInt(live.length), 'live_at_peak.length')),
      tile('Peak at heap event', num(data.peak_position, fmtInt(data.peak_position), 'peak_position')))),
    card('Heap', heapChart(data.heap || []),
      h('p', { class: 'muted' }, 'The heap of XLA\'s buffer assignment: parameters, outputs and constants from the start, temporaries from their allocation to their free.')),
    card('Buffers live at the peak', dataTable({ columns, rows: live, name: 'memory_viewer', caption: 'Buffers', filterable: true, units: unitsAt('memory_viewer', 'live_at_peak[]'),
      placeholder: 'Filter by instruction, shape or op… (/)', sort: { key: 'size_mib', desc: true } })),
  );
}
