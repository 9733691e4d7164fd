// @ts-check
// The page shell: run and host selectors, the tool list (from /api/tools, i.e. the registry),
// routing (#/<tool>?run=&host=&<options>) and loading each tool's page module.
// Every URL is relative, so the same files work at / and inside TensorBoard's plugin path.
import { clear, getJSON, h, note, partialBanner, query } from './util.js';

const ALL_HOSTS = 'ALL_HOSTS';
const RESERVED = new Set(['run', 'host']);
// Address parameters a page reads itself (the trace viewer's `step`), never sent as options.
const PAGE_ONLY = new Set(['step']);
/** @type {(id: string) => any} the shell's elements (selects, dialogs, lists) by id */
const $ = (id) => document.getElementById(id);
/**
 * The shell's state. runs and tools are /api/runs and /api/tools entries as the server sends them.
 * @type {{runs: any[], tools: any[], toolsFor: Map<string, Promise<any>>, renderToken: number, prefetched?: any}}
 */
const state = { runs: [], tools: [], toolsFor: new Map(), renderToken: 0 };

function parseHash() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, search] = hash.split('?');
  const params = new URLSearchParams(search || '');
  const options = {};
  for (const [k, v] of params) if (!RESERVED.has(k)) options[k] = v;
  return { tool: decodeURIComponent(path || ''), run: params.get('run') || '', host: params.get('host') || '', options };
}

export function hrefFor(tool, run, host, options = {}) {
  return `#/${encodeURIComponent(tool)}?${query({ run, host, ...options })}`;
}

function go(tool, run, host, options = {}, replace = false) {
  const href = hrefFor(tool, run, host, options);
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  route();
}

async function loadRuns() {
  const data = await getJSON('api/runs');
  state.runs = data.runs;
  $('logdir').textContent = data.logdir;
  $('logdir').title = data.logdir;
  return data.runs;
}

function hostsOf(run) {
  return run.hosts.length > 1 ? [...run.hosts, ALL_HOSTS] : run.hosts;
}

function fillSelect(select, values, current, labelOf = (v) => v) {
  const same = select.options.length === values.length && values.every((v, i) => select.options[i].value === v);
  if (!same) select.replaceChildren(...values.map((v) => h('option', { value: v }, labelOf(v))));
  select.value = current;
}

// A run the flight recorder saved is listed with its trigger and reason (docs/flight_recorder.md).
function runLabel(name) {
  const run = state.runs.find((r) => r.run === name);
  const mark = run && run.saved_by;
  if (!mark) return name;
  const reason = mark.reason.length > 80 ? `${mark.reason.slice(0, 79)}…` : mark.reason;
  return `${name} — ${mark.trigger.replace('_', ' ')}: ${reason}`;
}

function listTools(run, host) {
  // Without a host the server answers for the run's default host (ALL_HOSTS if several).
  // Every tool with a page, each marked available or not for this run and host.
  return getJSON(`api/tools?${query({ run, host })}`).then((tools) => tools
    .filter((t) => t.page)
    .sort((a, b) => a.order - b.order || a.name.localeCompare(b.name)));
}

const shown = (tools) => tools.filter((t) => t.available !== false);

/** @param {Promise<any> | null} early the tool list already asked for, if any */
async function toolsFor(run, host, early = null) {
  const key = `${run}\u0000${host}`;
  if (!state.toolsFor.has(key)) {
    const promise = early || listTools(run, host);
    promise.catch(() => state.toolsFor.delete(key));
    state.toolsFor.set(key, promise);
  }
  return state.toolsFor.get(key);
}

const defaultHost = (run) => (run.hosts.length > 1 ? ALL_HOSTS : run.hosts[0]);

function drawToolList(tools, current, run, host) {
  const items = tools.map((tool, i) => h('li', {},
    h('a', { href: hrefFor(tool.name, run, host), class: tool.name === current ? 'active' : null,
      'aria-current': tool.name === current ? 'page' : null, title: tool.description,
      dataset: { tool: tool.name } },
    h('span', { class: 'key' }, i < 9 ? String(i + 1) : ''), tool.title)));
  $('tool-list').replaceChildren(...items);
}

function showMessage(text, kind = 'info') {
  clear($('page')).append(note(text, kind));
}

/** An address that names something this log directory lacks: say what, and list the choices. */
function showChoices(text, title, choices) {
  clear($('page')).append(h('div', { class: 'tool-page', dataset: { error: 'not-found' } },
    note(text, 'error'),
    choices.length ? h('section', { class: 'card' }, h('h2', {}, title),
      h('ul', { class: 'links', dataset: { choices: title } }, choices.map(([label, href]) => h('li', {}, h('a', { href }, label)))))
      : null));
}

async function route() {
  const token = ++state.renderToken;
  const want = parseHash();
  /** @type {{run: string, host: string, tools: Promise<any>} | null} */
  let early = null;
  if (!state.runs.length) {
    // First load of an address naming a tool and a run: ask for the run list, the tool list,
    // the page's code and its data at once instead of one after the other.
    if (want.tool && want.run) {
      early = { run: want.run, host: want.host, tools: listTools(want.run, want.host) };
      early.tools.catch(() => {});
      prefetch(want.tool, want.run, want.host, want.options);
    }
    await loadRuns();
  }
  if (!state.runs.length) {
    showMessage('No profiles found in this log directory yet. New runs appear here as they are written.');
    markRendered('', true);
    return;
  }
  if (want.tool === 'compare') {
    await renderCompare(token, { ...want.options, run: want.run });
    return;
  }
  if (want.run && !state.runs.some((r) => r.run === want.run)) {
    fillSelect($('run-select'), ['', ...state.runs.map((r) => r.run)], '', (v) => (v ? runLabel(v) : '(choose a run)'));
    showChoices(`No run “${want.run}” in this log directory.`, 'Runs',
      state.runs.map((r) => [r.run, hrefFor(want.tool, r.run, '', want.options)]));
    markRendered('', true);
    return;
  }
  const run = state.runs.find((r) => r.run === want.run) || state.runs[0];
  const hosts = hostsOf(run);
  const hostLabel = (v) => (v === ALL_HOSTS ? 'All hosts' : v);
  fillSelect($('run-select'), state.runs.map((r) => r.run), run.run, runLabel);
  if (want.host && !hosts.includes(want.host)) {
    fillSelect($('host-select'), ['', ...hosts], '', (v) => (v ? hostLabel(v) : '(choose a host)'));
    showChoices(`Run “${run.run}” has no host “${want.host}”.`, 'Hosts',
      hosts.map((v) => [hostLabel(v), hrefFor(want.tool, run.run, v, want.options)]));
    markRendered('', true);
    return;
  }
  const host = want.host || hosts[hosts.length - 1]; // ALL_HOSTS if several
  // When the address names a tool, fetch its page code and data while the tool list loads.
  const oneHostTool = host === ALL_HOSTS && state.tools.some((t) => t.name === want.tool && !t.multi_host);
  if (want.tool && !early && !oneHostTool) prefetch(want.tool, run.run, host, want.options);
  const sameHost = early && early.run === run.run && (early.host === host || (!early.host && host === defaultHost(run)));
  fillSelect($('host-select'), hosts, host, hostLabel);
  $('host-select').disabled = hosts.length < 2;
  let all;
  try {
    all = await toolsFor(run.run, host, sameHost && early ? early.tools : null);
  } catch (err) {
    showMessage(err.message, 'error');
    markRendered(want.tool, true);
    return;
  }
  if (token !== state.renderToken) return;
  const tools = shown(all);
  state.tools = tools;
  const named = want.tool ? all.find((t) => t.name === want.tool) : null;
  if (want.tool && (!named || named.available === false)) {
    state.prefetched = null;
    drawToolList(tools, '', run.run, host);
    if (!named) {
      showChoices(`No tool “${want.tool}”.`, 'Tools', tools.map((t) => [t.title, hrefFor(t.name, run.run, host)]));
    } else if (host === ALL_HOSTS && !named.multi_host) {
      showChoices(`${named.title} shows one host at a time: there is no combined view of all hosts for it. Choose a host.`,
        'Hosts', run.hosts.map((v) => [v, hrefFor(named.name, run.run, v, want.options)]));
    } else {
      showChoices(`${named.title} has nothing to show for ${run.run} (${hostLabel(host)}).`, 'Tools',
        tools.map((t) => [t.title, hrefFor(t.name, run.run, host)]));
    }
    markRendered(want.tool, true);
    return;
  }
  const tool = named || tools[0];
  if (!tool) {
    drawToolList([], '', run.run, host);
    showMessage('No tool has anything to show for this run and host.');
    markRendered('', true);
    return;
  }
  if (tool.name !== want.tool || run.run !== want.run || host !== want.host) {
    history.replaceState(null, '', hrefFor(tool.name, run.run, host, want.options));
  }
  $('compare-link').classList.remove('active');
  $('compare-link').removeAttribute('aria-current');
  drawToolList(tools, tool.name, run.run, host);
  document.title = `${tool.title} · ${run.run} · stepscope`;
  await renderTool(token, tool, run, host, want.options);
}

function toolUrl(tool, run, host, options) {
  return `api/tool/${encodeURIComponent(tool)}?${query({ run, host, ...options })}`;
}

function prefetch(tool, run, host, given) {
  const options = Object.fromEntries(Object.entries(given).filter(([k]) => !PAGE_ONLY.has(k)));
  const data = getJSON(toolUrl(tool, run, host, options));
  const module = import(`./pages/${encodeURIComponent(tool)}.js`);
  data.catch(() => {}); // a wrong guess is dropped; renderTool reports the errors it sees
  module.catch(() => {});
  state.prefetched = { tool, run, host, options: JSON.stringify(options), data, module };
}

/** The prefetched page and data if they are what renderTool is about to ask for. */
function takePrefetched(tool, run, host, asked) {
  const p = state.prefetched;
  state.prefetched = null;
  if (!p || p.tool !== tool.name || p.run !== run.run || p.options !== JSON.stringify(asked)) return null;
  // Asked without a host, the server used the run's default host, as the shell does.
  const hostOk = p.host === host || (!p.host && host === defaultHost(run) && (tool.multi_host || run.hosts.length === 1));
  return hostOk ? p : null;
}

async function renderTool(token, tool, run, host, given) {
  const options = {};
  const asked = {}; // the options the address gives (the server fills in the defaults)
  for (const o of tool.options) {
    options[o.name] = given[o.name] ?? o.default;
    if (given[o.name] !== undefined) asked[o.name] = given[o.name];
  }
  const page = $('page');
  const slow = setTimeout(() => {
    if (token === state.renderToken) showMessage(`Analyzing ${run.run} (${host})…`);
  }, 150);
  const apiUrl = toolUrl(tool.name, run.run, host, asked);
  const early = takePrefetched(tool, run, host, asked);
  try {
    const [module, data] = await Promise.all([
      early ? early.module : import(`./pages/${tool.name}.js`),
      early ? early.data : getJSON(apiUrl),
    ]);
    if (token !== state.renderToken) return;
    const root = h('div', { class: 'tool-page', dataset: { tool: tool.name } },
      h('h1', {}, tool.title, h('span', { class: 'subtitle' }, ` ${run.run} · ${host === ALL_HOSTS ? 'all hosts' : host}`)),
      optionControls(tool, options, (name, value) => go(tool.name, run.run, host, { ...options, [name]: value })));
    // ALL_HOSTS: hosts whose file could not be analyzed are left out and listed here.
    for (const e of data.host_errors || []) root.append(note(`Host ${e.host} left out: ${e.error}`, 'error'));
    // A truncated file, repaired JSON, dropped events: the page says it covers part of the run.
    const partial = partialBanner(data.partial_reads, host === ALL_HOSTS);
    if (partial) root.append(partial);
    // A run the flight recorder saved says why on every page (recorder.js).
    if (run.saved_by) {
      const { recorderBanner } = await import('./recorder.js');
      const at = (name, extra = {}) => hrefFor(name, run.run, name === 'trace_viewer' && host === ALL_HOSTS ? run.saved_by.host : host, extra);
      root.append(recorderBanner(run.saved_by, at, tool.name));
    }
    const ctx = {
      run: run.run, host, tool: tool.name, options, tools: state.tools,
      href: (name, extra = {}) => hrefFor(name, run.run, host, extra),
      hasTool: (name) => state.tools.some((t) => t.name === name),
      setOption: (name, value) => go(tool.name, run.run, host, { ...options, [name]: value }),
      csvUrl: () => `${apiUrl}&format=csv`,
      params: { ...given }, // every option of the address, declared or not (e.g. a table filter)
      savedBy: run.saved_by || null, // the flight recorder's trigger, for a run it saved
    };
    await module.render(root, data, ctx);
    if (token !== state.renderToken) return;
    clearTimeout(slow);
    clear(page).append(root);
    markRendered(tool.name);
  } catch (err) {
    clearTimeout(slow);
    if (token !== state.renderToken) return;
    showMessage(`${tool.title}: ${err.message}`, 'error');
    markRendered(tool.name, true);
  }
}

// The Compare page (pages/compare.js) compares two runs, so it is not one of the registry's
// tools: #/compare?base=&base_host=&cand=&cand_host=.
async function renderCompare(token, params) {
  document.title = 'Compare · stepscope';
  for (const a of $('tool-list').querySelectorAll('a.active')) {
    a.classList.remove('active');
    a.removeAttribute('aria-current');
  }
  $('compare-link').classList.add('active');
  $('compare-link').setAttribute('aria-current', 'page');
  const slow = setTimeout(() => {
    if (token === state.renderToken) showMessage('Comparing runs…');
  }, 150);
  try {
    const module = await import('./pages/compare.js');
    const root = h('div', { class: 'tool-page', dataset: { tool: 'compare' } });
    const go = (p) => { history.pushState(null, '', `#/compare?${query(p)}`); route(); };
    // the top bar and the tool list show the baseline, so its tools are one click away
    const showSides = ({ base, base_host: host }) => {
      const run = state.runs.find((r) => r.run === base);
      fillSelect($('run-select'), state.runs.map((r) => r.run), base, runLabel);
      fillSelect($('host-select'), hostsOf(run), host, (v) => (v === ALL_HOSTS ? 'All hosts' : v));
      $('host-select').disabled = hostsOf(run).length < 2;
      toolsFor(base, host).then((tools) => {
        if (token === state.renderToken) drawToolList(shown(tools), '', base, host); // only those with data
      }).catch(() => {});
    };
    await module.render(root, { runs: state.runs, params, go, hrefFor, showSides });
    if (token !== state.renderToken) return;
    clearTimeout(slow);
    clear($('page')).append(root);
    markRendered('compare');
  } catch (err) {
    clearTimeout(slow);
    if (token !== state.renderToken) return;
    showMessage(`Compare: ${err.message}`, 'error');
    markRendered('compare', true);
  }
}

// Controls for the tool's declared options (from the registry): a checkbox for true/false
// choices, a select for other choices.
function optionControls(tool, options, set) {
  const controls = tool.options.filter((o) => o.choices.length).map((o) => {
    const id = `option-${o.name}`;
    const boolean = o.choices.length === 2 && o.choices.includes('true') && o.choices.includes('false');
    if (boolean) {
      return h('label', { class: 'option', title: o.description },
        h('input', { type: 'checkbox', id, checked: options[o.name] === 'true',
          onchange: (e) => set(o.name, e.target.checked ? 'true' : 'false') }), ` ${o.description}`);
    }
    return h('label', { class: 'option', title: o.description }, `${o.name.replace(/_/g, ' ')} `,
      h('select', { id, onchange: (e) => set(o.name, e.target.value) },
        o.choices.map((c) => h('option', { value: c, selected: c === options[o.name] }, c))));
  });
  return controls.length ? h('div', { class: 'options toolbar' }, controls) : null;
}

function markRendered(tool, failed = false) {
  // Read by the browser tests (time to first render) and handy when debugging.
  performance.mark('stepscope:rendered', { detail: { tool, failed } });
  // Inside TensorBoard's tab: its address keeps this page's, for links (tensorboard.js).
  if (window.parent !== window) window.parent.postMessage({ type: 'stepscope:page', hash: location.hash }, location.origin);
  document.body.dataset.rendered = tool;
  document.body.dataset.renderCount = String(Number(document.body.dataset.renderCount || 0) + 1);
}

async function refreshRuns() {
  if (document.hidden) return;
  const before = state.runs.map((r) => r.run + r.hosts.join()).join('|');
  try {
    await loadRuns();
  } catch {
    return; // server gone for a moment; try again next time
  }
  const after = state.runs.map((r) => r.run + r.hosts.join()).join('|');
  if (before !== after) {
    const want = parseHash();
    const run = state.runs.find((r) => r.run === want.run) || state.runs[0];
    if (run) fillSelect($('run-select'), state.runs.map((r) => r.run), run.run, runLabel);
    if (!before) route();
  }
}

function bindKeys() {
  $('run-select').addEventListener('change', (e) => {
    const { tool } = parseHash();
    go(tool, /** @type {HTMLSelectElement} */ (e.target).value, '');
  });
  $('host-select').addEventListener('change', (e) => {
    const { tool, run, options } = parseHash();
    go(tool, run, /** @type {HTMLSelectElement} */ (e.target).value, options);
  });
  $('help-button').addEventListener('click', () => $('help').showModal());
  $('tool-list').addEventListener('keydown', (e) => {
    const links = [...$('tool-list').querySelectorAll('a')];
    const i = links.indexOf(document.activeElement);
    const next = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: links.length - 1 }[e.key];
    if (next === undefined || !links.length) return;
    e.preventDefault();
    links[(next + links.length) % links.length].focus();
  });
  document.addEventListener('keydown', (e) => {
    const tag = (/** @type {HTMLElement} */ (e.target).tagName || '').toLowerCase();
    if (e.ctrlKey || e.metaKey || e.altKey || ['input', 'select', 'textarea'].includes(tag)) return;
    if (/^[1-9]$/.test(e.key)) {
      const link = $('tool-list').querySelectorAll('a')[Number(e.key) - 1];
      if (link) { e.preventDefault(); link.click(); link.focus(); }
    } else if (e.key === 'r') { e.preventDefault(); $('run-select').focus(); }
    else if (e.key === 'h') { e.preventDefault(); $('host-select').focus(); }
    else if (e.key === '/') {
      const filter = $('page').querySelector('input.filter');
      if (filter) { e.preventDefault(); filter.focus(); }
    } else if (e.key === '?') { e.preventDefault(); $('help').showModal(); }
  });
}

bindKeys();
window.addEventListener('hashchange', route);
setInterval(refreshRuns, 10000);
window.addEventListener('stepscope:runs-changed', refreshRuns); // sent by capture.js
route().catch((err) => showMessage(err.message, 'error'));
