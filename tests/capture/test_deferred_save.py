"""A deferred PyTorch save (decision 910) reads as the eager save it replaces, byte for byte.

The PyTorch bridge runs with a stand-in for torch's profiler that exports a fixture trace, so
one capture's inputs can be saved both ways: the eager save's ``.xplane.pb`` and the bytes the
deferred run is merged into when read must be equal, and so must the answers read from them.
"""

from __future__ import annotations

import contextlib
import gzip
import io
from pathlib import Path

import pytest

from stepscope.capture.bridges.base import BridgeSet
from stepscope.capture.bridges.torch_bridge import PyTorchBridge, TorchSettings, save_mode
from stepscope.capture.host_tracer import ThreadBuffer
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.save import CaptureResult, save_profile
from stepscope.model.runs import discover_runs, open_run
from stepscope.xspace import deferred
from stepscope.xspace.clock_sync import ClockSync
from stepscope.xspace.formats.kineto import recorded_at
from stepscope.xspace.proto.xplane_pb2 import XSpace

BASE = 10**12  # perf_counter ns of the trace's first event
WALL = 1_700_000_000 * 10**9
SPAN = 10**12  # the recording: longer than any fixture trace


class Exporter:
    """Stands in for ``torch.profiler.profile`` after its stop: exports a fixed trace."""

    def __init__(self, trace: bytes) -> None:
        self.trace = trace

    def export_chrome_trace(self, path: str) -> None:
        Path(path).write_bytes(self.trace)


def fixture_trace(fixtures_dir: Path, name: str) -> bytes:
    return gzip.decompress((fixtures_dir / "kineto" / name).read_bytes())


def result(tmp: Path, trace: bytes, mode: str, cuda: bool = False) -> CaptureResult:
    bridge = PyTorchBridge(ProfilerOptions(), TorchSettings(save=mode))
    bridge.profiler, bridge.stopped, bridge.cuda = Exporter(trace), True, cuda
    bridge.logs = ["[W] a line torch printed at its stop"]
    first = recorded_at(trace, trace) or 0
    # no marker in the fixture: the clock is read as Unix time, put BASE at its first event
    bridge.sync = ClockSync()
    bridge.sync.wall_ns, bridge.sync.perf_ns = first, BASE
    buffer = ThreadBuffer(11, 11, "MainThread")
    for k in range(4):
        start = BASE + k * 2_000_000
        buffer.events.append(("train", start, start + 1_500_000, 0, {"_r": 1, "step_num": k}))
        buffer.events.append(("stepscope.trace: loss", start + 10, start + 500, 1, None))
    bridges = BridgeSet([bridge], warnings=["stepscope: a warning said before the merge"])
    return CaptureResult(
        hostname="vm",
        options=ProfilerOptions(),
        logdir=str(tmp),
        run_name="2026_01_01_00_00_00",
        start_wall_ns=WALL,
        start_perf_ns=BASE - 1_000,
        stop_wall_ns=WALL + SPAN,
        stop_perf_ns=BASE + SPAN,
        host_buffers=[buffer],
        warnings=["stepscope: a capture warning"],
        bridges=bridges,
        framework="pytorch",
    )


def both_ways(tmp: Path, trace: bytes, cuda: bool = False) -> tuple[Path, Path]:
    # one log directory (the options saved name it): the second save is the run's "_2"
    eager = save_profile(result(tmp / "logs", trace, "eager", cuda))
    late = save_profile(result(tmp / "logs", trace, "deferred", cuda))
    assert late.name == f"{eager.name}_2"
    return eager, late


def events(space: XSpace) -> int:
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def answer(argv: list[str]) -> str:
    from stepscope.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return f"{status}\n{out.getvalue()}"


@pytest.mark.parametrize(
    ("name", "cuda"),
    [("cpu_only_gloo_rank34.json.gz", False), ("a100_triton_tiny.json.gz", True)],
)
def test_deferred_run_reads_as_the_eager_save(
    tmp_path: Path, fixtures_dir: Path, name: str, cuda: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    trace = fixture_trace(fixtures_dir, name)
    eager, late = both_ways(tmp_path, trace, cuda)
    assert sorted(p.name for p in eager.iterdir()) == ["vm.xplane.pb"]
    assert sorted(p.name for p in late.iterdir()) == [
        "vm.deferred.meta",
        "vm.deferred.pb",
        "vm.deferred.trace",
    ]
    # torch's trace is kept exactly as exported; the merge at read is the eager file
    assert (late / "vm.deferred.trace").read_bytes() == trace
    merged = deferred.merged_bytes(late / "vm.deferred.pb")
    assert merged == (eager / "vm.xplane.pb").read_bytes()
    space = XSpace()
    space.ParseFromString(merged)
    assert any(w.startswith("stepscope: PyTorch bridge: ") for w in space.warnings)
    own = XSpace()
    own.ParseFromString((late / "vm.deferred.pb").read_bytes())
    # torch's events are in it, not only stepscope's own
    assert events(space) > events(own) > 0
    # the answers, read through the run (the deferred format's reader, the cache)
    assert open_run(str(late)).hosts[0].format == "deferred"
    for argv in (["summary"], ["tool", "op_profile", "--json"], ["report"]):
        command, *rest = argv
        for cached in (False, True):  # the second read comes from the model's cache
            # the same but for the run's own name (the second save is the run's "_2")
            ours = answer([command, str(late), *rest, "-q"]).replace(late.name, "<run>")
            theirs = answer([command, str(eager), *rest, "-q"]).replace(eager.name, "<run>")
            assert ours == theirs, (argv, cached)
    # the run's files are never changed by a read
    assert (late / "vm.deferred.trace").read_bytes() == trace


def test_import_writes_the_xplane_that_xprof_reads(tmp_path: Path, fixtures_dir: Path) -> None:
    from stepscope.capture.bridges.traces import import_traces

    eager, late = both_ways(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"))
    imported = import_traces([late / "vm.deferred.pb"], tmp_path / "out", run_name="r")
    assert [h.host for h in imported.hosts] == ["vm"] and not imported.failures
    written, wanted = XSpace(), XSpace()
    written.ParseFromString((Path(imported.run_dir) / "vm.xplane.pb").read_bytes())
    wanted.ParseFromString((eager / "vm.xplane.pb").read_bytes())
    assert written == wanted


def test_a_run_of_deferred_and_xspace_hosts_is_one_run(tmp_path: Path, fixtures_dir: Path) -> None:
    eager, late = both_ways(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"))
    (late / "other.xplane.pb").write_bytes((eager / "vm.xplane.pb").read_bytes())
    runs = discover_runs(str(late))
    assert [(r.name, r.host_names) for r in runs] == [(late.name, ["other", "vm"])]
    assert [h.format for h in runs[0].hosts] == ["xspace", "deferred"]
    # a deferred host's size is its three files'
    assert runs[0].hosts[1].size_bytes == sum(
        (late / f"vm.deferred.{suffix}").stat().st_size for suffix in ("pb", "trace", "meta")
    )


def test_a_trace_that_cannot_be_read_keeps_stepscopes_planes(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    late = save_profile(
        result(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"), "deferred")
    )
    (late / "vm.deferred.trace").unlink()  # removed by hand: the run still reads
    space = XSpace()
    space.ParseFromString(deferred.merged_bytes(late / "vm.deferred.pb"))
    assert [p.name for p in space.planes] == ["/host:CPU", "Task Environment"]
    assert any("PyTorch bridge failed while converting its trace" in w for w in space.warnings), (
        list(space.warnings)
    )


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda meta: meta.unlink(), "vm.deferred.meta: no such file"),
        (lambda meta: meta.write_text("{bad"), "vm.deferred.meta: cannot be read as JSON"),
        (lambda meta: meta.write_text("[1, 2]"), "is not a deferred save's meta file"),
    ],
)
def test_a_lost_or_damaged_meta_file_keeps_stepscopes_planes_and_says_which(
    tmp_path: Path, fixtures_dir: Path, damage, said: str
) -> None:
    late = save_profile(
        result(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"), "deferred")
    )
    damage(late / "vm.deferred.meta")  # a run copied in part: it still reads, and says so
    space = XSpace()
    space.ParseFromString(deferred.merged_bytes(late / "vm.deferred.pb"))
    assert [p.name for p in space.planes] == ["/host:CPU", "Task Environment"]
    failed = [w for w in space.warnings if "PyTorch bridge failed while" in w]
    assert len(failed) == 1 and said in failed[0], list(space.warnings)


def test_the_report_says_the_torch_trace_is_missing(tmp_path: Path, fixtures_dir: Path) -> None:
    """The deferred merge fails at read, where no stop's stderr is seen: the report's partial
    data block must say that torch's events are missing, not read the host as a CPU loop of
    untraced Python."""
    late = save_profile(
        result(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"), "deferred")
    )
    (late / "vm.deferred.trace").unlink()
    text = answer(["report", "--no-cache", str(late)])
    flat = " ".join(text.split())  # the report wraps its lines
    assert "PARTIAL DATA" in flat, text
    assert "PyTorch bridge failed while converting its trace" in flat and "no such file" in flat


def test_warnings_are_added_where_protobuf_writes_them() -> None:
    space = XSpace(hostnames=["vm", "other"], errors=["e"], warnings=["w1"])
    space.planes.add(name="/host:CPU", id=3)
    lines = ["stepscope: PyTorch bridge: \u00e9 two", "three"]
    added = deferred.with_warnings(space.SerializeToString(), lines)
    space.warnings.extend(lines)
    assert added == space.SerializeToString()
    no_hosts = XSpace(warnings=["w"])
    assert (
        deferred.with_warnings(no_hosts.SerializeToString(), ["x"])
        == XSpace(warnings=["w", "x"]).SerializeToString()
    )


def test_the_save_mode_is_set_or_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STEPSCOPE_TORCH_SAVE", raising=False)
    assert save_mode(TorchSettings()) == "deferred"
    monkeypatch.setenv("STEPSCOPE_TORCH_SAVE", "eager")
    assert save_mode(TorchSettings()) == "eager"
    assert save_mode(TorchSettings(save="deferred")) == "deferred"


@pytest.mark.integration
def test_xprof_reads_the_imported_run_as_the_eager_file(tmp_path: Path, fixtures_dir: Path) -> None:
    raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    from stepscope.capture.bridges.traces import import_traces

    eager, late = both_ways(tmp_path, fixture_trace(fixtures_dir, "cpu_only_gloo_rank34.json.gz"))
    imported = import_traces([late / "vm.deferred.pb"], tmp_path / "out", run_name="r")
    pages = []
    for path in (Path(imported.run_dir) / "vm.xplane.pb", eager / "vm.xplane.pb"):
        data, _ = raw_to_tool_data.xspace_to_tool_data(
            [str(path)], "op_profile", {"use_saved_result": False}
        )
        pages.append(data)
    assert pages[0] and pages[0] == pages[1]


BOTH_WAYS = """
import json, shutil, sys, dataclasses
from pathlib import Path
import torch, torch.nn as nn
import stepscope
from stepscope.capture import save
from stepscope.capture.bridges.base import BridgeSet
from stepscope.capture.bridges.torch_bridge import PyTorchBridge, TorchSettings

logdir = Path(sys.argv[1])
kept = {}
export = PyTorchBridge.export
def keep_export(self, path):  # the trace torch exported, kept for the eager twin
    export(self, path)
    shutil.copy(path, logdir / "exported.json")
PyTorchBridge.export = keep_export
deferred = save._save_deferred
def keep_inputs(result, bridge, run_dir):
    kept.update(result=result, warnings=list(result.bridges.warnings), bridge=bridge)
    return deferred(result, bridge, run_dir)
save._save_deferred = keep_inputs

class Exporter:
    def export_chrome_trace(self, path):
        shutil.copy(logdir / "exported.json", path)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
stepscope.start(str(logdir))
for s in range(12):
    with stepscope.step(s):
        loss = model(torch.randn(8, 16)).sum()
        model.zero_grad()
        loss.backward()
late = stepscope.stop()
bridge = kept["bridge"]
twin = PyTorchBridge(bridge.options, TorchSettings(save="eager"))
twin.profiler, twin.stopped, twin.cuda = Exporter(), True, bridge.cuda
twin.sync, twin.logs = bridge.sync, list(bridge.logs)
result = dataclasses.replace(kept["result"], bridges=BridgeSet([twin], warnings=kept["warnings"]))
eager = save.save_profile(result)
(logdir / "exported.json").unlink()
print(json.dumps({"late": str(late), "eager": str(eager)}))
"""


@pytest.mark.integration
def test_a_real_pytorch_capture_saved_both_ways_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One real capture's inputs saved deferred (the default) and eager (its bridge's trace
    exported again): the same bytes, the same answers."""
    pytest.importorskip("torch")
    from tests.support.scripts import run_script

    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    paths = run_script(BOTH_WAYS, str(tmp_path / "logs"))
    late, eager = Path(paths["late"]), Path(paths["eager"])
    [host] = late.glob("*.deferred.pb")
    [eager_file] = eager.glob("*.xplane.pb")
    assert deferred.merged_bytes(host) == eager_file.read_bytes()
    for argv in (
        ["summary"],
        ["tool", "overview_page", "--json"],
        ["tool", "trace_viewer", "--json"],
    ):
        command, *rest = argv
        ours = answer([command, str(late), *rest, "-q"]).replace(late.name, "<run>")
        theirs = answer([command, str(eager), *rest, "-q"]).replace(eager.name, "<run>")
        assert ours == theirs, argv
