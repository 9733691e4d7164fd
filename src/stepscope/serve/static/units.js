// @ts-check
// The unit of every number a tool returns, as the tool declares it once (stepscope.fields
// `out(unit=...)`; api/units serves them by JSON path). Pages and tables format numbers through
// these and util.fmtUnit, so one field is written the same way everywhere.
import { fmtUnit, getJSON, num } from './util.js';

/** @type {Record<string, Record<string, string>>} tool -> JSON path -> unit */
export const UNITS = (await getJSON('api/units')).tools;

/**
 * The units of the fields under `prefix` of a tool's answer, by their key below it:
 * unitsAt('kernel_stats', 'rows[]') -> {total_duration_us: 'us', ...}.
 * @param {string} tool
 * @param {string} prefix
 * @returns {Record<string, string>}
 */
export function unitsAt(tool, prefix) {
  const start = prefix ? `${prefix}.` : '';
  /** @type {Record<string, string>} */
  const found = {};
  for (const [path, unit] of Object.entries(UNITS[tool] || {})) {
    if (path.startsWith(start) && !path.slice(start.length).includes('.')) found[path.slice(start.length)] = unit;
  }
  return found;
}

/**
 * The unit of one field: unitOf('hlo_stats', 'summary.total_gflops') -> 'GFLOP'. A path with
 * list indices (`memories.0.summary.x`) is looked up as the declaration writes it (`[]`); a
 * key of a dict field (`breakdown_ms.input`) has the dict's unit.
 * @param {string} tool
 * @param {string} path
 */
export function unitOf(tool, path) {
  const declared = UNITS[tool] || {};
  if (path in declared) return declared[path];
  const generic = path.replace(/\.(\d+)(?=\.|$)/g, '[]');
  const parent = generic.includes('.') ? generic.slice(0, generic.lastIndexOf('.')) : '';
  return declared[generic] || declared[generic.replace(/\[\]$/, '')] || (parent && declared[parent]) || '';
}

/**
 * A number of a tool's answer, written in its declared unit and kept with its JSON path (read
 * by the browser tests, which compare it with the tool's JSON).
 * @param {string} tool
 * @param {string} path
 * @param {unknown} value
 */
export function field(tool, path, value) {
  return num(value, fmtUnit(value, unitOf(tool, path)), path);
}
