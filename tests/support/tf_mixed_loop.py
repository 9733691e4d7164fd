"""A synthetic TensorFlow loop mixing eager ops with a tf.function's calls (decisions 1022,
1026, 1029), as TensorFlow 2.21 traces it."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.model.from_xspace import profile_from_xspace
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.proto.xplane_pb2 import XSpace

US = 1_000
# One eager op as TensorFlow 2.21 traces it on the calling thread (the runtime's wrappers,
# no op event inside: the op runs as a one-op function).
WRAPPERS = ("EagerKernelExecute", "KernelAndDeviceFunc::Run")


def mixed_loop(
    eager: tuple[str, ...], *, steps: int = 3, once: str = "", between: str = ""
) -> Profile:
    return profile_from_xspace(mixed_space(eager, steps=steps, once=once, between=between))


def mixed_space(
    eager: tuple[str, ...], *, steps: int = 3, once: str = "", between: str = "", host: str = "h"
) -> XSpace:
    """A loop mixing eager ops with a tf.function (decision 1022), per step: the iterator's
    fetch (``IteratorGetNext`` holding the pipeline's root stage), a constant made of a Python
    value, the ``eager`` ops (100 us each), the function's call (its graph op on tf_Compute);
    a tf.data thread runs a ``tf.py_function`` holding an eager ``Mul``; ``once`` is an eager
    op run once after the loop (Keras's summary at the capture's stop); ``between`` one run
    once, 2 ms, in the second step (a user's one-off evaluation, decision 1026); ``host``: the
    host's name (one of a job's ranks: decision 1061)."""
    builder = XSpaceBuilder(hostname=host)
    plane = builder.plane("/host:CPU")
    main = plane.line(1, "python", timestamp_ns=0)
    compute = plane.line(2, "tf_Compute/0", timestamp_ns=0)
    data = plane.line(3, "tf_data_private_threadpool/7", timestamp_ns=0)

    def eager_op(line, op: str, at: int, dur: int) -> None:  # type: ignore[no-untyped-def]
        line.event("EagerExecute", at, dur + 10 * US, {"eager_op": op, "is_func": 0})
        line.event(f"EagerLocalExecute: {op}", at + 5 * US, dur)
        for depth, name in enumerate(WRAPPERS):
            line.event(name, at + (10 + depth) * US, dur - (10 + 2 * depth) * US)

    at = 0
    for step in range(steps):
        if between and step == 1:
            eager_op(main, between, at, 2000 * US)
            at += 2050 * US
        eager_op(main, "IteratorGetNext", at, 50 * US)
        main.event("Iterator::Root", at + 20 * US, 20 * US)
        data.event("EagerPyFunc:EagerPyFunc", at, 100 * US)
        eager_op(data, "Mul", at + 20 * US, 50 * US)
        at += 70 * US
        eager_op(main, "_EagerConst", at, 30 * US)
        at += 50 * US
        for op in eager:
            eager_op(main, op, at, 100 * US)
            at += 120 * US
        main.event("EagerLocalExecute: __inference_train_step_12", at, 200 * US)
        main.event("KernelAndDeviceFunc::Run", at + 10 * US, 180 * US)
        compute.event("dense/MatMul:MatMul", at + 20 * US, 150 * US)
        at += 220 * US
    if once:
        eager_op(main, once, at, 40 * US)
    return builder.build()
