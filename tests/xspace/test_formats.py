"""The input-format registry: discovery, loading and import ask it, so a new format is one
module and one registry entry (CONTRIBUTING.md, "A new input format")."""

from __future__ import annotations

import gzip
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.capture.bridges.traces import import_traces
from stepscope.model import discover_runs, load_profile, open_host, open_run
from stepscope.model.load import open_file
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace import formats, load_xspace
from stepscope.xspace.io import parse_xspace, read_profile_bytes
from tests.support import toy_format
from tests.support.fixtures import FIXTURES, REPO, tf_xplane

KINETO = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tests/support/toy_format.py registered as a third format: a module of the package (as
    a new format's module would be) named in FORMAT_MODULES."""
    monkeypatch.setitem(sys.modules, "stepscope.xspace.formats.toy", toy_format)
    monkeypatch.setattr(formats, "FORMAT_MODULES", (*formats.FORMAT_MODULES, "toy"))
    formats.all_formats.cache_clear()
    yield
    monkeypatch.undo()
    formats.all_formats.cache_clear()


def test_xspace_and_kineto_are_the_first_two_entries() -> None:
    # then a deferred PyTorch save's host file, which stepscope writes (decision 910)
    assert [f.name for f in formats.all_formats()] == ["xspace", "kineto", "deferred"]
    assert formats.FORMAT_MODULES == ("xplane", "kineto", "deferred")
    assert formats.claiming("run/vm.deferred.pb").name == "deferred"  # type: ignore[union-attr]
    assert formats.claiming("run/vm.pb").name == "xspace"  # type: ignore[union-attr]


def test_single_files_are_claimed_by_name_and_named_after_their_host() -> None:
    assert formats.claiming("/a/vm.xplane.pb.gz").name == "xspace"  # type: ignore[union-attr]
    assert formats.claiming("x/w.123.pt.trace.json").name == "kineto"  # type: ignore[union-attr]
    assert formats.claiming("notes.txt") is None
    assert formats.get("xspace").host_name("vm.xplane.pb") == "vm"
    assert formats.get("kineto").host_name("worker0.1700000000.pt.trace.json.gz") == "worker0"


def test_a_renamed_kineto_trace_is_found_by_its_first_bytes(tmp_path: Path) -> None:
    shutil.copy(KINETO, tmp_path / "trace.data")
    found = formats.of_local_file(tmp_path / "trace.data")
    assert found is not None and found.name == "kineto"
    (tmp_path / "notes.data").write_bytes(gzip.compress(b"not a trace"))
    assert formats.of_local_file(tmp_path / "notes.data") is None


def test_a_new_format_is_found_loaded_analyzed_and_imported(toy: None, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    (logdir / "job").mkdir(parents=True)
    (logdir / "job" / "trainer.steps.txt").write_text(
        "".join(f"step#{i} {1_000 + i * 10_000} 9000\n" for i in range(6))
    )
    (run,) = discover_runs(str(logdir))
    assert (run.name, run.host_names, run.hosts[0].format) == ("job", ["trainer"], "toy")
    profile = open_host(run.hosts[0], use_cache=False)
    assert profile.n_events == 6
    assert open_file(str(logdir / "job" / "trainer.steps.txt"), use_cache=False).n_events == 6
    ctx = ToolContext(open_run(str(logdir)), "trainer", ProfileStore(use_cache=False))
    overview = get_tool("overview_page").build(ctx)
    assert [s.step for s in overview.steps] == [1, 2, 3, 4]  # first and last may be cut off
    imported = import_traces([logdir / "job" / "trainer.steps.txt"], tmp_path / "out", "r")
    assert [h.host for h in imported.hosts] == ["trainer"]
    assert (tmp_path / "out" / "plugins" / "profile" / "r" / "trainer.xplane.pb").exists()


def test_a_new_format_is_read_by_load_xspace_and_load_profile(toy: None, tmp_path: Path) -> None:
    """The two plain readers ask the registry (decision 990): a format registered there is
    read by them with no branch naming it, as the deferred save's is."""
    path = tmp_path / "trainer.steps.txt"
    path.write_text("".join(f"step#{i} {1_000 + i * 10_000} 9000\n" for i in range(3)))
    space = load_xspace(path)
    assert space == toy_format._space(path)
    assert load_xspace(str(path)) == space
    profile = load_profile(path, hostname="trainer")
    assert profile.n_events == 3
    assert [profile.event_name(i) for i in range(3)] == ["step#0", "step#1", "step#2"]


def test_load_xspace_reads_each_format_by_its_reader(tmp_path: Path) -> None:
    xplane = tf_xplane("ctl")
    assert load_xspace(xplane) == parse_xspace(read_profile_bytes(xplane))  # as io read it
    kineto = load_xspace(KINETO)  # converted as `stepscope import` converts it
    assert kineto == formats.get("kineto").to_xspace(str(KINETO))[0]
    assert load_profile(KINETO).n_events == open_file(str(KINETO), use_cache=False).n_events


def test_a_host_file_name_is_its_format_s_before_looser_claims() -> None:
    """``.deferred.pb`` is the deferred format's though XSpace claims any ``.pb``; a name no
    format claims is read as XSpace."""
    assert formats.of_file("run/vm.deferred.pb").name == "deferred"
    assert formats.of_file("run/vm.xplane.pb.gz").name == "xspace"
    assert formats.of_file("run/vm.pb").name == "xspace"
    assert formats.of_file("run/w.pt.trace.json").name == "kineto"
    assert formats.of_file("run/profile.bin").name == "xspace"
    assert formats.claiming("run/profile.bin") is None


def test_tensorflow_runs_keep_their_layout_beside_other_formats(tmp_path: Path) -> None:
    session = tmp_path / "plugins" / "profile" / "r1"
    session.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl"), session / "vm.xplane.pb")
    shutil.copy(KINETO, session / "w.pt.trace.json.gz")  # named: a Kineto host of its own run
    (session / "other.json").write_text('{"traceEvents": []}')  # beside XSpace: not probed
    runs = discover_runs(str(tmp_path))
    assert [(r.name, r.host_names, r.hosts[0].format) for r in runs] == [
        ("plugins/profile/r1", ["w"], "kineto"),
        ("r1", ["vm"], "xspace"),
    ]


def test_only_the_registry_and_its_formats_name_a_format() -> None:
    """Runs, load, import and the CLI ask the registry; none compares a format's name."""
    names = "|".join(f.name for f in formats.all_formats())
    compare = re.compile(rf"""[!=]=\s*["']({names})["']|["']({names})["']\s*[!=]=""")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "src" / "stepscope").rglob("*.py"))
        if "formats" not in path.parts and "kineto" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if compare.search(line)
    ]
    assert offenders == []
