// @ts-check
// Helpers of the kernel stats, memory profile, pod viewer, tf.data and diagnostics pages.
import { h, pageStyle } from '../util.js';

/** @returns {Promise<void>} once the GPU tools' sheet applies */
export function ensureStyles() {
  return pageStyle('gpu_tools', '_gpu_tools.css');
}

export function severityBadge(severity) {
  return h('span', { class: `sev sev-${severity}`, dataset: { severity } }, severity);
}

export function exportCsv(ctx) {
  return h('a', { class: 'button', href: ctx.csvUrl(), download: '', id: 'export-csv' }, 'Export as CSV');
}

/** A metric tile: title over a number kept with its JSON path (read by the browser tests). */
export function tile(title, content) {
  return h('div', { class: 'metric' }, h('div', { class: 'label' }, title), h('div', {}, content));
}
