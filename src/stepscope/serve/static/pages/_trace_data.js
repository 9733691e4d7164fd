// @ts-check
// Trace viewer data: the binary window format (STV1, see docs/tools/trace_viewer.md), a small
// cache of windows, and the JSON endpoints (steps, search, event details, box selection).
import { getJSON, query } from '../util.js';
import { covers, ranges } from './_trace_pod.js';

const DTYPES = { i1: Int8Array, u1: Uint8Array, i4: Int32Array, u4: Uint32Array, f4: Float32Array, f8: Float64Array };
const STORED = { ...DTYPES, i2: Int16Array, u2: Uint16Array }; // the compact form's types (and u3)
const FLOATS = new Set(['f4', 'f8']);
const API = 'api/tool/trace_viewer';
// The window form the page asks for: the same arrays stored narrower (compact.py; decision 327),
// a third of the bytes, widened back by `decode` into the arrays the plain form has.
export const WINDOW_FORM = 'compact';

// Stable colours by name: a hash of the name picks one of these (light enough for dark text).
export const PALETTE = [
  '#8ab4f8', '#81c995', '#fdd663', '#f28b82', '#c58af9', '#78d9ec', '#fcad70', '#ff8bcb',
  '#a8c7fa', '#a1d9a5', '#ffe08a', '#f6aea9', '#d7aefb', '#9fe2f0', '#fdc69c', '#ffb3dc',
  '#669df6', '#5bb974', '#f9c74f', '#ee675c', '#af5cf7', '#4ecde6', '#fa903e', '#ff63b8',
];

export function colorIndex(name) {
  let hash = 2166136261; // FNV-1a
  for (let i = 0; i < name.length; i += 1) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  return (hash >>> 0) % PALETTE.length;
}

// Backing stores of widened arrays that no window uses any more (`release`), reused by the
// next `decode`: a near-full window widens about 3.8 MB of arrays, and fresh ones for every
// window made V8 collect garbage (half the decode's p95, decision 372). Bounded: the largest
// few are kept; a store is taken only by an array that needs at least a quarter of it.
const SPARE = [];
const MAX_SPARE = 8;
const OWNED = new WeakSet(); // the ArrayBuffers `widen` allocated (never a response's body)

/** An array of type `type` and length `n`: a view of a spare store when one fits, else new
 * (a little larger, so that the next window, a few events longer, fits it too). */
function fresh(type, n) {
  const bytes = n * type.BYTES_PER_ELEMENT;
  let best = -1;
  for (let k = 0; k < SPARE.length; k += 1) {
    const size = SPARE[k].byteLength;
    if (size >= bytes && size <= 4 * bytes + 4096 && (best < 0 || size < SPARE[best].byteLength)) best = k;
  }
  if (best >= 0) return new type(SPARE.splice(best, 1)[0], 0, n);
  const store = new ArrayBuffer(Math.ceil((bytes + (bytes >> 3)) / 8) * 8);
  OWNED.add(store);
  return new type(store, 0, n);
}

/** Gives the arrays of a decoded window (`decode`'s `arrays`) back for reuse: the caller
 * reads none of them again. */
export function release(arrays) {
  for (const array of Object.values(arrays)) {
    const store = array.buffer;
    if (OWNED.has(store) && !SPARE.includes(store)) SPARE.push(store);
  }
  SPARE.sort((x, y) => y.byteLength - x.byteLength);
  SPARE.length = Math.min(SPARE.length, MAX_SPARE);
}

// The loops that widen, one function per kind of array they write (Int32Array or Float64Array)
// and per coding, u3's high bytes apart: V8 compiles a loop for the typed-array kinds it has
// seen and throws the code away when another comes, and one loop over every kind was compiled
// and deoptimized again and again in a page's first ten windows (decision 590). The stored
// values are first copied into `out` by `set` (a native conversion from any stored type), so
// each loop reads and writes `out` only, and a Uint8Array of high bytes where u3 has them.
// Whole numbers under 2^53 throughout: every sum is exact, in any order; an Int32Array keeps
// each value modulo 2^32 (what storing the exact sum keeps), so `| 0` there changes nothing.

function baseI32(out, base) {
  for (let i = 0; i < out.length; i += 1) out[i] += base;
}

function baseF64(out, base) {
  for (let i = 0; i < out.length; i += 1) out[i] += base;
}

function baseHighI32(out, hi, base) {
  for (let i = 0; i < out.length; i += 1) out[i] += hi[i] * 65536 + base;
}

function baseHighF64(out, hi, base) {
  for (let i = 0; i < out.length; i += 1) out[i] += hi[i] * 65536 + base;
}

// value[i] = value[i - 1] + step[i] over [from, to), value[from - 1] = `value`; the last value
function deltaI32(out, value, from, to) {
  let v = value | 0;
  for (let i = from; i < to; i += 1) { v = (v + out[i]) | 0; out[i] = v; }
  return v;
}

function deltaF64(out, value, from, to) {
  let v = value;
  for (let i = from; i < to; i += 1) { v += out[i]; out[i] = v; }
  return v;
}

function deltaHighI32(out, hi, value, from, to) {
  let v = value | 0;
  for (let i = from; i < to; i += 1) { v = (v + out[i] + hi[i] * 65536) | 0; out[i] = v; }
  return v;
}

function deltaHighF64(out, hi, value, from, to) {
  let v = value;
  for (let i = from; i < to; i += 1) { v += out[i] + hi[i] * 65536; out[i] = v; }
  return v;
}

/** `out` (holding the stored values) widened in place by coding `a`: `hi`, u3's high bytes. */
function widenInto(out, hi, a) {
  const wide = out instanceof Float64Array;
  if (a.enc === 'base') {
    if (hi) (wide ? baseHighF64 : baseHighI32)(out, hi, a.base);
    else if (a.base !== 0) (wide ? baseF64 : baseI32)(out, a.base);
    return;
  }
  if (a.enc !== 'delta') throw new Error(`the server sent an array coded as ${a.enc}`);
  // the steps' running sum from `base`, but the patches' values where listed
  let value = a.base;
  let from = 0;
  for (const [at, patched] of [...a.patches, [out.length, 0]]) {
    if (hi) value = (wide ? deltaHighF64 : deltaHighI32)(out, hi, value, from, at);
    else value = (wide ? deltaF64 : deltaI32)(out, value, from, at);
    if (at < out.length) { value = patched; out[at] = patched; }
    from = at + 1;
  }
}

/** The plain array (type `a.as`; a narrower view of the same values where no copy is needed)
 * of an entry stored compact (`a.enc`: runs, base or delta; `a.dtype` u3: n low halves as u2,
 * then n high bytes). Every element is written (a reused store holds an earlier window's
 * values). */
function widen(buffer, a) {
  const n = a.length;
  if (a.enc === 'runs') {
    const out = fresh(DTYPES[a.as], n);
    let from = 0;
    for (const [end, value] of a.runs) { out.fill(value, from, end); from = end; }
    out.fill(0, from);
    return out;
  }
  const u3 = a.dtype === 'u3';
  const s = new (u3 ? Uint16Array : STORED[a.dtype])(buffer, a.offset, n);
  // Whole numbers from 0 (depths, name indices): the stored view itself, the same values
  // without a copy (the plain form's Int32Array and this Uint8Array read alike).
  if (a.enc === 'base' && a.base === 0 && !u3 && !FLOATS.has(a.as)) return s;
  const hi = u3 ? new Uint8Array(buffer, a.offset + 2 * n, n) : null;
  const out = fresh(DTYPES[a.as], n);
  if (out instanceof Int32Array || out instanceof Float64Array) {
    out.set(s);
    widenInto(out, hi, a);
    return out;
  }
  // Another plain type (the server sends none coded today): exact in a Float64Array, then
  // converted as storing each value would.
  const exact = new Float64Array(n);
  exact.set(s);
  widenInto(exact, hi, a);
  out.set(exact);
  return out;
}

/** Header and typed arrays of an STV1 buffer: views in place, or widened from the compact form. */
export function decode(buffer) {
  const magic = new Uint8Array(buffer, 0, 4);
  if (String.fromCharCode(...magic) !== 'STV1') throw new Error('the server sent no trace window');
  const size = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, size)));
  const arrays = {};
  for (const a of header.arrays) {
    arrays[a.name] = a.enc ? widen(buffer, a) : new DTYPES[a.dtype](buffer, a.offset, a.length);
  }
  return { header, arrays };
}

/** A decoded window, with what drawing needs precomputed once (colours, order by colour). */
function prepare({ header, arrays }) {
  const n = header.events;
  const names = header.names;
  const nameColor = Uint8Array.from(names, colorIndex);
  const color = new Uint8Array(n);
  const counts = new Uint32Array(PALETTE.length + 1);
  for (let i = 0; i < n; i += 1) {
    const c = nameColor[arrays.name[i]];
    color[i] = c;
    counts[c + 1] += 1;
  }
  for (let c = 1; c < counts.length; c += 1) counts[c] += counts[c - 1];
  const offsets = Uint32Array.from(counts);
  const byColor = new Uint32Array(n); // event positions grouped by colour: one fillStyle each
  const cursor = Uint32Array.from(counts);
  for (let i = 0; i < n; i += 1) byColor[cursor[color[i]]++] = i;
  const counters = header.counters.map((c) => {
    const t = arrays[`c${c.id}.t`];
    const v = arrays[`c${c.id}.v`];
    let max = 0;
    for (let i = 0; i < v.length; i += 1) if (v[i] > max) max = v[i];
    return { ...c, t, v, max };
  });
  return {
    arrays, // as decoded: given back for reuse (`release`) when the cache lets the window go
    t0: header.t0, t1: header.t1, bucket: header.bucket_ns, level: header.level, n, names,
    event: arrays.event, line: arrays.line, depth: arrays.depth, start: arrays.start,
    dur: arrays.dur, name: arrays.name, color, byColor, colorOffsets: offsets,
    flows: {
      n: header.flows, total: header.flows_total, kinds: header.flow_kinds, kind: arrays.flow_kind,
      src: arrays.src, dst: arrays.dst, srcLine: arrays.src_line, srcDepth: arrays.src_depth,
      srcStart: arrays.src_start, dstLine: arrays.dst_line, dstDepth: arrays.dst_depth,
      dstStart: arrays.dst_start,
    },
    counters,
  };
}

export class TraceClient {
  /** `extra`: parameters of every query (a multi-host view's hosts and alignment). */
  constructor(run, host, extra = {}) {
    this.run = run;
    this.host = host;
    this.extra = extra;
    this.windows = []; // most recent first
    this.maxWindows = 8;
    this.shown = null; // the window the view draws: its arrays are not reused while it does
    this.fetches = 0;
  }

  url(endpoint, params) {
    return `${API}/${endpoint}?${query({ run: this.run, host: this.host, ...this.extra, ...params })}`;
  }

  /**
   * A cached window covering [t0, t1] with buckets no coarser than `bucket` (and, on a
   * multi-host view, holding the tracks `need` names), or null.
   */
  /** @param {import('./_trace_pod.js').TrackNeed | null} [need] */
  cached(t0, t1, bucket, need = null) {
    const found = this.windows.find((w) => w.t0 <= t0 && w.t1 >= t1 && w.bucket <= bucket * 1.01
      && w.bucket >= bucket / 4 && covers(w.tracks, need));
    if (found) this.windows = [found, ...this.windows.filter((w) => w !== found)];
    return found || null;
  }

  /** @param {import('./_trace_pod.js').TrackNeed | null} [need] */
  async window(t0, t1, res, signal, need = null) {
    const tracks = need ? { lines: ranges(need.lines) || 'none', counter_ids: ranges(need.counters) || 'none' } : {};
    const params = { t0: Math.floor(t0), t1: Math.ceil(t1), res, ...tracks, form: WINDOW_FORM };
    const response = await fetch(this.url('window', params), { signal });
    if (!response.ok) {
      let message = response.statusText;
      try { message = (await response.json()).error || message; } catch { /* not JSON */ }
      throw new Error(message);
    }
    this.fetches += 1;
    const data = prepare(decode(await response.arrayBuffer()));
    if (need) data.tracks = { lineSet: new Set(need.lines), counterSet: new Set(need.counters) };
    const kept = [data, ...this.windows];
    this.windows = kept.slice(0, this.maxWindows);
    // the windows let go: their arrays serve the next decodes (nothing else reads them)
    for (const old of kept.slice(this.maxWindows)) if (old !== this.shown) release(old.arrays);
    return data;
  }

  steps(signal) { return getJSON(this.url('steps', {}), signal); }

  search(params, signal) { return getJSON(this.url('search', params), signal); }

  event(id, signal) { return getJSON(this.url('event', { id }), signal); }

  select(params, signal) { return getJSON(this.url('select', params), signal); }
}
