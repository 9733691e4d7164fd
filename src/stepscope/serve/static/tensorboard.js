// @ts-check
// The module TensorBoard loads into the "Stepscope" tab. It shows stepscope's own UI, served by
// the plugin under ./ui/, in a full-size iframe: the tab and `stepscope serve` are one UI.
// (index.html is named because TensorBoard's router drops a trailing slash.)
//
// Deep links: the page shown is kept in TensorBoard's own address, as a parameter of its hash
// (`#stepscope&stepscope_page=<the UI's address>`, the form TensorBoard gives its plugins'
// settings), so a copied TensorBoard link opens the same tool, run and host. The UI tells this
// module its address after each page (app.js, a message to its parent).
const PARAM = 'stepscope_page';

/** The TensorBoard page (same origin: the plugin's frames are served by TensorBoard). */
function tensorboardWindow() {
  try {
    return window.top && window.top.location.href ? window.top : null;
  } catch {
    return null; // another origin (a proxy): no deep links
  }
}

/** @param {string} hash */
function pageIn(hash) {
  const found = hash.match(new RegExp(`[#&]${PARAM}=([^&]*)`));
  return found ? decodeURIComponent(found[1]) : '';
}

/** @param {string} hash @param {string} page */
function withPage(hash, page) {
  const base = hash.replace(new RegExp(`&${PARAM}=[^&]*`), '') || '#stepscope';
  return page ? `${base}&${PARAM}=${encodeURIComponent(page)}` : base;
}

export async function render() {
  const top = tensorboardWindow();
  const page = top ? pageIn(top.location.hash) : '';
  const frame = document.createElement('iframe');
  // only an address of the UI's own form (#/tool?query) is taken from the link
  const wanted = /^\/[\w]*(\?[^#]*)?$/.test(page) ? `#${page}` : '';
  frame.src = new URL('ui/index.html', import.meta.url).href + wanted;
  frame.title = 'stepscope';
  Object.assign(frame.style, { border: '0', position: 'absolute', inset: '0', width: '100%', height: '100%' });
  document.body.style.margin = '0';
  document.body.append(frame);
  window.addEventListener('message', (event) => {
    const data = event.data;
    if (event.source !== frame.contentWindow || event.origin !== location.origin || !top) return;
    if (!data || data.type !== 'stepscope:page' || typeof data.hash !== 'string') return;
    const url = new URL(top.location.href);
    url.hash = withPage(url.hash, data.hash.replace(/^#/, ''));
    if (url.href !== top.location.href) top.history.replaceState(top.history.state, '', url.href);
  });
}
