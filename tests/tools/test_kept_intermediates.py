"""Intermediates kept in the store between processes (`stepscope.tools.kept`, decision 170).

A second tool on the same run in a new process (a new `ProfileStore`, the same store
directory) answers from the step database, op metrics... the first one kept: nothing is
built again and the profile is not opened; the answer is byte for byte what a fresh build
gives; a changed file, another code or accelerator mode, or `--no-cache` builds again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.store import background
from stepscope.tools import _analysis as analysis
from stepscope.tools import kept, output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.analysis import count_step_db_builds
from tests.support.native import c_off, c_on

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    source = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb"))
    target = tmp_path / "logs" / "plugins" / "profile" / "r1" / source.name
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    return target.parent


def _answer(run_dir: Path, tool: str, cache: Path, use_cache: bool = True) -> str:
    run = open_run(str(run_dir))
    store = ProfileStore(use_cache=use_cache, cache_dir=cache)
    ctx = ToolContext(run, run.hosts[0].host, store)
    text = json.dumps(output.to_json(get_tool(tool).build(ctx)), sort_keys=True)
    background.wait()  # the kept entries are written after the answer
    return text


def _no_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: ProfileStore, run: object, host: str) -> None:
        raise AssertionError(f"the profile of {host} was opened")

    monkeypatch.setattr(ProfileStore, "profile", refuse)


def test_a_second_process_answers_from_kept_intermediates(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "store"
    fresh = {t: _answer(run_dir, t, tmp_path / f"fresh-{t}", use_cache=False) for t in TOOLS}
    assert _answer(run_dir, "overview_page", cache) == fresh["overview_page"]
    assert list((cache / kept.KIND).rglob("*.npz"))
    built = count_step_db_builds(monkeypatch, analysis)
    with monkeypatch.context() as patched:
        _no_profile(patched)
        for tool in TOOLS[1:]:  # each its own store: a new process
            assert _answer(run_dir, tool, cache) == fresh[tool]
    assert built == []


def test_kept_intermediates_follow_the_file_and_the_mode(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "store"
    c_on(monkeypatch)  # whichever tier runs this: the C path first, then the pure one
    _answer(run_dir, "input_pipeline_analyzer", cache)
    built = count_step_db_builds(monkeypatch, analysis)
    host_file = next(run_dir.glob("*.xplane.pb"))
    os.utime(host_file, ns=(1, 1))  # the file changed (a new mtime): built again
    _answer(run_dir, "input_pipeline_analyzer", cache)
    assert len(built) == 1
    c_off(monkeypatch, "_fastwire")  # the pure path keeps its own, however it is asked for
    _answer(run_dir, "input_pipeline_analyzer", cache)
    assert len(built) == 2
    c_off(monkeypatch)
    _answer(run_dir, "input_pipeline_analyzer", cache)
    assert len(built) == 3
    _answer(run_dir, "input_pipeline_analyzer", cache, use_cache=False)  # --no-cache
    assert len(built) == 4


def test_a_damaged_kept_entry_is_built_again(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "store"
    want = _answer(run_dir, "op_stats", cache)
    for entry in (cache / kept.KIND).rglob("*.npz"):
        entry.write_bytes(b"not a value entry")
    assert _answer(run_dir, "op_stats", cache) == want


def test_partial_reads_survive_a_kept_answer(tmp_path: Path) -> None:
    """A truncated trace's answer says it was read in part, also from kept intermediates."""
    source = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
    data = source.read_bytes()
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    cache = tmp_path / "store"
    reads = []
    for _ in range(2):
        run = open_run(str(cut))
        ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=cache))
        get_tool("op_stats").build(ctx)
        background.wait()
        reads.append(ctx.partial_reads)
    assert reads[0] and reads[1] == reads[0]
