"""Synthetic JAX runs that do or do not differentiate (decision 561): the compiled programs'
HLO modules in the ``/host:metadata`` plane, and the stack sampler's line on the loop's
thread."""

from __future__ import annotations

from stepscope.model.hlo import HLO_PROTO_STAT, METADATA_PLANE
from stepscope.vocab.dispatch import JAX_API_FRAME
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.proto import hlo_pb2
from tests.support.analysis import MS
from tests.support.fetch_loop import sampled_main

US = 1_000
STEPS = 6
LOOP = "<module> (serve.py:30)"
# what the sampler sees inside a JAX call: its API frame, then JAX's dispatch
JAX_CALL = (
    f"{LOOP};predict (serve.py:12);{JAX_API_FRAME}traceback_util.py:195);cache_miss (pjit.py:259)"
)
# ... and inside an un-jitted jax.grad's backward pass
GRAD_CALL = (
    f"{LOOP};update (train.py:19);{JAX_API_FRAME}traceback_util.py:195);"
    "value_and_grad_f (api.py:542);backward_pass3 (ad.py:417);apply_primitive (dispatch.py:88)"
)


def program(name: str, *op_names: str) -> bytes:
    """A serialized HloProto of one computation whose instructions carry ``op_names``."""
    proto = hlo_pb2.HloProto()
    module = proto.hlo_module
    module.name = name
    module.id = 1
    comp = module.computations.add(name="main", id=1)
    module.entry_computation_id = 1
    for k, op_name in enumerate(op_names):
        inst = comp.instructions.add(name=f"op.{k}", opcode="multiply", id=k + 2)
        inst.metadata.op_name = op_name
    return proto.SerializeToString()


def jax_loop(
    *,
    op_names: tuple[str, ...] = ("jit(predict)/dot_general", "jit(predict)/tanh"),
    stacks: tuple[str, ...] = (JAX_CALL,) * STEPS,
    ops_per_step: int = 400,
    staged_ms: int = 0,
    tf_data: bool = False,
) -> XSpaceBuilder:
    """Marked steps of a JAX loop, 2 ms apart: ``staged_ms`` of untraced Python first (the
    batch built inside the step), then ``ops_per_step`` un-jitted calls of 3 µs, 7 µs apart (a
    dispatch-bound step); one sample run per step from ``stacks`` (cycled), 2 samples each;
    one compiled program with ``op_names``; ``tf_data``: a tf.data iterator fetch per step."""
    builder, main, samples = sampled_main()
    builder.plane(METADATA_PLANE).event_metadata_id(
        "jit_predict(1)", stats={HLO_PROTO_STAT: program("jit_predict", *op_names)}
    )
    for k in range(STEPS):
        t0 = k * (staged_ms + 6) * MS
        main.event("serve", t0, 4 * MS + staged_ms * MS, {"step_num": k, "_r": 1})
        if tf_data:
            main.event("Iterator::Prefetch", t0, 10 * US)
        t = t0 + staged_ms * MS
        for i in range(ops_per_step):
            main.event(("PjitFunction(mul)", "PjitFunction(tanh)")[i % 2], t, 3 * US)
            t += 10 * US
        stack = stacks[k % len(stacks)]
        at = t0 + staged_ms * MS
        samples.event(stack.rsplit(";", 1)[-1], at, MS, {"stack": stack, "samples": 2})
    return builder
