"""Input-pipeline statistics: input ops by category and the tf.data bottleneck (XProf's rules,
``xprof/convert/op_stats_to_input_pipeline_analysis.cc``).

Input ops are the host ops of the input pipeline: tf.data iterators (``Iterator::...``, also
written by ``stepscope.data.instrument``), PyTorch DataLoader ``__next__`` calls, and ops that
send input to a device (infeed enqueue, host-to-device copies). Their categories:

- enqueue: infeed / host-to-device copies;
- demanded file read: iterators reading files (``::TFRecord``, ``::TextLine``...) on demand;
- advanced file read: those when the name shows they read ahead (``::MemoryReader``,
  ``::Interleave``, ``::Prefetch``, ``::ParallelMap``, ``::ParallelInterleave``);
- preprocessing: every other iterator;
- other: input waits that show no pipeline structure (a DataLoader ``__next__``).

The tf.data bottleneck itself (slowest call per pipeline, blocking iterator with the most self
time) is `stepscope.stats.input.tf_data`; `advice_for` turns an iterator kind into advice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from stepscope.records import record
from stepscope.stats.op_metrics import OpTable
from stepscope.vocab.pytorch import is_dataloader_next
from stepscope.vocab.tensorflow import INFEED_OPS, is_iterator

if TYPE_CHECKING:
    from stepscope.stats.input.tf_data import IteratorStat

INPUT_CATEGORIES = (
    "enqueue",
    "demanded_file_read",
    "advanced_file_read",
    "preprocessing",
    "other",
)
_FILE_READS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO")
_READ_AHEAD = (
    "::MemoryReader",
    "::MemoryWriter",
    "::Interleave",
    "::Prefetch",
    "::ParallelMap",
    "::ParallelInterleave",
)
_ENQUEUE_TYPES = (*INFEED_OPS, "MemcpyHToD")


def input_category(name: str, op_type: str) -> str | None:
    """The input category of a host op, or None when it is not an input op."""
    if op_type in _ENQUEUE_TYPES or name.upper().startswith("MEMCPYHTOD"):
        return "enqueue"
    if is_iterator(name):
        if name.endswith(_FILE_READS):
            return (
                "advanced_file_read"
                if any(k in name for k in _READ_AHEAD)
                else "demanded_file_read"
            )
        return "preprocessing"
    if is_dataloader_next(name):
        return "other"
    return None


def iterator_kind(name: str) -> str:
    """``Iterator::Root::Prefetch::ParallelMapV2[0]`` -> ``ParallelMapV2``."""
    return name.rsplit("::", 1)[-1].split("[", 1)[0]


@record
class InputOps:
    """Input ops of the host op table, one row each; times int64 ns."""

    names: tuple[str, ...]
    categories: tuple[str, ...]
    count: np.ndarray
    total_ns: np.ndarray
    self_ns: np.ndarray

    def category_ns(self) -> dict[str, int]:
        out = dict.fromkeys(INPUT_CATEGORIES, 0)
        for category, value in zip(self.categories, self.self_ns.tolist(), strict=True):
            out[category] += value
        return out


def input_ops(host: OpTable) -> InputOps:
    rows = []
    for i, (name, op_type) in enumerate(zip(host.names, host.types, strict=True)):
        category = input_category(name, op_type)
        if category is not None:
            rows.append((i, category))
    index = np.array([r[0] for r in rows], dtype=np.int64)
    order = np.argsort(-host.self_ns[index], kind="stable") if index.size else index
    index = index[order]
    categories = tuple(rows[k][1] for k in order.tolist())
    return InputOps(
        tuple(host.names[i] for i in index.tolist()),
        categories,
        host.occurrences[index],
        host.total_ns[index],
        host.self_ns[index],
    )


def has_prefetch(iterators: Iterable[IteratorStat]) -> bool:
    """Whether a pipeline already prefetches (a ``Prefetch`` iterator in it)."""
    return any(it.name.startswith("Prefetch") for it in iterators)


GENERATOR_ADVICE = (
    "The pipeline's source is Python (a generator: tf.data.Dataset.from_generator, or Keras's "
    "PyDataset / generator adapter), which runs under the GIL and which tf.data cannot "
    "parallelize: with Keras, give the PyDataset workers (PyDataset(workers=N, "
    "use_multiprocessing=True, max_queue_size=...)); otherwise express the work as tf.data "
    "ops (map(..., num_parallel_calls=tf.data.AUTOTUNE)) or precompute and cache it."
)


# tf.data's own settings for a pipeline the steps wait on (decision 469).
TF_DATA_FIX = (
    "prefetch deeper (prefetch(tf.data.AUTOTUNE) last), run its map and interleave in "
    "parallel (num_parallel_calls=tf.data.AUTOTUNE), cache() what does not change"
)


def held_by_python_fix(
    percent: float, ms_per_step: float, slowed_percent: float = 0.0, holds_gil: bool = True
) -> str:
    """The fix when the steps are held up by the tf.data pipeline's Python (decision 495),
    ``slowed_percent`` of the step time of it the model's ops slowed beside that Python
    (decision 525): no prefetch or parallel call overlaps Python that holds the GIL and a
    core, so the Python goes. Where the trace does not show it keeping the GIL (decision 526)
    (``holds_gil``: a map that sleeps, or one beside the whole step), both cases are said:
    a map that waits (I/O) is helped by running in parallel."""
    if not holds_gil:
        cost = (
            f"{percent:.1f}% of the step time ({ms_per_step:.2f} ms per step) goes to the "
            "tf.data map's Python (tf.py_function / numpy_function): the step waits while it "
            "runs and no model op does, and for "
            f"{slowed_percent:.1f}% the model's ops ran slowed beside it"
            if slowed_percent > 0
            else f"{percent:.1f}% of the step time ({ms_per_step:.2f} ms per step) the step "
            "waits while the tf.data map's Python (tf.py_function / numpy_function) runs and "
            "no model op does"
        )
        return (
            cost + ". If it computes, it holds the GIL and no prefetch or parallel call "
            "overlaps it: express the map with tf ops (or do its Python offline); if it waits "
            "(I/O), " + TF_DATA_FIX + "."
        )
    if slowed_percent > 0:
        cost = (
            f"{percent:.1f}% of the step time ({ms_per_step:.2f} ms per step) goes to the "
            "tf.data map's Python (tf.py_function / numpy_function): the step waits for it, "
            f"which holds the GIL while it runs, and for {slowed_percent:.1f}% the model's ops "
            "ran slowed beside it, on the cores it kept busy"
        )
    else:
        cost = (
            f"{percent:.1f}% of the step time ({ms_per_step:.2f} ms per step) the step waits "
            "for the tf.data map's Python (tf.py_function / numpy_function), which holds the "
            "GIL while it runs"
        )
    return (
        cost + ": no prefetch or num_parallel_calls overlaps it with the step. Express "
        "the map with tf ops (or do its Python offline), then " + TF_DATA_FIX + "."
    )


def is_parallel_map(kind: str) -> bool:
    """Whether a bottleneck iterator of ``kind`` runs its map's calls in parallel
    (``ParallelMapV2``, the fused ``MapAndBatch``, ``ParallelInterleave``)."""
    return "Parallel" in kind or "MapAndBatch" in kind


def py_function_map_advice(described: str, at_once: float, parallel: bool) -> str:
    """The fix for a map bottleneck whose function calls Python (decision 1025):
    ``described`` is `MapPython.describe`, ``at_once`` how many of its calls ran at once,
    ``parallel`` whether the map is a parallel one (``ParallelMap``, ``MapAndBatch``).
    num_parallel_calls, cache-after and map-after-batch advice for any map said nothing of the
    GIL: a Python function holding it runs about one call at a time however many are allowed
    (TensorFlow's tf.numpy_function documentation), and a map that already had
    num_parallel_calls=AUTOTUNE was told to set it."""
    if not parallel:
        ran = (
            "the map runs its calls one at a time, and num_parallel_calls would overlap only "
            "their waits (sleeps, file reads, NumPy calls that release the GIL), not the "
            "Python that computes"
        )
    elif at_once < 1.5:
        ran = (
            "its calls ran one at a time, and more num_parallel_calls only queue more of "
            "them for the GIL"
        )
    else:
        ran = (
            "only its waits (sleeps, file reads, NumPy calls that release the GIL) overlap, "
            "so more num_parallel_calls do not run more of it at once"
        )
    return (
        f"The map's function {described}. That Python holds the GIL while it computes: "
        f"{ran}. Express the function with TensorFlow ops (tf.math, tf.image, "
        "tf.strings...) so the map runs as a graph in parallel, vectorized over a batch "
        "(batch() before map()), or compute its result once, offline, and read or cache() "
        "it; keep tf.py_function only for Python that waits (reads), which "
        "num_parallel_calls does overlap."
    )


def advice_for(
    kind: str, python_stages: bool = False, prefetches: bool = False, generator: bool = False
) -> str:
    """What to do when an iterator of ``kind`` is the input bottleneck; ``prefetches``: the
    pipeline already has a Prefetch (never advise adding one then); ``generator``: the
    pipeline's source is a Python generator (its stages wait on it, whatever the kind).
    A pipeline stepscope recorded (``python_stages``: no tf.data dataset in it, a generator
    given to ``stepscope.steps`` among them) gets the Python advice, never tf.data's."""
    if python_stages:
        return (
            "A Python data stage is the bottleneck: run it in parallel "
            "(DataLoader(num_workers=N), a process pool), cache or vectorize it, and "
            "prefetch batches so loading overlaps the training step."
        )
    if generator and any(k in kind.lower() for k in ("prefetch", "flatmap", "generator")):
        return GENERATOR_ADVICE
    lowered = kind.lower()
    if any(k in lowered for k in ("tfrecord", "textline", "fixedlength", "sstable", "recordio")):
        return (
            "Reading files is the bottleneck: read several files in parallel with "
            "interleave(num_parallel_calls=tf.data.AUTOTUNE), and cache() small datasets."
        )
    if "generator" in lowered:
        return GENERATOR_ADVICE
    if "pyfunc" in lowered:
        return (
            "A py_function is the bottleneck: it runs under the GIL; express it with tf ops "
            "or move it offline."
        )
    if "map" in lowered or "interleave" in lowered:
        return (
            "A map/interleave transformation is the bottleneck: set "
            "num_parallel_calls=tf.data.AUTOTUNE, cache() after expensive deterministic "
            "work, and vectorize the map (map after batch)."
        )
    if "filter" in lowered or "batch" in lowered:
        return "Filter/batch is waiting on its input: add parallelism upstream " + (
            "(num_parallel_calls on the maps before it)."
            if prefetches
            else "(num_parallel_calls on the maps before it) and prefetch(tf.data.AUTOTUNE)."
        )
    if "prefetch" in lowered or prefetches:
        return (
            "The pipeline already prefetches, yet the step waits on an empty prefetch buffer: "
            "the stages before Prefetch produce elements too slowly. Parallelize them "
            "(num_parallel_calls=tf.data.AUTOTUNE), cache() their output, or raise the "
            "prefetch buffer size."
        )
    return (
        "Add prefetch(tf.data.AUTOTUNE) at the end of the pipeline so input preparation "
        "overlaps the training step."
    )


def has_generator(iterators: Iterable[Any]) -> bool:
    """Whether a pipeline (its iterators, with ``name`` and ``dataset``) reads a Python
    generator (``Iterator::...::Generator``, a ``GeneratorDataset``)."""
    return any(
        str(it.name).endswith("Generator") or str(it.dataset).startswith("GeneratorDataset")
        for it in iterators
    )
