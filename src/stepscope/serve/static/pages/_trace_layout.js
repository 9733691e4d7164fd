// @ts-check
// Trace viewer layout: the bands top to bottom (sections, tracks, counter tracks, host bands),
// the tracks the reader pinned (kept at the top, above the scrolling part), the track filter,
// and the conversion between a band's layout y and the canvas.

export const AXIS_H = 26;
export const SECTION_H = 22;
export const ROW_H = 16;
export const TRACK_PAD = 3;
export const COUNTER_H = 38;
export const GUTTER = 240;
export const HOST_H = 24;
export const PIN_KEY = 'pinned';

/**
 * What the reader chose: tracks pinned to the top (`line:N`, `counter:N`) and the track filter
 * (a substring of a track's name or its section's).
 * @typedef {{pinned?: Set<string>, filter?: string}} LayoutChoice
 */

/** The key a track or counter band is pinned by. */
export function trackKey(band) {
  return band.kind === 'counter' ? `counter:${band.counter}` : `line:${band.line}`;
}

/** A structure's sections as layout groups (keys prefixed per host on a multi-host view). */
function groupsOf(s, prefix) {
  const groups = [];
  if (s.counters.length) groups.push({ key: `${prefix}counters`, name: 'Counters', counters: s.counters });
  for (const sec of s.sections) groups.push({ key: `${prefix}plane:${sec.plane}`, name: sec.name, tracks: sec.tracks });
  return groups;
}

/** The bands of one group's tracks and counters (labels numbered when two share a name). */
function trackBands(section) {
  const bands = [];
  for (const c of section.counters || []) {
    bands.push({ kind: 'counter', h: COUNTER_H, label: c.name, counter: c.id, unit: c.unit, section: section.name });
  }
  const total = new Map();
  for (const t of section.tracks || []) total.set(t.name, (total.get(t.name) || 0) + 1);
  const nth = new Map();
  for (const t of section.tracks || []) {
    nth.set(t.name, (nth.get(t.name) || 0) + 1);
    const label = total.get(t.name) > 1 ? `${t.name} (${nth.get(t.name)})` : t.name;
    bands.push({ kind: 'track', h: Math.max(1, t.rows) * ROW_H + 2 * TRACK_PAD, label, line: t.line, rows: t.rows,
      events: t.events, section: section.name });
  }
  return bands;
}

/** Places `band` at the layout's current y. */
function place(L, band) {
  band.y = L.y;
  L.bands.push(band);
  if (band.kind === 'counter') L.counterY.set(band.counter, L.y);
  if (band.kind === 'track') L.lineY[band.line] = L.y + TRACK_PAD;
  L.y += band.h;
}

function appendGroups(L, groups, collapsed, choice) {
  const needle = (choice.filter || '').trim().toLowerCase();
  const pinned = choice.pinned || new Set();
  for (const section of groups) {
    const all = trackBands(section);
    // Pinned tracks are drawn at the top, not in their section; the filter keeps the tracks
    // whose name, or whose section's, holds the text.
    const sectionMatch = !needle || section.name.toLowerCase().includes(needle);
    const kept = all.filter((b) => !pinned.has(trackKey(b)) && (sectionMatch || b.label.toLowerCase().includes(needle)));
    if (!kept.length && (needle || all.length)) continue;
    const closed = collapsed.has(section.key);
    place(L, { kind: 'section', h: SECTION_H, key: section.key, label: section.name, closed, count: kept.length });
    if (!closed) for (const b of kept) place(L, b);
  }
}

/**
 * Bands top to bottom; lineY[line] = content y of a track's first row (-1 when hidden). A
 * multi-host structure (`hosts`) gets a host band per host (its steps drawn in it) above that
 * host's sections; a collapsed host shows its band alone. Pinned tracks come first, under a
 * "Pinned" band, and stay in view while the rest scrolls (`pinnedH`: their height).
 * @param {any} structure
 * @param {Set<string>} collapsed
 * @param {LayoutChoice} [choice]
 */
export function buildLayout(structure, collapsed, choice = {}) {
  const hosts = structure.hosts || [structure];
  const maxLine = Math.max(0, ...hosts.flatMap((x) => x.sections.flatMap((s) => s.tracks.map((t) => t.line))));
  const L = { bands: /** @type {any[]} */ ([]), y: 0, lineY: new Float64Array(maxLine + 1).fill(-1), counterY: new Map() };
  const pinned = choice.pinned || new Set();
  if (pinned.size) {
    const hostOf = (band, host) => (structure.hosts ? { ...band, label: `${host.name}: ${band.label}` } : band);
    const found = hosts.flatMap((host) => groupsOf(host, '').flatMap((g) => trackBands(g).map((b) => hostOf(b, host))))
      .filter((b) => pinned.has(trackKey(b)));
    if (found.length) {
      place(L, { kind: 'section', h: SECTION_H, key: PIN_KEY, label: 'Pinned', closed: false, count: found.length, pinned: true });
      for (const b of found) place(L, { ...b, pinned: true });
    }
  }
  const pinnedH = L.y;
  if (!structure.hosts) appendGroups(L, groupsOf(structure, ''), collapsed, choice);
  for (const [k, host] of (structure.hosts || []).entries()) {
    const key = `host:${host.name}`;
    const closed = collapsed.has(key);
    place(L, { kind: 'host', h: HOST_H, key, label: host.name, closed, host: k,
      count: host.sections.reduce((n, s) => n + s.tracks.length, 0) });
    if (!closed) appendGroups(L, groupsOf(host, `${key}:`), collapsed, choice);
  }
  return { bands: L.bands, lineY: L.lineY, counterY: L.counterY, height: L.y, pinnedH };
}

/** Canvas y of layout y `ly`: the pinned part stays under the axis, the rest scrolls. */
export function toScreen(s, ly) {
  return ly < s.layout.pinnedH ? AXIS_H + ly : AXIS_H + ly - s.scrollY;
}

/** Layout y under canvas y `py` (below the axis). */
export function toLayout(s, py) {
  const y = py - AXIS_H;
  return y < s.layout.pinnedH ? y : y + s.scrollY;
}

/** The band under layout y, or null. */
export function bandAt(layout, y) {
  for (const b of layout.bands) if (y >= b.y && y < b.y + b.h) return b;
  return null;
}
