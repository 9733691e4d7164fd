// @ts-check
// Pieces several tool pages share: step-time categories and their colors, and text in which
// tool names become links.
import { getJSON, h, label } from '../util.js';

/**
 * A step-time category: its key, label and colour.
 * @typedef {{key: string, label: string, color: string}} Category
 */

/**
 * What the links need of a page's context: the run's tools, the page's tool, a tool's address.
 * @typedef {{name: string, title: string, description?: string, order: number}} ToolInfo
 * @typedef {{tools: ToolInfo[], tool: string, href: (tool: string) => string}} ToolLinksContext
 */

// Step-time categories (key, label, colour) in stacking order, bottom to top. Defined once, in
// Python (stepscope.stats.events), and served by the server: the page modules wait for them.
/** @type {Category[]} */
export const CATEGORIES = (await getJSON('api/categories')).categories;
const EXTRA_COLORS = ['#3949ab', '#7cb342', '#f9ab00', '#00897b', '#5f6368'];

/**
 * Categories for the keys present in `keys`, known ones first in stacking order.
 * @param {string[]} keys
 * @returns {Category[]}
 */
export function categoriesFor(keys) {
  const known = CATEGORIES.filter((c) => keys.includes(c.key));
  const extra = keys.filter((k) => !CATEGORIES.some((c) => c.key === k))
    .map((k, i) => ({ key: k, label: label(k), color: EXTRA_COLORS[i % EXTRA_COLORS.length] }));
  return [...known, ...extra];
}

/**
 * `text` with every mention of a listed tool (name or title) turned into a link to it.
 * @param {string | null | undefined} text
 * @param {ToolLinksContext} ctx
 * @returns {Array<string | null | undefined | HTMLAnchorElement>}
 */
export function linkTools(text, ctx) {
  /** @type {Array<[string, ToolInfo]>} */
  const names = ctx.tools.filter((t) => t.name !== ctx.tool)
    .flatMap((t) => /** @type {Array<[string, ToolInfo]>} */ ([[t.name, t], [t.title, t]]))
    .sort((a, b) => b[0].length - a[0].length);
  if (!names.length || !text) return [text];
  const escaped = names.map(([n]) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const parts = String(text).split(new RegExp(`(${escaped.join('|')})`, 'g'));
  return parts.map((part) => {
    const found = names.find(([n]) => n === part);
    // a tool named by its id in the text ("op_stats: ...") reads as its page's title
    return found ? h('a', { href: ctx.href(found[1].name), dataset: { tool: found[1].name } }, found[1].title) : part;
  });
}

// An advice line as the server writes it: a finding's "<title> (<severity>): <evidence> Fix:
// <change>", "HIGH: ...", or "<what>: ..." (overview_page.py, stats/advice.py). Ten lines of
// one paragraph at a laptop's width read as a wall: its lead goes in bold and its fix on a
// line of its own, the text itself unchanged (decision 552).
const ADVICE_LEAD = /^((?:[A-Z][^:.()]{0,60} \((?:high|medium|low)\))|HIGH|[A-Z][^:.()0-9]{0,40}):\s/;
const FIX = ' Fix: ';

/**
 * `text` as children: its lead in bold, its fix (after its last " Fix: ") in a span shown as
 * a line of its own, tool names linked; the children's text is `text`, character for character.
 * @param {string} text
 * @param {ToolLinksContext} ctx
 * @returns {Array<string | null | undefined | HTMLElement>}
 */
export function adviceParts(text, ctx) {
  const lead = ADVICE_LEAD.exec(text);
  const body = lead ? text.slice(lead[0].length) : text;
  const at = body.lastIndexOf(FIX);
  const said = at >= 0 ? body.slice(0, at + 1) : body; // with the space before "Fix:"
  return [
    lead ? h('strong', { class: 'advice-lead' }, `${lead[1]}:`) : null,
    lead ? lead[0].slice(lead[1].length + 1) : null, // the space after the lead's colon
    ...linkTools(said, ctx),
    at >= 0 ? h('span', { class: 'advice-fix' }, h('strong', {}, 'Fix:'), ' ', ...linkTools(body.slice(at + FIX.length), ctx)) : null,
  ];
}

/**
 * Links to the other tools that can explain a bottleneck, most relevant first.
 * @param {ToolLinksContext} ctx
 * @param {string[]} [preferred]
 */
export function toolLinks(ctx, preferred = []) {
  const others = ctx.tools.filter((t) => t.name !== ctx.tool);
  others.sort((a, b) => {
    const ia = preferred.indexOf(a.name);
    const ib = preferred.indexOf(b.name);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.order - b.order;
  });
  return h('ul', { class: 'links' }, others.map((t) => h('li', {},
    h('a', { href: ctx.href(t.name) }, t.title), t.description ? ` — ${t.description}` : '')));
}
