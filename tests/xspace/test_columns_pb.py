"""`columns_pb.encode_space`: raw columns written back as XSpace bytes, equal once parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.xspace.builder import Ref, XSpaceBuilder
from stepscope.xspace.columns_pb import encode_space
from stepscope.xspace.proto.xplane_pb2 import XSpace
from stepscope.xspace.wire import decode_columns


def _round_trip(space: XSpace) -> XSpace:
    again = XSpace()
    again.ParseFromString(encode_space(decode_columns(space.SerializeToString())))
    return again


def test_every_stat_kind_line_field_and_empty_part_survives() -> None:
    builder = XSpaceBuilder(hostname="h")
    host = builder.plane("/host:CPU")
    host.stats.update({"owner": "me", "cores": 2})
    line = host.line(-5, "main")
    line.display_name = "Main thread"
    line.event("zero", 0, 0)  # offset 0 is a oneof member: written, read back as set
    line.event(
        "op",
        1_500,
        250,
        {
            "neg": -7,
            "big": (1 << 64) - 1,  # uint64
            "pi": 3.25,
            "text": "héllo",
            "raw": b"\x00\xff",
            "kind": Ref("cpu_op"),
            "empty": "",
        },
    )
    host.line(9, "")  # a line without events
    builder.plane("/device:GPU:0")  # a plane without lines
    space = builder.build()
    space.warnings.append("w")
    space.errors.append("e")
    host_plane = space.planes[0]
    host_plane.lines[0].display_id = 77
    host_plane.event_metadata[1].stats.add(metadata_id=1, int64_value=3)
    assert _round_trip(space) == space


def test_aggregated_events_are_refused() -> None:
    space = XSpace()
    event = space.planes.add(name="p").lines.add(id=1).events.add(metadata_id=1)
    event.num_occurrences = 4
    with pytest.raises(ValueError, match="aggregated"):
        encode_space(decode_columns(space.SerializeToString()))


@pytest.mark.parametrize(
    "name",
    [
        "xspace/gpu_jax_fused_attention.xplane.pb",
        "tf/ctl/plugins/profile/2026_11_22_00_46_33/vm.xplane.pb",
    ],
)
def test_real_profiles_come_back_equal(fixtures_dir: Path, name: str) -> None:
    space = XSpace()
    space.ParseFromString((fixtures_dir / name).read_bytes())
    assert _round_trip(space) == space
