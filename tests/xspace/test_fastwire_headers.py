"""The C decoder parses the space and plane headers itself: the same headers as protobuf's
messages give, and opening a TensorFlow profile imports no protobuf."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stepscope import accelerators
from stepscope.xspace import headers, wire
from stepscope.xspace.proto.xplane_pb2 import XPlane, XSpace
from tests.support.fixtures import FIXTURES
from tests.support.native import c_on
from tests.support.scripts import fresh_python

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


@pytest.fixture(autouse=True)
def _c_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_fastwire")


def _rich_plane() -> XPlane:
    plane = XPlane(id=-3, name="/device:GPU:0 é")
    for key, name in ((1, "flops"), (2, "hlo_op"), (9, "ρ"), (1 << 40, "big id")):
        plane.stat_metadata[key].id = key
        plane.stat_metadata[key].name = name
        plane.stat_metadata[key].description = "ignored"
    meta = plane.event_metadata[7]
    meta.id, meta.name, meta.display_name = 7, "fusion.1", "Fusion"
    meta.metadata = b"\x00\xff serialized HLO"
    meta.child_id.extend([8, 9])
    meta.stats.add(metadata_id=1, double_value=-2.5)
    meta.stats.add(metadata_id=2, uint64_value=(1 << 64) - 1)
    meta.stats.add(metadata_id=9, int64_value=-(1 << 63))
    meta.stats.add(metadata_id=2, str_value="π fused")
    meta.stats.add(metadata_id=2, bytes_value=b"\x80\x00")
    meta.stats.add(metadata_id=1, ref_value=9)
    meta.stats.add(metadata_id=9)  # no value
    plane.event_metadata[-1].name = "negative key"
    plane.event_metadata[0].CopyFrom(plane.event_metadata[7])
    plane.stats.add(metadata_id=1, int64_value=132)
    plane.stats.add(metadata_id=2, str_value="sm_90")
    plane.lines.add(id=1, name="stream").events.add(metadata_id=7, offset_ps=1, duration_ps=2)
    return plane


def _space(*planes: XPlane) -> XSpace:
    space = XSpace(hostnames=["host-a", "hôte-b"], errors=["e1"], warnings=["w1", "w2"])
    space.planes.extend(planes)
    return space


def test_headers_equal_protobufs_on_every_kind_of_value() -> None:
    data = _space(_rich_plane(), XPlane(id=2, name="/host:CPU")).SerializeToString()
    fast = wire.decode_columns(data)
    slow = wire.columns_from_message(XSpace.FromString(data))
    assert fast.space_header == slow.space_header
    assert fast.plane_headers == slow.plane_headers
    meta = fast.plane_headers[0].event_metadata[7]
    assert [s.WhichOneof("value") for s in meta.stats] == [
        "double_value",
        "uint64_value",
        "int64_value",
        "str_value",
        "bytes_value",
        "ref_value",
        None,
    ]
    assert meta.stats[1].uint64_value == (1 << 64) - 1
    assert fast.plane_headers[0].stat_metadata[1 << 40].name == "big id"


def test_a_repeated_map_key_keeps_the_last_entry_as_protobuf_does() -> None:
    first, second = XPlane(id=1), XPlane()
    first.event_metadata[5].name = "first"
    second.event_metadata[5].name = "second"
    first.stat_metadata[3].name = "kept"
    merged = first.SerializeToString() + second.SerializeToString()  # protobuf merges these
    data = b"\x0a" + bytes([len(merged)]) + merged
    fast = wire.decode_columns(data)
    assert fast.plane_headers == wire.columns_from_message(XSpace.FromString(data)).plane_headers
    assert fast.plane_headers[0].event_metadata[5].name == "second"


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.xplane.pb")), ids=lambda p: p.name)
def test_fixture_headers_equal_protobufs(path: Path) -> None:
    space = XSpace.FromString(path.read_bytes())
    fast = accelerators.get("_fastwire")
    assert fast is not None
    for plane in space.planes:
        lineless = XPlane()
        lineless.CopyFrom(plane)
        del lineless.lines[:]
        parsed = headers.plane_header_of(fast.plane_header(lineless.SerializeToString()))
        assert parsed == headers.plane_header_from_message(plane)


def test_invalid_utf8_name_is_corrupt_data() -> None:
    data = bytearray(_space(XPlane(id=1, name="abc")).SerializeToString())
    data[data.index(b"abc")] = 0xFF
    with pytest.raises(ValueError):
        wire.decode_columns(bytes(data))


_SCRIPT = """
import sys
from stepscope.cli.main import main
try:
    main(["tool", sys.argv[1], "overview_page", "--no-cache", "-q"])
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted(m for m in sys.modules if m.startswith(("google.protobuf", "stepscope.xspace.proto"))))
"""


@pytest.mark.integration  # a fresh interpreter
def test_tensorflow_overview_imports_no_protobuf() -> None:
    path = next((FIXTURES / "tf" / "big_ctl").rglob("*.xplane.pb"))
    assert fresh_python(_SCRIPT, str(path)).splitlines()[-1] == "[]"


def test_damaged_headers_fail_or_parse_exactly_as_protobuf() -> None:
    """Seeded mutations of a header-only space (field 0, bad UTF-8 in unused strings, cut
    packed ids, duplicate map values to merge...): both fail, or both give the same headers."""
    plane = _rich_plane()
    del plane.lines[:]
    seed = _space(plane).SerializeToString()
    rng = random.Random(19)
    agreed = parsed = 0
    for _ in range(1500):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            if rng.random() < 0.6:
                data[at] = rng.randrange(256)
            else:
                data[at:at] = data[rng.randrange(len(data)) :][: rng.randint(1, 40)]
        try:
            slow = wire.columns_from_message(XSpace.FromString(bytes(data)))
        except Exception:
            slow = None
        try:
            fast = wire.decode_columns(bytes(data))
        except ValueError:
            fast = None
        if slow is None or fast is None:
            agreed += (slow is None) == (fast is None) or slow is not None  # C may reject more
            continue
        assert fast.plane_headers == slow.plane_headers
        assert fast.space_header == slow.space_header
        agreed += 1
        parsed += 1
    assert agreed == 1500 and parsed > 100
