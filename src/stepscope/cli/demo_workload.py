"""The `stepscope demo` workload: a NumPy MLP fed by a deliberately slow Python pipeline.

Needs no ML framework. What it shows:
- two producer threads (``demo-producer-0/1``) build batches: a record source with a
  simulated storage latency per record (it sleeps, releasing the GIL, as real I/O does), a
  pure-Python ``Decode`` stage (`stepscope.data.stage`) and ``Batch``, all instrumented, so
  their lines carry ``Iterator::Batch`` > ``Iterator::Batch::Source`` /
  ``Iterator::Batch::Decode`` events;
- the training thread (``MainThread``) marks each step with `stepscope.step`, takes the next
  batch from the shared queue through ``Iterator::Prefetch`` (the time it waits is the
  step's input time), then runs ``forward`` / ``backward`` / ``update`` spans.
The producers are slower than training, so the profile is input-bound: what the overview and
input-pipeline tools should say.
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path

import numpy as np

import stepscope
from stepscope.capture import data
from stepscope.capture.options import ProfilerOptions
from stepscope.records import record

FEATURES, HIDDEN, CLASSES = 128, 256, 10


@record
class DemoConfig:
    steps: int = 12
    batch_size: int = 32
    producers: int = 2
    read_latency_ms: float = 1.0  # per record: what makes the input slow
    decode_work: int = 1  # pure-Python passes per feature (more also starves training of the GIL)
    python_tracer: bool = False

    @classmethod
    def fast(cls) -> DemoConfig:
        """A few milliseconds per step: for tests and a quick look."""
        return cls(steps=6, batch_size=8, producers=2, read_latency_ms=0.5)


@record(frozen=False)
class DemoResult:
    run_dir: Path
    losses: list[float] = field(default_factory=list)


class MLP:
    """Two dense layers, ReLU, softmax cross-entropy, plain SGD."""

    def __init__(self, seed: int = 0, lr: float = 0.05) -> None:
        rng = np.random.default_rng(seed)
        self.w1 = rng.normal(0, 1 / math.sqrt(FEATURES), (FEATURES, HIDDEN))
        self.b1 = np.zeros(HIDDEN)
        self.w2 = rng.normal(0, 1 / math.sqrt(HIDDEN), (HIDDEN, CLASSES))
        self.b2 = np.zeros(CLASSES)
        self.lr = lr

    def train_step(self, x: np.ndarray, y: np.ndarray) -> float:
        with stepscope.trace("forward", batch=len(x)):
            hidden = np.maximum(x @ self.w1 + self.b1, 0.0)
            logits = hidden @ self.w2 + self.b2
            logits -= logits.max(axis=1, keepdims=True)
            probs = np.exp(logits)
            probs /= probs.sum(axis=1, keepdims=True)
            loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-12).mean())
        with stepscope.trace("backward"):
            grad_logits = probs
            grad_logits[np.arange(len(y)), y] -= 1.0
            grad_logits /= len(y)
            grad_w2 = hidden.T @ grad_logits
            grad_hidden = (grad_logits @ self.w2.T) * (hidden > 0)
            grad_w1 = x.T @ grad_hidden
        with stepscope.trace("update"):
            self.w2 -= self.lr * grad_w2
            self.b2 -= self.lr * grad_logits.sum(axis=0)
            self.w1 -= self.lr * grad_w1
            self.b1 -= self.lr * grad_hidden.sum(axis=0)
        return loss


def _records(seed: int, latency_s: float) -> Iterator[Record]:
    """Raw records: bytes-like integer lists and a label (endless), each after a "read"."""
    rng = random.Random(seed)
    while True:
        time.sleep(latency_s)
        label = rng.randrange(CLASSES)
        yield [rng.randrange(256) for _ in range(FEATURES)], label


Record = tuple[list[int], int]
Sample = tuple[list[float], int]


def _make_decode(work: int) -> Callable[[Record], Sample]:
    @data.stage("Decode")
    def decode(record: Record) -> Sample:
        raw, label = record
        out = []
        for value in raw:  # deliberately slow: pure Python per feature
            acc = float(value)
            for _ in range(work):
                acc = (acc * 1.0001 + 0.5) % 256.0
            out.append(acc / 255.0 - 0.5 + 0.1 * label / CLASSES)
        return out, label

    return decode


def _batches(seed: int, config: DemoConfig) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    decode = _make_decode(config.decode_work)
    source = iter(data.instrument(_records(seed, config.read_latency_ms / 1e3), name="Source"))
    while True:
        samples = [decode(next(source)) for _ in range(config.batch_size)]
        x = np.array([s[0] for s in samples])
        y = np.array([s[1] for s in samples])
        yield x, y


def _produce(q: queue.Queue[object], stop: threading.Event, seed: int, config: DemoConfig) -> None:
    batches = iter(data.instrument(_batches(seed, config), name="Batch"))
    while not stop.is_set():
        item = next(batches)
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                break
            except queue.Full:
                continue


def _consume(q: queue.Queue[object]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    while True:
        yield q.get()  # type: ignore[misc]


def run_demo(logdir: str | Path, config: DemoConfig | None = None) -> DemoResult:
    """Profile a few training steps of the demo model; returns the run directory."""
    config = config or DemoConfig()
    options = ProfilerOptions(python_tracer_level=1 if config.python_tracer else 0)
    model = MLP()
    q: queue.Queue[object] = queue.Queue(maxsize=2)
    stop = threading.Event()
    losses: list[float] = []
    producers = [
        threading.Thread(
            target=_produce, args=(q, stop, seed, config), name=f"demo-producer-{seed}", daemon=True
        )
        for seed in range(config.producers)
    ]
    stepscope.start(logdir, options)
    try:
        for thread in producers:
            thread.start()
        batches = iter(data.instrument(_consume(q), name="Prefetch"))
        for step_num in range(config.steps):
            with stepscope.step(step_num):
                x, y = next(batches)
                losses.append(model.train_step(x, y))
    finally:
        stop.set()
        run_dir = stepscope.stop()
    for thread in producers:
        if thread.is_alive():
            thread.join(timeout=5)
    assert run_dir is not None
    return DemoResult(run_dir, losses)
