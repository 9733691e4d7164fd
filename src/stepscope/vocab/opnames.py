"""Framework op names (as TensorFlow's ``tsl/profiler/utils/tf_op_utils.cc`` parses them):
``scope/op_name:OpType`` for TensorFlow, lowercase types for JAX, ``Iterator::...`` for tf.data,
``MEMCPY*`` for copies.

`parse_op` mirrors XProf's rules for what counts as a framework op: only such events are rows
of TensorFlow-style op statistics, which is why runtime events (``ExecutorState::Process``,
``EagerExecute``...) never show up there.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from stepscope.vocab.tensorflow import EAGER_OP_PREFIX, ITERATOR_OP

_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")

TF = "tensorflow"
TF_DATA = "tf.data"
JAX = "jax"
MEMCPY = "memcpy"
UNKNOWN = ""


class Op(NamedTuple):
    category: str  # TF, TF_DATA, JAX, MEMCPY or UNKNOWN (not a framework op)
    name: str
    type: str


def parse_op(full: str) -> Op:
    """The framework op an event name stands for (category UNKNOWN when it is none)."""
    name, sep, op_type = full.partition(":")
    if not sep:
        upper = full[:10].upper()
        if upper.startswith("MEMCPY"):
            return Op(MEMCPY, full, full[:10])
        return Op(UNKNOWN, full, "")
    if name == ITERATOR_OP:
        return Op(TF_DATA, full, "Dataset")
    if _TF_NAME.fullmatch(name) and (_TF_TYPE.fullmatch(op_type) or not op_type):
        return Op(TF, name, op_type)
    jax_type = op_type or name
    if _JAX_TYPE.fullmatch(jax_type):
        return Op(JAX, name, jax_type.split("[", 1)[0])
    return Op(UNKNOWN, full, "")


def device_op(tf_op: str, kernel: str) -> tuple[str, str]:
    """(op name, op type) of a device event from its ``tf_op`` stat ('' when absent)."""
    if tf_op:
        parsed = parse_op(tf_op)
        if parsed.category in (TF, JAX):
            return parsed.name, parsed.type or parsed.name
        tail = tf_op.rstrip("/").rsplit("/", 1)[-1]
        return tf_op, tail.split("[", 1)[0] or tf_op
    return kernel, ""


def eager_op_type(full: str) -> str:
    """The op type of TensorFlow's span of one eager op on the calling thread
    (``EagerLocalExecute: MatMul`` -> ``MatMul``); '' for a tf.function's call
    (``EagerLocalExecute: __inference_train_422``: functions' names start with ``__``) and any
    other name."""
    if not full.startswith(EAGER_OP_PREFIX):
        return ""
    op_type = full[len(EAGER_OP_PREFIX) :]
    return op_type if _TF_TYPE.fullmatch(op_type) and not op_type.startswith("__") else ""
