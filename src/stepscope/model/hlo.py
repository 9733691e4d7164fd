"""XLA's HLO modules of a profile, read from its ``/host:metadata`` plane.

JAX and TensorFlow (XLA) write each compiled program into that plane as an event metadata
entry whose id is the program id and whose ``Hlo Proto`` stat holds the serialized HloProto
(module + buffer assignment). Device events name their program (``program_id`` stat) and HLO
instruction (``hlo_op``), so kernels can be tied to the instruction, its framework op
(``metadata.op_name``), its shapes and its cost.
"""

from __future__ import annotations

import logging
import re
from dataclasses import field

from stepscope.model.profile import Profile
from stepscope.records import record

TYPE_CHECKING = False  # protobuf is imported by `_read`, once a profile carries HLO
if TYPE_CHECKING:
    from stepscope.xspace.proto import hlo_pb2

log = logging.getLogger(__name__)

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
_SUFFIX = re.compile(r"\((\d+)\)$")


@record
class HloModule:
    """One compiled program: its instructions by name and id, computations by id."""

    program_id: int
    name: str  # "jit_loss_fn"
    proto: hlo_pb2.HloProto
    by_name: dict[str, hlo_pb2.HloInstructionProto] = field(repr=False)
    by_id: dict[int, hlo_pb2.HloInstructionProto] = field(repr=False)
    computations: dict[int, hlo_pb2.HloComputationProto] = field(repr=False)
    computation_of: dict[int, int] = field(repr=False)  # instruction id -> computation id

    @property
    def entry(self) -> hlo_pb2.HloComputationProto | None:
        return self.computations.get(self.proto.hlo_module.entry_computation_id)

    def instruction(self, name: str) -> hlo_pb2.HloInstructionProto | None:
        return self.by_name.get(name)

    def operands(self, inst: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.HloInstructionProto]:
        return [self.by_id[i] for i in inst.operand_ids if i in self.by_id]


def module_from_proto(program_id: int, proto: hlo_pb2.HloProto) -> HloModule:
    by_name: dict[str, hlo_pb2.HloInstructionProto] = {}
    by_id: dict[int, hlo_pb2.HloInstructionProto] = {}
    computations: dict[int, hlo_pb2.HloComputationProto] = {}
    computation_of: dict[int, int] = {}
    for comp in proto.hlo_module.computations:
        computations[comp.id] = comp
        for inst in comp.instructions:
            by_name[inst.name] = inst
            by_id[inst.id] = inst
            computation_of[inst.id] = comp.id
    return HloModule(
        program_id=program_id,
        name=proto.hlo_module.name,
        proto=proto,
        by_name=by_name,
        by_id=by_id,
        computations=computations,
        computation_of=computation_of,
    )


def hlo_modules(profile: Profile) -> dict[int, HloModule]:
    """Program id -> module, for every readable ``Hlo Proto`` of the profile (cached)."""
    return profile.derived("hlo_modules", lambda: _read(profile))


def _read(profile: Profile) -> dict[int, HloModule]:
    plane = next((p for p in profile.planes if p.name == METADATA_PLANE), None)
    if plane is None:
        return {}
    key = profile.strings.id_of(HLO_PROTO_STAT)
    if key < 0:
        return {}
    from google.protobuf.message import DecodeError

    from stepscope.xspace.proto import hlo_pb2

    out: dict[int, HloModule] = {}
    rows = [int(r) for r in (profile.meta_plane == plane.index).nonzero()[0]]
    table = profile.meta_stats
    for row in rows:
        lo, hi = int(profile.meta_stat_start[row]), int(profile.meta_stat_start[row + 1])
        for s in range(lo, hi):
            if int(table.key[s]) != key:
                continue
            data = profile.stat_value_py(int(table.kind[s]), int(table.value[s]))
            if not isinstance(data, bytes | str):
                continue
            raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
            name = profile.strings[int(profile.meta_name[row])]
            proto = hlo_pb2.HloProto()
            try:
                proto.ParseFromString(raw)
            except DecodeError:
                log.warning("%s: HLO module %s is damaged; left out", profile.source, name)
                continue
            # The program id events carry is the module's id, also the metadata name's
            # "(N)" suffix; the metadata id is only a key (they differ in JAX CPU profiles).
            found = _SUFFIX.search(name)
            program_id = int(found.group(1)) if found else int(proto.hlo_module.id)
            out[program_id] = module_from_proto(program_id, proto)
    return out
