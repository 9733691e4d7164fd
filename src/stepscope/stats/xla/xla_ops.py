"""Device events tied to their HLO instruction: framework op name, category, FLOPs, bytes.

An XLA device event (JAX, TensorFlow with XLA) carries ``program_id`` and ``hlo_op`` stats; the
program's module from the ``/host:metadata`` plane (`stepscope.model.hlo`) gives the
instruction, whose ``metadata.op_name`` is the framework op (``jit(f)/jvp(...)/dot_general``) —
the name XProf shows in op stats and kernel stats, instead of the ``XlaModule:`` placeholder
the events carry in ``tf_op``.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record

TYPE_CHECKING = False  # the instructions' module (and the HLO's) only for profiles with HLO
if TYPE_CHECKING:
    from stepscope.stats.xla.xla_op import XlaOp


@record
class XlaEvents:
    """Per device event: index into `ops` of its HLO instruction, or -1."""

    op_index: np.ndarray  # int64, one per profile event
    ops: tuple[XlaOp, ...]
    # Per op: string id of the name tools show: the framework op, else the HLO instruction.
    # These strings are added to the profile's table when first needed (XLA names that no
    # event carries, e.g. metadata op names of instructions without a ``name`` stat).
    name_ids: np.ndarray

    # Per op: string id of its framework op, '' when XLA made the instruction up (XProf's
    # kernel stats name those kernels' op '').
    framework_ids: np.ndarray

    def op_name_ids(self, events: np.ndarray, framework_only: bool = False) -> np.ndarray:
        """Per event: string id of its op's display name (with ``framework_only``: its
        framework op, '' for instructions without one), -1 when not an XLA op."""
        index = self.op_index[events]
        if not self.ops:
            return np.full(len(index), -1, dtype=np.int64)
        ids = self.framework_ids if framework_only else self.name_ids
        return np.where(index >= 0, ids[np.maximum(index, 0)], -1)

    def __bool__(self) -> bool:
        return bool(self.ops)


_NO_IDS = np.zeros(0, dtype=np.int64)


def xla_events(profile: Profile) -> XlaEvents:
    """Every event with ``program_id`` + ``hlo_op`` whose instruction the profile's HLO has."""
    return profile.derived("xla_events", lambda: _build(profile))


def _build(profile: Profile) -> XlaEvents:
    out = np.full(profile.n_events, -1, dtype=np.int64)
    if not len(profile.stat_events("hlo_op")):  # no XLA events (PyTorch): no HLO to read
        return XlaEvents(out, (), _NO_IDS, _NO_IDS)
    from stepscope.model.hlo import hlo_modules
    from stepscope.stats.xla.xla_op import xla_op

    modules = hlo_modules(profile)
    if not modules:
        return XlaEvents(out, (), _NO_IDS, _NO_IDS)
    program = profile.stat("program_id")
    hlo_op = profile.stat("hlo_op")
    events = np.flatnonzero(program.present & hlo_op.present)
    if not events.size:
        return XlaEvents(out, (), _NO_IDS, _NO_IDS)
    programs = program.as_int()[events]
    names = hlo_op.string_ids()[events]
    pairs, inverse = np.unique(np.stack([programs, names]), axis=1, return_inverse=True)
    ops: list[XlaOp] = []
    index_of_pair = np.full(pairs.shape[1], -1, dtype=np.int64)
    for k in range(pairs.shape[1]):
        module = modules.get(int(pairs[0, k]))
        if module is None or pairs[1, k] < 0:
            continue
        text = profile.strings[int(pairs[1, k])]
        inst = module.instruction(text) or module.instruction(text.split(",")[-1].strip())
        if inst is None:
            continue
        index_of_pair[k] = len(ops)
        ops.append(xla_op(module, inst))
    out[events] = index_of_pair[inverse.reshape(-1)]
    name_ids = np.array(
        [profile.strings.intern(op.tf_op_name or op.name) for op in ops], dtype=np.int64
    )
    framework_ids = np.array([profile.strings.intern(op.tf_op_name) for op in ops], dtype=np.int64)
    return XlaEvents(out, tuple(ops), name_ids, framework_ids)
