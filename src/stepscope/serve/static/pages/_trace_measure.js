// @ts-check
// Frame-time probes of the trace viewer, for the browser tests and
// benchmarks/bench_trace_frames.py: they move the view once per animation frame and draw it as
// a wheel or key input would, window fetches included.

/**
 * The part of the trace view the probes drive.
 * @typedef {{view: {t0: number, t1: number}, root: HTMLElement, frameScheduled: boolean,
 *   requestData(): void, frame(): void}} Drivable
 */

/**
 * Moves the view for `frames` frames (`move(k)` changes `target.view`); resolves with the frame
 * intervals and draw times in ms.
 * @param {Drivable} target
 * @param {number} frames
 * @param {(k: number) => void} move
 */
function measure(target, frames, move) {
  return new Promise((resolve) => {
    /** @type {number[]} */
    const intervals = [];
    /** @type {number[]} */
    const draws = [];
    let last = performance.now();
    let k = 0;
    const step = () => {
      const now = performance.now();
      if (k > 0) intervals.push(now - last);
      last = now;
      if (k >= frames) { resolve({ intervals, draws, drawn: target.root.dataset.drawn }); return; }
      k += 1;
      move(k);
      target.requestData();
      const t = performance.now();
      target.frameScheduled = false;
      target.frame();
      draws.push(performance.now() - t);
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
}

/**
 * Pan by `fraction` of the view per frame, changing direction every 40 frames.
 * @param {Drivable} target
 */
export function measurePan(target, frames = 120, fraction = 0.01) {
  return measure(target, frames, (k) => {
    const span = target.view.t1 - target.view.t0;
    const dt = span * fraction * (Math.floor(k / 40) % 2 ? -1 : 1);
    target.view = { t0: target.view.t0 + dt, t1: target.view.t1 + dt };
  });
}

/**
 * Zoom in by `factor` per frame around the middle for `frames / 2` frames, then back out.
 * @param {Drivable} target
 */
export function measureZoom(target, frames = 120, factor = 1.04) {
  return measure(target, frames, (k) => {
    const f = k <= frames / 2 ? factor : 1 / factor;
    const mid = (target.view.t0 + target.view.t1) / 2;
    const half = (target.view.t1 - target.view.t0) / 2 / f;
    target.view = { t0: mid - half, t1: mid + half };
  });
}
