// @ts-check
// The module TensorBoard loads into the "Stepscope" tab. It shows stepscope's own UI, served by
// the plugin under ./ui/, in a full-size iframe: the tab and `stepscope serve` are one UI.
// (index.html is named because TensorBoard's router drops a trailing slash.)
export async function render() {
  const frame = document.createElement('iframe');
  frame.src = new URL('ui/index.html', import.meta.url).href;
  frame.title = 'stepscope';
  Object.assign(frame.style, { border: '0', position: 'absolute', inset: '0', width: '100%', height: '100%' });
  document.body.style.margin = '0';
  document.body.append(frame);
}
