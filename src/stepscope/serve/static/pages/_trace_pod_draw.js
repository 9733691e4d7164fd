// @ts-check
// Multi-host trace viewer: the band above each host's sections, with the host's steps drawn on
// the shared time axis, coloured by how long each step took against the same step on the
// other hosts (the median), so a late host stands out before any window is loaded.

const SLOW = 1.25; // at least 25% over the median of the hosts: red
const LATE = 1.1; // 10-25% over: amber
const COLORS = { fast: '#a8c7fa', late: '#fdd663', slow: '#f28b82' };

/** Median duration of each step number over the hosts (memoized on the structure). */
export function stepMedians(structure) {
  if (structure.stepMedians) return structure.stepMedians;
  const durations = new Map();
  for (const host of structure.hosts) {
    host.steps.number.forEach((n, i) => {
      if (!durations.has(n)) durations.set(n, []);
      durations.get(n).push(host.steps.dur_ns[i]);
    });
  }
  const medians = new Map();
  for (const [n, list] of durations) {
    list.sort((a, b) => a - b);
    const m = list.length >> 1;
    medians.set(n, list.length % 2 ? list[m] : (list[m - 1] + list[m]) / 2);
  }
  structure.stepMedians = medians;
  return medians;
}

/** How a host's step compares with the same step on the other hosts: 'fast', 'late' or 'slow'. */
export function stepClass(medians, number, dur) {
  const median = medians.get(number);
  if (!median) return 'fast';
  const ratio = dur / median;
  return ratio >= SLOW ? 'slow' : ratio >= LATE ? 'late' : 'fast';
}

/** First index of sorted `starts` whose step may end after t (binary search on starts). */
function firstFrom(starts, durs, t) {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] + durs[mid] < t) lo = mid + 1; else hi = mid;
  }
  return Math.max(0, lo - 1);
}

/** One host band: the name in the gutter, its steps (or its time extent) in the plot area. */
export function drawHostBand(ctx, s, band, y, sc, gutter) {
  const host = s.structure.hosts[band.host];
  ctx.fillStyle = '#d2e3fc';
  ctx.fillRect(0, y, s.W, band.h);
  ctx.fillStyle = '#174ea6';
  ctx.font = '600 12px system-ui, sans-serif';
  const name = band.label.length > 22 ? `${band.label.slice(0, 21)}…` : band.label;
  ctx.fillText(`${band.closed ? '▸' : '▾'} ${name}${band.closed ? `  (${band.count} tracks)` : ''}`, 6, y + band.h / 2);
  ctx.font = '11px system-ui, sans-serif';
  ctx.save();
  ctx.beginPath();
  ctx.rect(gutter, y, s.W - gutter, band.h);
  ctx.clip();
  const st = host.steps;
  if (!st.number.length) {
    ctx.fillStyle = '#9aa0a6';
    const x0 = Math.max(gutter, sc.x(host.start_ns));
    ctx.fillRect(x0, y + 9, Math.max(1, Math.min(s.W, sc.x(host.end_ns)) - x0), 6);
  } else {
    const medians = stepMedians(s.structure);
    const tEnd = sc.t(s.W);
    for (let i = firstFrom(st.start_ns, st.dur_ns, sc.t(gutter)); i < st.number.length && st.start_ns[i] <= tEnd; i += 1) {
      const x0 = sc.x(st.start_ns[i]);
      const w = Math.max(1, st.dur_ns[i] * sc.k - 1);
      ctx.fillStyle = COLORS[stepClass(medians, st.number[i], st.dur_ns[i])];
      ctx.fillRect(x0, y + 4, w, band.h - 8);
      const left = Math.max(x0, gutter);
      const room = x0 + w - left - 6;
      const label = [`step ${st.number[i]}`, String(st.number[i])].find((t) => ctx.measureText(t).width <= room);
      if (label) {
        ctx.fillStyle = '#202124';
        ctx.fillText(label, left + 3, y + band.h / 2);
      }
    }
  }
  ctx.restore();
}
