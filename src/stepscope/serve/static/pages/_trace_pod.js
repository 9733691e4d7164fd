// @ts-check
// Multi-host trace viewer (ALL_HOSTS): which tracks a window must hold (those in view, so a
// window stays within the pixel budget whatever the host count), the host picker, the clock
// alignment and expanding or collapsing hosts. See docs/tools/trace_viewer.md.
import { getJSON, h } from '../util.js';

/** @typedef {{lines: number[], counters: number[], key: string}} TrackNeed the tracks a window must hold */

const OPEN_ALL_MAX = 4; // more hosts than this open collapsed (their steps shown), the first one open

/** The query parameters every endpoint of a multi-host view takes (the page's options). */
export function podParams(ctx) {
  const o = ctx.options || {};
  return { hosts: o.hosts || '', align: o.align || 'clock' };
}

/** Host bands collapsed when the page opens. */
export function initialCollapsed(structure) {
  const hosts = structure.hosts || [];
  return new Set(hosts.length > OPEN_ALL_MAX ? hosts.slice(1).map((x) => `host:${x.name}`) : []);
}

/** 1,2,3,7 -> "1-3,7" */
export function ranges(sorted) {
  const parts = [];
  for (let i = 0; i < sorted.length; i += 1) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j += 1;
    parts.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j;
  }
  return parts.join(',');
}

/**
 * The tracks and counters within `margin` pixels of the visible part. The page checks its
 * windows against the visible tracks (margin 0) and fetches with a quarter screen more above
 * and below, so a short scroll needs no new window.
 * @returns {TrackNeed}
 */
export function tracksNear(layout, scrollY, height, margin = 0) {
  const lo = scrollY - margin;
  const hi = scrollY + height + margin;
  const lines = [];
  const counters = [];
  for (const b of layout.bands) {
    if (b.y + b.h < lo || b.y > hi) continue;
    if (b.kind === 'track') lines.push(b.line);
    else if (b.kind === 'counter') counters.push(b.counter);
  }
  lines.sort((a, b) => a - b);
  counters.sort((a, b) => a - b);
  return { lines, counters, key: `${ranges(lines)}|${ranges(counters)}` };
}

/**
 * Whether a window fetched for `had` also holds every track of `need`.
 * @param {{lineSet: Set<number>, counterSet: Set<number>} | undefined} had
 * @param {TrackNeed | null} need
 */
export function covers(had, need) {
  if (!had) return true; // one host: every window holds every track
  if (!need) return false;
  return need.lines.every((l) => had.lineSet.has(l)) && need.counters.every((c) => had.counterSet.has(c));
}

function hostPicker(ctx, structure) {
  const shown = new Set(structure.hosts.map((x) => x.name));
  const list = h('div', { class: 'tv-host-list' });
  const filter = h('input', { type: 'search', class: 'filter', placeholder: 'Filter hosts…', 'aria-label': 'Filter hosts' });
  const dialog = h('dialog', { class: 'tv-host-picker', 'aria-label': 'Choose hosts' },
    h('h2', {}, 'Hosts to show'), filter, list,
    h('p', {},
      h('button', { type: 'button', onclick: () => { for (const c of list.querySelectorAll('input')) c.checked = !c.parentElement?.hidden; } }, 'All'), ' ',
      h('button', { type: 'button', onclick: () => { for (const c of list.querySelectorAll('input')) c.checked = false; } }, 'None'), ' ',
      h('button', { type: 'button', dataset: { action: 'apply-hosts' }, onclick: () => {
        const boxes = [...list.querySelectorAll('input')];
        const picked = boxes.filter((c) => c.checked).map((c) => c.value);
        dialog.close();
        if (picked.length) ctx.setOption('hosts', picked.length === boxes.length ? '' : picked.join(','));
      } }, 'Show'), ' ',
      h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel')));
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    for (const row of /** @type {HTMLCollectionOf<HTMLElement>} */ (list.children)) {
      row.hidden = !(row.textContent ?? '').toLowerCase().includes(q);
    }
  });
  const open = async () => {
    const { hosts } = await getJSON(`api/runs/${encodeURIComponent(ctx.run)}/hosts`);
    list.replaceChildren(...hosts.filter((x) => x !== 'ALL_HOSTS').map((name) => h('label', {},
      h('input', { type: 'checkbox', value: name, checked: shown.has(name) }), ` ${name}`)));
    dialog.showModal();
  };
  return [dialog, h('button', { type: 'button', class: 'tv-btn', dataset: { action: 'choose-hosts' }, onclick: open }, 'Choose hosts…')];
}

/** The multi-host part of the toolbar: hosts shown, the picker, alignment, expand/collapse. */
export function podControls(view, structure, ctx) {
  const params = podParams(ctx);
  const toggleAll = (open) => {
    for (const x of structure.hosts) {
      if (open) view.collapsed.delete(`host:${x.name}`); else view.collapsed.add(`host:${x.name}`);
    }
    view.relayout();
  };
  return h('span', { class: 'tv-pod', dataset: { hosts: String(structure.hosts.length) } },
    h('strong', {}, `${structure.hosts.length} host${structure.hosts.length === 1 ? '' : 's'}`),
    params.hosts ? ' (chosen)' : ' (all)', ' ', ...hostPicker(ctx, structure), ' ',
    h('button', { type: 'button', class: 'tv-btn', onclick: () => toggleAll(true) }, 'Expand all'), ' ',
    h('button', { type: 'button', class: 'tv-btn', onclick: () => toggleAll(false) }, 'Collapse all'), ' ',
    h('label', { title: 'clock: every host on its own timestamps (wall clock); start: each host\'s first event at 0' }, 'Align ',
      h('select', { 'aria-label': 'Align hosts', dataset: { control: 'align' }, onchange: (e) => ctx.setOption('align', e.target.value) },
        h('option', { value: 'clock', selected: params.align === 'clock' }, 'wall clock'),
        h('option', { value: 'start', selected: params.align === 'start' }, 'profile starts'))));
}

/** Opens the host holding global `line` if it is collapsed (a search match, a flow's end). */
export function revealLine(view, line) {
  const hosts = view.structure.hosts;
  if (!hosts || view.layout.lineY[line] >= 0) return;
  const host = hosts.findLast((x) => x.line_base <= line);
  if (host) {
    const key = `host:${host.name}`;
    for (const k of [...view.collapsed]) if (k === key || k.startsWith(`${key}:`)) view.collapsed.delete(k);
    view.relayout();
  }
}
