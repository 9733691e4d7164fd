"""Issue #13 items 6-8: bounded memory and linear time on crafted profiles, in both decoders."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from stepscope import limits
from stepscope.errors import ProfileFormatError
from stepscope.model import load_profile, profile_from_bytes
from stepscope.model.id_map import map_ids as _map_ids
from stepscope.xspace.io import gunzip_bounded, read_profile_bytes
from stepscope.xspace.kineto import kineto_bytes_to_xspace, kineto_to_xspace
from stepscope.xspace.kineto.json_repair import repair_json
from stepscope.xspace.kineto.scan import parse_memory_estimate
from tests.hardening import crafted


def test_ref_stat_in_plane_without_stat_metadata(decoder: str) -> None:
    data = crafted.ref_stat_without_metadata()
    assert len(data) <= 40
    profile = profile_from_bytes(data)
    assert profile.n_events == 1
    assert profile.event_stats(0) == {"<unknown stat>": ""}


def test_gzip_bomb_stops_at_the_limit(tmp_path: Path, small_limit: int) -> None:
    path = tmp_path / "bomb.xplane.pb.gz"
    path.write_bytes(crafted.xspace_gzip_bomb(1 << 30))  # 1 GiB inflated, 1 MB on disk
    with pytest.raises(limits.ProfileTooLargeError, match="decompressing this file") as err:
        read_profile_bytes(path)
    assert str(path) in str(err.value) and "--max-profile-bytes" in str(err.value)


def test_json_gzip_bomb_stops_at_half_the_limit(small_limit: int) -> None:
    with pytest.raises(limits.ProfileTooLargeError, match="decompressing"):
        kineto_bytes_to_xspace(crafted.json_gzip_bomb(1 << 30), "bomb.json.gz")


def test_gunzip_reads_every_member_and_keeps_what_precedes_damage() -> None:
    two = gzip.compress(b"abc") + b"\0\0" + gzip.compress(b"def")
    assert gunzip_bounded(two, "x") == (b"abcdef", False)
    cut = gzip.compress(b"x" * 100_000)[:-20]
    data, damaged = gunzip_bounded(cut, "x")
    assert damaged and data == b"x" * len(data) and len(data) > 0


def test_decoded_columns_are_bounded_before_allocation(decoder: str, small_limit: int) -> None:
    # 2 MB of wire bytes: 1M empty events, 96 MB once decoded (the C decoder counts them; the
    # fallback bounds 48 bytes per input byte).
    with pytest.raises(limits.ProfileTooLargeError, match="decoding this XSpace"):
        profile_from_bytes(crafted.empty_events(1_000_000), "empty.xplane.pb")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.xplane.pb"
    path.write_bytes(b"\0" * 4096)
    limits.configure(1024)
    try:
        with pytest.raises(limits.ProfileTooLargeError, match=r"this file needs 4\.0 KiB"):
            load_profile(path)
    finally:
        limits.configure(None)


def test_json_parse_memory_is_estimated_before_parsing(small_limit: int) -> None:
    empties = b'{"traceEvents": [' + b"{}," * 2_000_000 + b"{}]}"  # 6 MB -> 140 MB of dicts
    assert parse_memory_estimate(empties) > 140_000_000
    with pytest.raises(limits.ProfileTooLargeError, match="parsing this JSON"):
        kineto_bytes_to_xspace(empties, "empties.json")


def test_estimate_admits_real_traces(fixtures_dir: Path) -> None:
    path = fixtures_dir / "kineto" / "v100_training_with_memory.json.gz"
    text = gzip.decompress(path.read_bytes())
    # measured: json.loads takes 3.0x this file; the estimate stays within 2x of that
    assert 3 * len(text) < parse_memory_estimate(text) < 8 * len(text)


def test_unterminated_string_repair_is_linear_in_memory() -> None:
    """The repair regex kept ~120 bytes of backtracking state per character of a string."""
    import tracemalloc

    text = crafted.unterminated_json_string(2_000_000).decode()
    tracemalloc.start()
    _repaired, report = repair_json(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report.truncated
    assert peak < 4 * len(text)


def test_repair_still_handles_escapes_and_quotes() -> None:
    text = '{"traceEvents": [{"name": "a\\\\b \\u00e9 op"x"", "ph": "X"}]}'
    repaired, report = repair_json(text)
    assert report.escaped_quotes == 2 and repaired is not None
    assert '"a\\\\b \\u00e9 op\\"x\\""' in repaired


def test_many_planes_load_in_linear_time(decoder: str) -> None:
    """60,000 planes took 235 s (a scan of all lines per plane); now one pass."""
    profile = profile_from_bytes(crafted.many_planes(5_000))
    assert len(profile.planes) == 5_000 and profile.n_events == 5_000
    assert [p.first_line for p in profile.planes[:3]] == [0, 1, 2]


def test_missing_metadata_ids_get_rows_in_one_step() -> None:
    values = np.array([7, 3, 7, 9, 3, 1], dtype=np.int64)
    added: list[int] = []

    def on_missing(missing_id: int) -> int:
        added.append(missing_id)
        return 100 + len(added)

    rows = _map_ids(values, np.array([1], dtype=np.int64), 10, on_missing)
    assert added == [3, 7, 9]  # each missing id once, in order
    assert rows.tolist() == [102, 101, 102, 103, 101, 10]


def test_many_missing_metadata_ids(decoder: str) -> None:
    profile = profile_from_bytes(crafted.many_missing_metadata(50_000))
    assert profile.n_events == 50_000
    names = {profile.strings[int(i)] for i in profile.name[:3]}
    assert names == {"<metadata 1>", "<metadata 2>", "<metadata 3>"}


def test_unterminated_trace_file_converts(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes(crafted.unterminated_json_string(1_000_000))
    space = kineto_to_xspace(path)
    assert any("truncated" in w for w in space.warnings)


def test_unknown_url_scheme_is_a_clear_error() -> None:
    with pytest.raises(ProfileFormatError, match=r"nosuch://x/y\.xplane\.pb: cannot open this URL"):
        read_profile_bytes("nosuch://x/y.xplane.pb")


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_gunzip_stream_reads_a_file_a_chunk_at_a_time(chunk: int) -> None:
    """The streamed inflation of a file (the Kineto scanner's) gives what gunzip_bounded gives
    from the bytes: members, zero padding cut anywhere by the reads, trailing bytes, damage."""
    import io

    from stepscope.xspace.io import GunzipStream

    one = gzip.compress(b"abc")
    cases = [
        one + b"\0" * 5 + gzip.compress(b"def") + b"\0\0",
        one + b"\0\0" + b"not gzip",
        one + gzip.compress(b"x" * 50_000)[:-20],
        b"",
    ]
    for raw in cases:
        stream = GunzipStream(io.BytesIO(raw), "x", chunk=chunk)  # a file: read(chunk)
        assert (b"".join(stream.pieces()), stream.damaged) == gunzip_bounded(raw, "x")
