"""XSpace files: every fixture loads, round trips are lossless, bad files fail clearly."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.errors import ProfileFormatError
from stepscope.xspace import XSpaceBuilder, load_xspace, write_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.fixtures import FIXTURES, REPO

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

XPLANES = sorted(FIXTURES.rglob("*.xplane.pb"))


def test_fixture_list_is_complete() -> None:
    assert len(XPLANES) == 8  # 6 TensorFlow runs, the JAX CPU run and the JAX GPU XSpace


@pytest.mark.parametrize("path", XPLANES, ids=lambda p: p.parent.name)
def test_round_trip_is_lossless(path: Path, tmp_path: Path) -> None:
    original = load_xspace(path)
    # Map fields (metadata) have no defined order on the wire: both are written again,
    # deterministically (maps in key order), and the same bytes are the same message (a
    # comparison of the messages as well took 0.16 s more of big_ctl's round trip).
    expected = original.SerializeToString(deterministic=True)
    for compress in (False, True):
        target = write_xspace(
            original, tmp_path / f"out{int(compress)}.xplane.pb", compress=compress
        )
        assert load_xspace(target).SerializeToString(deterministic=True) == expected


def test_builder_output_loads_back(tmp_path: Path) -> None:
    builder = XSpaceBuilder(hostname="w0")
    line = builder.plane("/host:CPU").line(7, "main")
    line.event(
        "train", 1_000, 500, {"step_num": 1, "_r": 1, "note": "x", "ratio": 0.5, "big": 2**63 + 1}
    )
    space = builder.build()
    path = write_xspace(space, tmp_path / "w0.xplane.pb")
    loaded = load_xspace(path)
    assert loaded == space
    event = loaded.planes[0].lines[0].events[0]
    assert event.offset_ps == 0 and event.duration_ps == 500_000
    names = {m.id: m.name for m in loaded.planes[0].stat_metadata.values()}
    values = {names[s.metadata_id]: s.WhichOneof("value") for s in event.stats}
    assert values == {
        "step_num": "int64_value",
        "_r": "int64_value",
        "note": "str_value",
        "ratio": "double_value",
        "big": "uint64_value",
    }


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    good = (next(iter(XPLANES))).read_bytes()
    files = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "corrupt": b"\xff\xff\xff\xff\x0f" * 20,
        "not_a_profile": b"hello, this is a text file\n",
        "truncated_gzip": gzip.compress(good)[:100],
        "gzip_of_nothing": gzip.compress(b""),
    }
    out = {}
    for name, data in files.items():
        path = tmp_path / f"{name}.xplane.pb"
        path.write_bytes(data)
        out[name] = path
    return out


def test_bad_files_give_one_clear_error(tmp_path: Path) -> None:
    for name, path in _bad_files(tmp_path).items():
        with pytest.raises(ProfileFormatError) as info:
            load_xspace(path)
        message = str(info.value)
        assert str(path) in message, name
        assert "\n" not in message, name


@pytest.mark.integration
def test_cli_reports_bad_files_without_traceback(tmp_path: Path) -> None:
    for name, path in _bad_files(tmp_path).items():
        result = subprocess.run(
            [sys.executable, "-m", "stepscope.cli.main", "info", str(path), "--no-cache"],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert result.returncode == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr, name
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], (name, result.stderr)


def test_missing_file_error() -> None:
    with pytest.raises(ProfileFormatError, match="no such file"):
        load_xspace("/nonexistent/dir/host.xplane.pb")


@pytest.mark.integration
def test_generated_proto_code_is_fresh() -> None:
    pytest.importorskip("grpc_tools")
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_proto.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_messages_live_in_a_private_pool() -> None:
    from google.protobuf import descriptor_pool

    with pytest.raises(KeyError):
        descriptor_pool.Default().FindMessageTypeByName("tensorflow.profiler.XSpace")
    assert XSpace.DESCRIPTOR.full_name == "tensorflow.profiler.XSpace"


def test_real_density_synthetic_files_carry_stats_like_real_captures() -> None:
    from stepscope.model import profile_from_bytes
    from tests.support.synthetic import real_density_xspace_bytes, synthetic_xspace_bytes

    dense = profile_from_bytes(real_density_xspace_bytes(20_000))
    sparse = profile_from_bytes(synthetic_xspace_bytes(20_000))
    assert 1.45 < len(dense.stats) / dense.n_events < 1.55  # tf/remote 1.38, big_ctl 1.65
    assert len(sparse.stats) / sparse.n_events < 0.3
    flops = dense.stat("flops")
    assert flops.present.sum() > dense.n_events * 0.45
