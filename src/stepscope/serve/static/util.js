// @ts-check
// DOM building and number formatting shared by the shell and the pages.
// Profile data (op names, file names) is untrusted text: it only ever goes into text nodes and
// attributes, never into innerHTML.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * What `h` and `svg` accept as children: text, numbers, nodes, nested lists; null, undefined
 * and false are skipped.
 * @typedef {string | number | boolean | Node | null | undefined | ChildList} Child
 * @typedef {Child[]} ChildList
 */

/**
 * Attributes: `class`, `dataset` (an object), `style` (an object), `on<event>` (a listener),
 * anything else set as a string (true: present, false/null/undefined: absent).
 * @typedef {Record<string, unknown>} Attrs
 */

/**
 * Appends ``children`` (nested lists flattened, in order) to ``el``.
 * @param {Element} el
 * @param {ChildList} children
 */
function append(el, children) {
  for (const child of children) {
    if (Array.isArray(child)) append(el, child);
    else if (child !== undefined && child !== null && child !== false) {
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
}

/**
 * @template {HTMLElement | SVGElement} E
 * @param {E} el
 * @param {Attrs | null | undefined} attrs
 * @param {ChildList} children
 * @returns {E}
 */
function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', String(value));
    else if (key === 'dataset' && typeof value === 'object') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === 'style' && typeof value === 'object') Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/**
 * h('div', {class: 'x'}, 'text', child...) -> HTMLDivElement
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/**
 * svg('rect', {x: 1}) -> SVGRectElement
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {SVGElementTagNameMap[K]}
 */
export function svg(tag, attrs, ...children) {
  const el = /** @type {SVGElementTagNameMap[K]} */ (document.createElementNS(SVG_NS, tag));
  return build(el, attrs, children);
}

/**
 * @template {Node} N
 * @param {N} el
 * @returns {N}
 */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export class HttpError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * GET a JSON route of our server (relative URL); errors carry the server's message.
 * @param {string} url
 * @param {AbortSignal} [signal]
 * @returns {Promise<any>} the parsed JSON (each page's typedefs say what it reads)
 */
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

/**
 * @param {Record<string, string | number | boolean | null | undefined>} params
 * @returns {string} the query string, without the empty values
 */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  return search.toString();
}

// ---- numbers -------------------------------------------------------------------------------

/**
 * @param {unknown} v
 * @returns {v is number}
 */
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

/**
 * A duration given in ns, in the unit that keeps 3-4 significant digits.
 * @param {unknown} ns
 * @returns {string}
 */
export function fmtNs(ns) {
  if (!isNum(ns)) return '–';
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`; // zero too: never a bare, unitless 0
  if (a < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** @type {Array<[number, string]>} */
const TIME_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];

/**
 * Label of an axis tick at `t` ns when ticks are `step` ns apart: the unit fits the value, and
 * there are as many decimals as the step needs, so neighbouring ticks always differ
 * (900.002 ms, 900.004 ms at 2 µs ticks; 1.00000001 s at 10 ns). Every time axis uses it.
 * @param {number} t
 * @param {number} step
 */
export function fmtTick(t, step) {
  const a = Math.abs(t);
  if (a < step / 2) return '0';
  const [unit, name] = TIME_UNITS.find(([u]) => a >= u) || TIME_UNITS[TIME_UNITS.length - 1];
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit / step) - 1e-9)));
  return `${(t / unit).toFixed(decimals)} ${name}`;
}

/** @param {unknown} ms */
export const fmtMs = (ms) => (isNum(ms) ? fmtNs(ms * 1e6) : '–');
/** @param {unknown} us */
export const fmtUs = (us) => (isNum(us) ? fmtNs(us * 1e3) : '–');
/**
 * @param {unknown} p
 * @param {number} [digits]
 */
export const fmtPct = (p, digits = 1) => (isNum(p) ? `${p.toFixed(digits)}%` : '–');
/** @param {unknown} n */
export const fmtInt = (n) => (isNum(n) ? Math.round(n).toLocaleString('en-US') : '–');

/**
 * "1 row", "2 rows", "1,024 rows": a count with its noun in the right number.
 * @param {number} n
 * @param {string} word
 * @param {string} [many]
 */
export const plural = (n, word, many = `${word}s`) => `${fmtInt(n)} ${n === 1 ? word : many}`;

/**
 * @param {unknown} v
 * @returns {string}
 */
export function fmtNum(v) {
  if (!isNum(v)) return v === undefined || v === null ? '–' : String(v);
  if (Number.isInteger(v)) return fmtInt(v);
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4).replace(/\.?0+$/, '');
}

/**
 * A number shown with its raw value kept in data attributes (the browser tests read them).
 * @param {unknown} value
 * @param {Child} text
 * @param {string} [field]
 */
export function num(value, text, field) {
  return h('span', { class: 'num', dataset: field ? { field, value } : { value } }, text);
}

/**
 * Title-case a snake_case key: "device_compute" -> "Device compute".
 * @param {string} key
 */
export function label(key) {
  // The unit is shown with each value, so a key's unit suffix is left out of its label.
  const text = String(key).replace(/_(ns|us|ms|bytes|pct|percent|mib|mb|gbps)$/, '').replace(/_/g, ' ').trim();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Formats a value by the unit its key names (_ns, _ms, _us, percent...).
 * @param {string} key
 * @param {unknown} value
 * @returns {string}
 */
export function fmtByKey(key, value) {
  if (!isNum(value)) {
    if (Array.isArray(value)) return value.map(String).join(', ');
    if (value && typeof value === 'object') return JSON.stringify(value);
    return value === undefined || value === null || value === '' ? '–' : String(value);
  }
  return fmtUnit(value, unitOfKey(key));
}

/**
 * The unit a key's suffix names (`_ns`, `_us`, `_ms`, `_bytes`, `_pct`/`percent`), or ''.
 * @param {string} key
 */
export function unitOfKey(key) {
  const k = key.toLowerCase();
  if (k.endsWith('_ns')) return 'ns';
  if (k.endsWith('_us')) return 'us';
  if (k.endsWith('_ms')) return 'ms';
  if (k.endsWith('_bytes')) return 'bytes';
  if (k.endsWith('_mib')) return 'MiB';
  if (k.endsWith('_mb')) return 'MB'; // 10^6 bytes, written in binary units as every size
  if (k.endsWith('_gbps')) return 'GB/s';
  if (k.startsWith('flop_rate') || k.endsWith('_gflops_per_s')) return 'GFLOP/s';
  if (k.endsWith('_gflops')) return 'GFLOP';
  if (k.includes('percent') || k.endsWith('_pct')) return '%';
  return '';
}

/**
 * Bytes in binary units (KiB, MiB, GiB: what allocators and devices count in), one decimal.
 * @param {unknown} n
 * @returns {string}
 */
export function fmtBytes(n) {
  if (!isNum(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** @type {Array<[number, string]>} */
const SI = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, '']];

/**
 * A quantity of `base` units (FLOP/s, B/s, FLOP) with the SI prefix that keeps 3-4 significant
 * digits: 1,234,567 GFLOP/s is "1.23 PFLOP/s", never a 7-digit number.
 * @param {number} v
 * @param {string} base
 */
function fmtSI(v, base) {
  const a = Math.abs(v);
  if (a === 0) return `0 ${base}`;
  const [scale, prefix] = SI.find(([s]) => a >= s) || SI[SI.length - 1];
  const x = v / scale;
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return `${x.toFixed(digits)} ${prefix}${base}`;
}

// Units as the tools declare them (stepscope.fields `out(unit=...)`, the docs/tools tables),
// each with how a value in it is written.
/** @type {Record<string, (v: number) => string>} */
const BY_UNIT = {
  ns: (v) => fmtNs(v),
  us: (v) => fmtNs(v * 1e3),
  ms: (v) => fmtNs(v * 1e6),
  s: (v) => fmtNs(v * 1e9),
  '%': (v) => fmtPct(v),
  percent: (v) => fmtPct(v),
  bytes: (v) => fmtBytes(v),
  B: (v) => fmtBytes(v),
  KiB: (v) => fmtBytes(v * 1024),
  MiB: (v) => fmtBytes(v * 1024 ** 2),
  GiB: (v) => fmtBytes(v * 1024 ** 3),
  MB: (v) => fmtBytes(v * 1e6),
  'bytes/s': (v) => fmtSI(v, 'B/s'),
  'GB/s': (v) => fmtSI(v * 1e9, 'B/s'),
  GFLOP: (v) => fmtSI(v * 1e9, 'FLOP'),
  'GFLOP/s': (v) => fmtSI(v * 1e9, 'FLOP/s'),
  'FLOP/byte': (v) => `${fmtNum(v)} FLOP/B`,
  kHz: (v) => fmtSI(v * 1e3, 'Hz'),
};
// How a zero is written: in the field's own unit, never a bare "0".
/** @type {Record<string, string>} */
const ZERO = { ns: '0 ns', us: '0 µs', ms: '0 ms', s: '0 s', '%': '0.0%', percent: '0.0%' };

/**
 * The one number formatter of the UI: a value in the unit its field declares (see BY_UNIT;
 * no unit: a plain number with thousands separators).
 * @param {unknown} value
 * @param {string | undefined | null} unit
 * @returns {string}
 */
export function fmtUnit(value, unit) {
  if (!isNum(value)) return value === undefined || value === null || value === '' ? '–' : String(value);
  const format = unit ? BY_UNIT[unit] : undefined;
  // a unit without a format of its own is written after the number; a compound one ("ms, %",
  // a field holding several quantities) says nothing about this value
  if (!format) return unit && /^[\w/]+$/.test(unit) ? `${fmtNum(value)} ${unit}` : fmtNum(value);
  if (value === 0 && unit && ZERO[unit]) return ZERO[unit];
  return format(value);
}

// ---- layout helpers used by every page ----------------------------------------------------------

/**
 * @param {Child} title
 * @param {...Child} body
 */
export function card(title, ...body) {
  return h('section', { class: 'card' }, title ? h('h2', {}, title) : null, ...body);
}

/**
 * A definition list of key/value pairs; nested objects become nested lists.
 * @param {object | null | undefined} obj
 * @param {string} [fieldPrefix]
 * @returns {HTMLDListElement}
 */
export function kvList(obj, fieldPrefix = '') {
  /** @type {HTMLElement[]} */
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

/**
 * @param {unknown} text
 * @param {RegExp} pattern
 * @returns {ChildList}
 */
function breakable(text, pattern) {
  /** @type {ChildList} */
  const children = [];
  String(text ?? '').split(pattern).forEach((part, i) => {
    if (i) children.push(h('wbr'));
    children.push(part);
  });
  return children;
}

/**
 * An op type (CamelCase) that may wrap between its words.
 * @param {unknown} text
 */
export function typeName(text) {
  return h('span', { title: String(text ?? '') }, breakable(text, /(?<=[a-z0-9])(?=[A-Z])/));
}

/**
 * A long op or file name that may wrap after '/', ':' and '.', in a monospace span.
 * @param {unknown} text
 */
export function code(text) {
  const parts = String(text ?? '').split(/(?<=[/:.])/);
  /** @type {ChildList} */
  const children = [];
  parts.forEach((part, i) => { if (i) children.push(h('wbr')); children.push(part); });
  return h('span', { class: 'mono', title: String(text ?? '') }, children);
}

/**
 * @param {Child} text
 * @param {string} [kind] info, warn or error
 */
export function note(text, kind = 'info') {
  return h('p', { class: `note note-${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}

/**
 * A banner above a page's content: what the reader must know about the data before reading
 * its numbers. One mechanism for every kind (`kind`: `partial` for an answer built from part
 * of a recording, `recorder` for a run the flight recorder saved...): a title, the text, and
 * links or buttons (`actions`).
 * @param {{kind: string, severity?: string, title: Child, body?: ChildList, actions?: ChildList}} options
 *   severity: info, warn or error
 */
export function banner({ kind, severity = 'info', title, body = [], actions = [] }) {
  const el = h('div', { class: `banner note note-${severity} banner-${kind}`, role: 'status', dataset: { banner: kind } },
    h('strong', { class: 'banner-title' }, title), ' ', body,
    actions.length ? h('span', { class: 'banner-actions' }, actions) : null);
  return el;
}

/**
 * The banner of an answer built from part of a recording (a tool answer's `partial_reads`:
 * a truncated file, repaired JSON, dropped events); null when it has none.
 * @param {{host: string, warnings: string[]}[] | undefined} reads
 * @param {boolean} [manyHosts] name each host
 */
export function partialBanner(reads, manyHosts = false) {
  if (!reads || !reads.length) return null;
  const lines = reads.flatMap((r) => r.warnings.map((w) => (manyHosts ? `${r.host}: ${w}` : w)));
  const el = banner({ kind: 'partial', severity: 'warn', title: 'Partial data:',
    body: [`this page shows only what could be read. ${lines.join('; ')}`] });
  el.classList.add('partial-banner');
  return el;
}

const pageStyles = new Map();

/**
 * A page's own stylesheet, added once. The promise resolves when it applies (or failed to
 * load: the page still renders unstyled), so a page awaiting it is marked rendered only once
 * its colours and sizes are its own: read before, a chart's computed colours were the
 * browser's defaults on a loaded machine.
 * @param {string} key the link's data-page-style
 * @param {string} file the sheet under static/pages/
 * @returns {Promise<void>}
 */
export function pageStyle(key, file) {
  let loaded = pageStyles.get(key);
  if (!loaded) {
    const link = h('link', { rel: 'stylesheet', href: `static/pages/${file}`, dataset: { pageStyle: key } });
    loaded = new Promise((resolve) => {
      link.addEventListener('load', () => resolve(undefined));
      link.addEventListener('error', () => resolve(undefined));
    });
    document.head.append(link);
    pageStyles.set(key, loaded);
  }
  return loaded;
}
