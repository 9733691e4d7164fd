// @ts-check
// DOM building and number formatting shared by the shell and the pages.
// Profile data (op names, file names) is untrusted text: it only ever goes into text nodes and
// attributes, never into innerHTML.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'style' && typeof value === 'object') Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** h('div', {class: 'x'}, 'text', child...) -> HTMLElement */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** svg('rect', {x: 1}) -> SVGElement */
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** GET a JSON route of our server (relative URL); errors carry the server's message. */
export async function getJSON(url, signal) {
  const response = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  const text = await response.text();
  let body;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new HttpError(response.status, `bad answer from ${url}: ${text.slice(0, 120)}`);
  }
  if (!response.ok) throw new HttpError(response.status, (body && body.error) || response.statusText);
  return body;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, value);
  }
  return search.toString();
}

// ---- numbers -------------------------------------------------------------------------------

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

/** A duration given in ns, in the unit that keeps 3-4 significant digits. */
export function fmtNs(ns) {
  if (!isNum(ns)) return '–';
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`; // zero too: never a bare, unitless 0
  if (a < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

export const fmtMs = (ms) => (isNum(ms) ? fmtNs(ms * 1e6) : '–');
export const fmtUs = (us) => (isNum(us) ? fmtNs(us * 1e3) : '–');
export const fmtPct = (p, digits = 1) => (isNum(p) ? `${p.toFixed(digits)}%` : '–');
export const fmtInt = (n) => (isNum(n) ? Math.round(n).toLocaleString('en-US') : '–');

/** "1 row", "2 rows", "1,024 rows": a count with its noun in the right number. */
export const plural = (n, word, many = `${word}s`) => `${fmtInt(n)} ${n === 1 ? word : many}`;

export function fmtNum(v) {
  if (!isNum(v)) return v === undefined || v === null ? '–' : String(v);
  if (Number.isInteger(v)) return fmtInt(v);
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4).replace(/\.?0+$/, '');
}

/** A number shown with its raw value kept in data attributes (the browser tests read them). */
export function num(value, text, field) {
  return h('span', { class: 'num', dataset: field ? { field, value } : { value } }, text);
}

/** Title-case a snake_case key: "device_compute" -> "Device compute". */
export function label(key) {
  // The unit is shown with each value, so a key's unit suffix is left out of its label.
  const text = String(key).replace(/_(ns|us|ms|bytes|pct)$/, '').replace(/_/g, ' ').trim();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Formats a value by the unit its key names (_ns, _ms, _us, percent...). */
export function fmtByKey(key, value) {
  if (!isNum(value)) {
    if (Array.isArray(value)) return value.map(String).join(', ');
    if (value && typeof value === 'object') return JSON.stringify(value);
    return value === undefined || value === null || value === '' ? '–' : String(value);
  }
  const k = key.toLowerCase();
  if (k.endsWith('_ns')) return fmtNs(value);
  if (k.endsWith('_us')) return fmtUs(value);
  if (k.endsWith('_ms')) return fmtMs(value);
  if (k.endsWith('_bytes')) return fmtBytes(value);
  if (k.includes('percent') || k.endsWith('_pct') || k.endsWith('fraction_pct')) return fmtPct(value);
  return fmtNum(value);
}

export function fmtBytes(n) {
  if (!isNum(n)) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

// ---- layout helpers used by every page ----------------------------------------------------------

export function card(title, ...body) {
  return h('section', { class: 'card' }, title ? h('h2', {}, title) : null, ...body);
}

/** A definition list of key/value pairs; nested objects become nested lists. */
export function kvList(obj, fieldPrefix = '') {
  const items = [];
  for (const [key, value] of Object.entries(obj || {})) {
    const field = fieldPrefix ? `${fieldPrefix}.${key}` : key;
    let shown;
    if (value && typeof value === 'object' && !Array.isArray(value)) shown = kvList(value, field);
    else if (isNum(value)) shown = num(value, fmtByKey(key, value), field);
    else shown = fmtByKey(key, value);
    items.push(h('dt', {}, label(key)), h('dd', {}, shown));
  }
  return h('dl', { class: 'kv' }, items);
}

function breakable(text, pattern) {
  const children = [];
  String(text ?? '').split(pattern).forEach((part, i) => {
    if (i) children.push(h('wbr'));
    children.push(part);
  });
  return children;
}

/** An op type (CamelCase) that may wrap between its words. */
export function typeName(text) {
  return h('span', { title: String(text ?? '') }, breakable(text, /(?<=[a-z0-9])(?=[A-Z])/));
}

/** A long op or file name that may wrap after '/', ':' and '.', in a monospace span. */
export function code(text) {
  const parts = String(text ?? '').split(/(?<=[/:.])/);
  const children = [];
  parts.forEach((part, i) => { if (i) children.push(h('wbr')); children.push(part); });
  return h('span', { class: 'mono', title: String(text ?? '') }, children);
}

export function note(text, kind = 'info') {
  return h('p', { class: `note note-${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}
