// @ts-check
// The Capture Profile dialog: asks the server (POST api/capture) to capture from running
// profiler servers into the served log directory, shows each worker's progress and result,
// then tells the shell to list the new run. Offered only where api/capture says it is enabled
// (the standalone server with a local, writable log directory).
import { HttpError, getJSON, h } from './util.js';

/** @type {(id: string) => any} the dialog's elements are inputs and buttons, looked up by id */
const $ = (id) => document.getElementById(id);
const POLL_MS = 250;
const LEVELS = {
  host_tracer_level: [['0', '0 · off'], ['1', '1 · user annotations'], ['2', '2 · + expensive ops'], ['3', '3 · verbose']],
  device_tracer_level: [['0', '0 · off'], ['1', '1 · on']],
  python_tracer_level: [['0', '0 · off'], ['1', '1 · every Python call']],
};
let config = null;
let dialog = null;
let polling = 0;

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new HttpError(response.status, (data && data.error) || response.statusText);
  return data;
}

function field(label, input, hint) {
  return h('label', { class: 'capture-field' }, h('span', {}, label), input,
    hint ? h('small', { class: 'muted' }, hint) : null);
}

function number(name, value, min, max) {
  return h('input', { type: 'number', name, id: `capture-${name}`, value, min, max, step: 1, required: true });
}

function levelSelect(name, value) {
  return h('select', { name, id: `capture-${name}` },
    LEVELS[name].map(([v, text]) => h('option', { value: v, selected: String(value) === v }, text)));
}

function buildDialog() {
  const d = config.defaults;
  const lim = config.limits;
  const form = h('form', { id: 'capture-form', method: 'dialog', class: 'capture-form' },
    field('Profile service URL(s)', h('input', {
      type: 'text', name: 'service_addr', id: 'capture-service_addr', required: true,
      placeholder: 'grpc://localhost:6009, grpc://worker1:6009', autocomplete: 'off', spellcheck: 'false',
    }), 'comma-separated; workers run stepscope.server.start(port) or tf.profiler.experimental.server.start(port)'),
    h('div', { class: 'capture-row' },
      field('Duration (ms)', number('duration_ms', d.duration_ms, ...lim.duration_ms)),
      field('Number of tries', number('num_tracing_attempts', d.num_tracing_attempts, ...lim.num_tracing_attempts)),
      field('Delay (ms)', number('delay_ms', d.delay_ms, ...lim.delay_ms))),
    h('div', { class: 'capture-row' },
      field('Host trace level', levelSelect('host_tracer_level', d.host_tracer_level)),
      field('Device trace level', levelSelect('device_tracer_level', d.device_tracer_level)),
      field('Python trace level', levelSelect('python_tracer_level', d.python_tracer_level))),
    h('div', { id: 'capture-status', class: 'capture-status', 'aria-live': 'polite' }),
    h('div', { class: 'capture-buttons' },
      h('button', { type: 'submit', id: 'capture-start', class: 'primary', value: 'capture' }, 'Capture'),
      h('button', { type: 'button', id: 'capture-close', onclick: () => dialog.close() }, 'Close')));
  form.addEventListener('submit', (e) => { e.preventDefault(); start(form); });
  return h('dialog', { id: 'capture-dialog', class: 'capture-dialog', 'aria-label': 'Capture profile' },
    h('h2', {}, 'Capture profile'), form);
}

function values(form) {
  /** @type {Record<string, FormDataEntryValue | number>} */
  const data = Object.fromEntries(new FormData(form));
  for (const key of Object.keys(data)) if (key !== 'service_addr') data[key] = Number(data[key]);
  return data;
}

function workerRow(w) {
  const pct = w.expected_s > 0 ? Math.min(100, (100 * w.elapsed_s) / w.expected_s) : 0;
  const running = w.state === 'capturing' || w.state === 'retrying' || w.state === 'waiting';
  const detail = running
    ? (w.state === 'retrying' ? `retrying (${w.attempt + 1}/${w.attempts_max}): ${w.reason}`
      : w.elapsed_s > w.expected_s ? `receiving the profile… (${w.elapsed_s.toFixed(1)} s)`
        : `${w.elapsed_s.toFixed(1)} / ${w.expected_s.toFixed(1)} s` + (w.attempt > 1 ? ` · attempt ${w.attempt}/${w.attempts_max}` : ''))
    : w.line.replace(`${w.address}: `, '');
  return h('li', { class: `capture-worker state-${w.state}`, dataset: { address: w.address, state: w.state } },
    h('span', { class: 'mono' }, w.address), ' ',
    h('span', { class: `badge ${w.state === 'ok' ? 'badge-good' : w.state === 'failed' ? 'badge-bad' : ''}` }, w.state),
    running ? h('progress', { max: 100, value: pct.toFixed(0) }) : null,
    h('div', { class: 'capture-detail' }, detail));
}

function showStatus(job, error) {
  const box = $('capture-status');
  if (error) {
    box.replaceChildren(h('p', { class: 'note note-error', role: 'alert' }, error));
    return;
  }
  const kind = job.state === 'failed' ? 'error' : job.state === 'done' ? 'good' : 'info';
  /** @type {HTMLElement[]} */
  const children = [h('p', { class: `note note-${kind}`, id: 'capture-message', dataset: { state: job.state } }, job.message)];
  if (job.run) {
    children.push(h('p', {}, h('a', { href: `#/?run=${encodeURIComponent(job.run)}`, id: 'capture-open-run',
      onclick: () => dialog.close() }, `Open run ${job.run}`)));
  }
  children.push(h('ul', { class: 'capture-workers' }, job.workers.map(workerRow)));
  box.replaceChildren(...children);
}

async function poll(id, token) {
  while (token === polling) {
    let job;
    try {
      job = await getJSON(`api/capture/${encodeURIComponent(id)}`);
    } catch (err) {
      showStatus(null, err.message);
      break;
    }
    if (token !== polling) return;
    showStatus(job);
    if (job.state !== 'running') {
      if (job.run) window.dispatchEvent(new Event('stepscope:runs-changed'));
      break;
    }
    await new Promise((resolve) => { setTimeout(resolve, POLL_MS); });
  }
  if (token === polling) $('capture-start').disabled = false;
}

async function start(form) {
  const button = $('capture-start');
  button.disabled = true;
  const token = ++polling;
  try {
    const job = await postJSON('api/capture', values(form));
    showStatus(job);
    await poll(job.id, token);
  } catch (err) {
    showStatus(null, err.message);
    button.disabled = false;
  }
}

async function open() {
  if (!dialog) {
    dialog = buildDialog();
    document.body.append(dialog);
  }
  dialog.showModal();
  $('capture-service_addr').focus();
}

async function init() {
  const button = $('capture-button');
  if (!button) return;
  try {
    config = await getJSON('api/capture');
  } catch {
    return; // an older server: no capture here
  }
  if (config.offered === false) return; // inside TensorBoard (WSGI): no button at all
  button.hidden = false;
  if (!config.enabled) {
    button.disabled = true;
    button.title = `Capture is not available: ${config.reason}`;
    return;
  }
  button.addEventListener('click', open);
}

init();
