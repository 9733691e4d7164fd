"""A tf.data map's Python (``tf.py_function`` / ``tf.numpy_function``), as its advice needs it
(decision 1025).

The ops that run Python (`vocab.tensorflow.is_py_function`: ``EagerPyFunc``, ``PyFunc``...)
on tf.data's threads are the map's Python function calls: TensorFlow traces each as
``name:Type``, the name ``tf.py_function(..., name=...)`` gave (else the type's own), and
nothing of the Python function itself (the stack sampler samples the steps' threads only).
Their calls' sum against the time at least one ran says how many ran at once: a Python
function holding the GIL runs about one at a time whatever ``num_parallel_calls`` is
(TensorFlow's ``tf.numpy_function`` documentation: it "will acquire the Python Global
Interpreter Lock (GIL) that allows only one thread to run at any point in time").
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import used_names
from stepscope.stats.events import tf_data_lines
from stepscope.stats.intervals import merge
from stepscope.vocab import tensorflow as tf_names
from stepscope.vocab.opnames import parse_op


@record
class MapPython:
    """The tf.data map's Python calls in a profile."""

    names: tuple[str, ...]  # the ops' names a user gave (``augment``), most time first
    types: tuple[str, ...]  # their types (``EagerPyFunc``), as ``names``
    calls: int
    ns: int  # the calls' time, summed
    wall_ns: int  # the time at least one ran

    @property
    def at_once(self) -> float:
        """How many ran at once on average while any did."""
        return self.ns / self.wall_ns if self.wall_ns else 0.0

    def describe(self) -> str:
        """``runs Python through tf.py_function (EagerPyFunc: 1841 calls, 0.99 ms each, 1.8
        running at once on average)``; the op's own name where the user gave one."""
        kind = "tf.numpy_function" if self.types[0] == "PyFunc" else "tf.py_function"
        named = [n for n in self.names if n]
        op = (
            f"'{named[0]}' ({self.types[0]})"
            if named
            else f"{self.types[0]}, unnamed: {kind}(..., name=...) names it here"
        )
        return (
            f"runs Python through {kind} ({op}: {self.calls} calls, "
            f"{self.ns / max(self.calls, 1) / 1e6:.2f} ms each, {self.at_once:.1f} running at "
            "once on average)"
        )


def map_python(profile: Profile) -> MapPython | None:
    """The ops running Python on tf.data's threads, or None where there are none."""
    strings = profile.strings
    used = used_names(profile)
    python = np.zeros(len(strings), dtype=bool)
    python[used] = [tf_names.is_py_function(strings[i]) for i in used.tolist()]
    events = np.flatnonzero(
        python[profile.name] & tf_data_lines(profile)[profile.line] & (profile.dur_ns > 0)
    )
    if not len(events):
        return None
    starts, ends = profile.start_ns[events], profile.end_at(events)
    lo, hi = merge(starts, ends)
    ids, group = np.unique(profile.name[events], return_inverse=True)
    total = np.bincount(group, weights=ends - starts, minlength=len(ids))
    order = np.argsort(-total, kind="stable")
    ops = [parse_op(strings[int(ids[i])]) for i in order.tolist()]
    types = [o.type or o.name.rpartition(":")[2] for o in ops]
    return MapPython(
        # a name that is its type's (``EagerPyFunc:EagerPyFunc``) is no name a user gave
        tuple("" if o.name in ("", t) else o.name for o, t in zip(ops, types, strict=True)),
        tuple(types),
        len(events),
        int((ends - starts).sum()),
        int((hi - lo).sum()),
    )
