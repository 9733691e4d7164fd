"""`stepscope export --format perfetto`: a protobuf round trip against Perfetto's published trace
format (tests/tools/perfetto_min.proto: Perfetto's field numbers, compiled here with protoc).

The decoder below does what trace_processor does with track events: interned names, tracks
from their descriptors, slices from begin/end nesting per track, flows from flow ids.
"""

from __future__ import annotations

import gzip
import importlib
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import stepscope.export.perfetto_trace as perfetto
from stepscope.cli.main import main
from stepscope.model import Profile, open_file, profile_from_xspace
from stepscope.stats.trace_index.flows import build_flows
from stepscope.stats.trace_index.tracks import sections
from stepscope.xspace import XSpaceBuilder
from tests.support.fixtures import FIXTURES, tf_xplane
from tests.support.synthetic import synthetic_xspace_bytes

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

PROTO = Path(__file__).with_name("perfetto_min.proto")


@pytest.fixture(scope="session")
def pb(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    out = tmp_path_factory.mktemp("perfetto_pb")
    # In a child process: protoc's native code, run inside a test process that earlier server
    # tests had left threads in, once ended a whole CI run with a segfault (once per session,
    # about 0.3 s).
    done = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO.parent}", f"--python_out={out}",
         PROTO.name],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"protoc failed on {PROTO}: {done.stderr}"
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("perfetto_min_pb2")
    finally:
        sys.path.remove(str(out))


def decode(pb: ModuleType, data: bytes) -> dict[str, Any]:
    """Slices (name, start, dur, track, args), tracks and flows of a Perfetto trace."""
    trace = pb.Trace.FromString(data)
    names: dict[int, str] = {}
    arg_names: dict[int, str] = {}
    arg_strings: dict[int, str] = {}
    tracks: dict[int, Any] = {}
    stacks: dict[int, list[Any]] = defaultdict(list)
    slices = []
    flows_out: dict[int, tuple[str, int]] = {}
    flows_in: dict[int, tuple[str, int]] = {}
    assert trace.packet[0].HasField("interned_data") and trace.packet[0].sequence_flags == 1
    packets = [p for p in trace.packet if p.HasField("track_event")]
    for p in trace.packet:
        assert p.trusted_packet_sequence_id == 1
        if p.HasField("interned_data"):
            names.update({e.iid: e.name for e in p.interned_data.event_names})
            arg_names.update({e.iid: e.name for e in p.interned_data.debug_annotation_names})
            arg_strings.update(
                {e.iid: e.str.decode() for e in p.interned_data.debug_annotation_string_values}
            )
        if p.HasField("track_descriptor"):
            tracks[p.track_descriptor.uuid] = p.track_descriptor
    # trace_processor sorts by timestamp (stable): equal timestamps keep the file's order.
    packets.sort(key=lambda p: p.timestamp)
    for p in packets:
        e = p.track_event
        assert e.track_uuid in tracks, "every event's track is described"
        if e.type == pb.TrackEvent.TYPE_SLICE_END:
            name, start, args = stacks[e.track_uuid].pop()
            slices.append((name, start, p.timestamp - start, e.track_uuid, args))
            continue
        args = {}
        for a in e.debug_annotations:
            value: Any
            kind = a.WhichOneof("value")
            value = (
                arg_strings[a.string_value_iid] if kind == "string_value_iid" else getattr(a, kind)
            )
            args[arg_names[a.name_iid]] = value
        name = names[e.name_iid]
        for f in e.flow_ids:
            flows_out[f] = (name, p.timestamp)
        for f in e.terminating_flow_ids:
            flows_in[f] = (name, p.timestamp)
        if e.type == pb.TrackEvent.TYPE_INSTANT:
            slices.append((name, p.timestamp, 0, e.track_uuid, args))
        else:
            stacks[e.track_uuid].append((name, p.timestamp, args))
    assert not any(stacks.values()), "every slice begun is ended"
    return {"slices": slices, "tracks": tracks, "out": flows_out, "in": flows_in}


def events_of(profile: Profile) -> Counter[tuple[str, int, int]]:
    return Counter(
        zip(
            [profile.strings[i] for i in profile.name.tolist()],
            profile.start_ns.tolist(),
            profile.dur_ns.tolist(),
            strict=True,
        )
    )


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
def test_tf_export_round_trips_events_tracks_and_stats(pb: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "remote.pftrace"  # the suffix picks the format
    assert main(["export", str(FIXTURES / "tf" / "remote"), "-o", str(out), "--no-cache"]) == 0
    got = decode(pb, out.read_bytes())
    profile = open_file(str(tf_xplane("remote")), use_cache=False)
    assert Counter((n, s, d) for n, s, d, _t, _a in got["slices"]) == events_of(profile)
    # Each line is a thread track named as the trace viewer names it, under its plane.
    threads = {t.thread.thread_name: t for t in got["tracks"].values() if t.HasField("thread")}
    expected = [
        t.name for s in sections(profile, np.ones(len(profile.lines), np.int32)) for t in s.tracks
    ]
    assert sorted(threads) == sorted(expected)
    processes = [t.process.process_name for t in got["tracks"].values() if t.HasField("process")]
    assert processes == [p.name for p in profile.planes if p.line_count]
    # Stats travel as debug annotations: an event's step_num and _r come back as numbers.
    step = next(a for n, _s, _d, _t, a in got["slices"] if n == "train" and "step_num" in a)
    assert isinstance(step["step_num"], int) and "_r" in step
    flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    assert len(got["out"]) == len(got["in"]) == len(flows)


def test_kineto_gpu_flows_link_launches_to_kernels(pb: ModuleType, tmp_path: Path) -> None:
    source = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
    out = tmp_path / "bert.pftrace.gz"
    assert main(["export", str(source), "--format", "perfetto", "-o", str(out), "--no-cache"]) == 0
    got = decode(pb, gzip.decompress(out.read_bytes()))
    profile = open_file(str(source), use_cache=False)
    assert Counter((n, s, d) for n, s, d, _t, _a in got["slices"]) == events_of(profile)
    flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    assert got["out"].keys() == got["in"].keys() and len(got["out"]) == len(flows) > 10
    launch, kernel = got["out"][1], got["in"][1]
    assert "cuda" in launch[0].lower() and kernel[1] >= launch[1]  # launch -> kernel, in order


def test_events_that_outlive_their_parent_keep_their_times(pb: ModuleType) -> None:
    builder = XSpaceBuilder(hostname="h")
    line = builder.plane("/host:CPU").line(1, "main", timestamp_ns=0)
    line.event("step", 1_000, 10_000)
    line.event("inner", 2_000, 1_000, {"k": "v"})
    line.event("async", 5_000, 20_000)  # starts inside "step", ends after it
    line.event("under_async", 6_000, 1_000)
    line.event("after", 11_000, 500)  # starts when "step" ends, inside "async"
    line.event("instant", 12_000, 0)
    line.event("later", 30_000, 1_000)  # after everything
    profile = profile_from_xspace(builder.build())
    got = decode(pb, b"".join(perfetto.perfetto_trace_chunks(profile)))
    assert Counter((n, s, d) for n, s, d, _t, _a in got["slices"]) == events_of(profile)
    track = {n: t for n, _s, _d, t, _a in got["slices"]}
    main_track = track["step"]
    assert track["inner"] == track["later"] == main_track
    # "async" cannot nest in "step": it and what runs inside it move to child tracks, one per
    # nesting row, where nothing overlaps.
    assert track["async"] != main_track
    assert track["under_async"] == track["after"] == track["instant"] != track["async"]
    for moved in ("async", "under_async"):
        child = got["tracks"][track[moved]]
        assert child.parent_uuid == main_track and "overlapping" in child.name
    inner = next(a for n, _s, _d, _t, a in got["slices"] if n == "inner")
    assert inner == {"k": "v"}


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
def test_large_trace_streams_in_chunks(pb: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.model import profile_from_bytes

    monkeypatch.setattr(perfetto, "CHUNK", 20_000)
    profile = profile_from_bytes(synthetic_xspace_bytes(60_000))
    chunks = list(perfetto.perfetto_trace_chunks(profile))
    assert len(chunks) >= 2 + 3  # interned data, tracks, then several event chunks
    got = decode(pb, b"".join(chunks))
    assert Counter((n, s, d) for n, s, d, _t, _a in got["slices"]) == events_of(profile)
