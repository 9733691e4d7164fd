"""`stepscope export`: Chrome-trace JSON that loads back with the same events."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.export.chrome_trace import chrome_trace_chunks
from stepscope.model import Profile, open_file, profile_from_bytes, profile_from_xspace
from stepscope.stats.trace_index.flows import build_flows
from stepscope.xspace.kineto import kineto_to_xspace
from tests.support.fixtures import FIXTURES, tf_xplane
from tests.support.synthetic import synthetic_xspace_bytes

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def _reimport(path: Path) -> Profile:
    return profile_from_xspace(kineto_to_xspace(path))


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
def test_export_tf_run_loads_back_with_same_events(tmp_path: Path) -> None:
    out = tmp_path / "remote.json.gz"
    assert main(["export", str(FIXTURES / "tf" / "remote"), "-o", str(out), "--no-cache"]) == 0
    document = json.loads(gzip.decompress(out.read_bytes()))
    assert document["displayTimeUnit"] == "ns"
    events = document["traceEvents"]
    phases = Counter(e["ph"] for e in events)
    original = open_file(str(tf_xplane("remote")), use_cache=False)
    assert phases["X"] == original.n_events
    flows = build_flows(original, np.zeros(original.n_events, np.int32))
    assert phases["s"] == phases["f"] == len(flows)
    names = Counter(e["name"] for e in events if e["ph"] == "M")
    assert names["process_name"] == names["process_sort_index"] == 1
    assert (
        names["thread_name"]
        == names["thread_sort_index"]
        == sum(1 for line in original.lines if line.event_count)
    )
    first = next(e for e in events if e["ph"] == "X")
    assert set(first) >= {"ts", "dur", "pid", "tid", "name", "cat", "args"}
    again = _reimport(out)
    assert again.n_events == original.n_events
    # Nanoseconds survive: same durations and relative starts, event for event.
    assert sorted(again.dur_ns.tolist()) == sorted(original.dur_ns.tolist())
    assert sorted((again.start_ns - again.start_ns.min()).tolist()) == sorted(
        (original.start_ns - original.start_ns.min()).tolist()
    )


def test_export_kineto_gpu_trace_round_trip(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
        run / "worker0.1.pt.trace.json.gz",
    )
    out = tmp_path / "bert.json"
    assert main(["export", str(run), "-o", str(out), "--no-cache"]) == 0
    original = open_file(str(run / "worker0.1.pt.trace.json.gz"), use_cache=False)
    again = _reimport(out)
    assert again.n_events == original.n_events
    planes = lambda p: sorted(pl.name for pl in p.planes if pl.line_count)  # noqa: E731
    assert planes(again) == planes(original)
    depth = np.zeros(original.n_events, np.int32)
    assert len(build_flows(again, depth)) == len(build_flows(original, depth))


def test_export_window(tmp_path: Path) -> None:
    out = tmp_path / "window.json"
    argv = ["export", str(FIXTURES / "tf" / "ctl"), "-o", str(out), "--no-cache"]
    assert main([*argv, "--start-ms", "100", "--end-ms", "150"]) == 0
    exported = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    profile = open_file(str(tf_xplane("ctl")), use_cache=False)
    origin = int(profile.start_ns.min())
    a, b = origin + 100_000_000, origin + 150_000_000
    end = profile.start_ns + profile.dur_ns
    expected = ((end > a) | ((profile.dur_ns == 0) & (profile.start_ns >= a))) & (
        profile.start_ns < b
    )
    assert 0 < len(exported) == int(expected.sum()) < profile.n_events


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
def test_export_streams_in_chunks() -> None:
    profile = profile_from_bytes(synthetic_xspace_bytes(120_000, n_lines=2))
    chunks = chrome_trace_chunks(profile)
    sizes = [len(c) for c in chunks]
    assert len(sizes) > 4 and max(sizes) < sum(sizes) / 2
    document = json.loads("".join(chrome_trace_chunks(profile)))
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == profile.n_events


def test_export_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    for host in ("a", "b"):
        shutil.copy(tf_xplane("ctl"), run / f"{host}.xplane.pb")
    out = tmp_path / "x.json"
    assert main(["export", str(run), "-o", str(out), "--no-cache"]) == 2
    assert "--host" in capsys.readouterr().err
    argv = ["export", str(run), "--host", "a", "-o", str(out), "--no-cache"]
    assert main([*argv, "--start-ms", "5", "--end-ms", "1"]) == 2
    assert main(argv) == 0 and out.exists()


class _ClosedPipe(io.StringIO):
    """Standard output whose reader left (`stepscope export RUN -o - | head`)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_export_to_a_pipe_closed_early_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stepscope export RUN -o - | head` printed "stepscope: error: cannot write stdout:
    Broken pipe" and exited 2, as no other command does (`cli.main`'s quiet exit)."""
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl"), run / "a.xplane.pb")
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["export", str(run), "-o", "-", "--no-cache"]) == 0
    assert "error" not in capsys.readouterr().err
