"""How to make batches ahead of the step, in the profile's framework's words (decision 610).

The overview's advice, the input and step-gap findings and a late rank's fix all tell a user
to prepare batches while the step computes. They spelled it five ways: "tf.data's
.prefetch(...) and .map(...)" on a TensorFlow run's first page above "tf.data
.prefetch(...)" in its findings, "a DataLoader with workers, tf.data prefetch, a background
thread" on a JAX run's page above a finding naming both loaders' calls, and a PyTorch trace's
step gaps told "tf.data prefetch(tf.data.AUTOTUNE)" (decision 551 had kept that to the
frameworks that use it). One spelling here: the profile's framework's loader; JAX (fed by
tf.data, Grain or a DataLoader alike) and an unknown framework get both.
"""

from __future__ import annotations

from stepscope.stats.input.loader_workers import generic_dataloader_call

TF_DATA_AHEAD = (
    "tf.data .prefetch(tf.data.AUTOTUNE) and .map(..., num_parallel_calls=tf.data.AUTOTUNE)"
)
# A loop taking its batches from a queue another thread or process fills (decision 730)
QUEUE_AHEAD = (
    "the thread or process filling the queue makes batches slower than the steps take them, "
    "and a deeper queue only delays the wait: make more of them at once (more producer "
    "processes: a torch DataLoader with num_workers, a multiprocessing pool; threads only "
    "as far as the batch's work releases the GIL: NumPy, file reads) or make each cheaper"
)
PYTHON_LOADER_AHEAD = "a background thread or process for a Python loader"
# A loop's own Python iterator (a generator) making each batch on the step's thread: the
# overview's advice and the input pipeline page's alike
PYTHON_ITERATOR_AHEAD = (
    "make the next batches while the step computes, in worker processes (a torch DataLoader "
    "with num_workers over the same code, tf.data with prefetch, a multiprocessing pool "
    "filling a queue); a background thread helps only as far as the batch's work releases "
    "the GIL (NumPy, file reads)"
)


def input_ahead(framework: str, has_device: bool) -> str:
    """What makes the batches ahead of the step for a profile of ``framework`` (pinned
    memory only where a device takes them, `generic_dataloader_call`)."""
    loader = generic_dataloader_call(has_device)
    if framework == "tensorflow":
        return TF_DATA_AHEAD
    if framework == "pytorch":
        return f"{loader}, or {PYTHON_LOADER_AHEAD}"
    return f"{TF_DATA_AHEAD}; PyTorch {loader}; {PYTHON_LOADER_AHEAD}"
