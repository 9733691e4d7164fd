"""Run discovery (TF layout, PyTorch files, fsspec URLs) and the conversion cache."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from stepscope.errors import NotFoundError
from stepscope.model import cache, discover_runs, open_file, open_host, open_run
from stepscope.store import background, location
from tests.support.fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def test_tf_fixtures_have_six_runs() -> None:
    runs = discover_runs(str(FIXTURES / "tf"))
    assert [r.name for r in runs] == [
        "big_ctl/2026_11_23_18_55_47",
        "ctl/2026_11_22_00_46_33",
        "ctl_opt/2026_11_22_00_46_42",
        "keras/train/2026_11_22_00_46_10",
        "keras_marked/train/2026_11_22_00_46_18",
        "remote/2026_11_22_00_46_54",
    ]
    assert [r.host_names for r in runs] == [["vm"]] * 5 + [["localhost_6009"]]
    assert all(r.hosts[0].format == "xspace" and r.size_bytes > 0 for r in runs)


def test_pytorch_files_form_one_run_per_directory(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    for rank in range(2):
        (job / f"worker{rank}.1700000000{rank}.pt.trace.json.gz").write_bytes(gzip.compress(b"{}"))
    (job / "notes.txt").write_text("ignore me")
    runs = discover_runs(str(tmp_path))
    assert [(r.name, r.host_names) for r in runs] == [("job", ["worker0", "worker1"])]
    assert runs[0].hosts[0].format == "kineto"


def test_open_run_forms(tmp_path: Path) -> None:
    run_dir = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb")).parent
    assert open_run(str(run_dir)).host_names == ["vm"]
    assert open_run(str(FIXTURES / "tf" / "ctl")).name == "2026_11_22_00_46_33"
    assert open_run(str(run_dir / "vm.xplane.pb")).hosts[0].host == "vm"
    with pytest.raises(NotFoundError, match="6 runs"):
        open_run(str(FIXTURES / "tf"))
    with pytest.raises(NotFoundError, match="no profiles"):
        open_run(str(tmp_path))


def test_a_trace_beside_a_run_folder_is_not_taken_for_the_logdirs_run(tmp_path: Path) -> None:
    """A torch trace written into a stepscope logdir, beside its plugins/profile/ run: the
    logdir holds two runs, and naming it says so (it had read the torch trace alone)."""
    shutil.copytree(FIXTURES / "tf" / "ctl", tmp_path, dirs_exist_ok=True)
    kineto = next((FIXTURES / "kineto").glob("*.json.gz"))
    shutil.copy(kineto, tmp_path / "torch_trace.json.gz")
    with pytest.raises(NotFoundError, match="holds 2 runs") as found:
        open_run(str(tmp_path))
    assert "plugins/profile/2026_11_22_00_46_33, torch_trace.json.gz" in str(found.value)
    assert open_run(str(tmp_path / "torch_trace.json.gz")).hosts[0].format == "kineto"


def test_fsspec_memory_logdir() -> None:
    fsspec = pytest.importorskip("fsspec")
    source = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb"))
    memfs = fsspec.filesystem("memory")
    memfs.pipe("/logs/plugins/profile/run1/hostA.xplane.pb", source.read_bytes())
    runs = discover_runs("memory://logs")
    assert [(r.name, r.host_names) for r in runs] == [("run1", ["hostA"])]
    profile = open_host(runs[0].hosts[0], use_cache=False)
    assert profile.n_events == 10246


def test_cache_reused_and_invalidated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    source = next((FIXTURES / "tf" / "ctl_opt").rglob("*.xplane.pb"))
    logdir = tmp_path / "logs" / "plugins" / "profile" / "r1"
    logdir.mkdir(parents=True)
    copy = logdir / "h.xplane.pb"
    shutil.copy(source, copy)
    host = open_run(str(logdir)).hosts[0]
    first = open_host(host)
    background.wait()
    entry = cache.entry_dir(str(copy))
    assert entry.is_dir() and str(tmp_path / "cache") in str(entry)
    assert sorted(p.name for p in logdir.iterdir()) == ["h.xplane.pb"]  # nothing beside the profile
    second = open_host(host)
    assert isinstance(second.start_ns.base, np.memmap)  # a view of the cache file
    np.testing.assert_array_equal(first.start_ns, second.start_ns)
    assert first.strings.strings == second.strings.strings
    assert first.planes == second.planes and first.lines == second.lines
    # Changing the profile changes the key.
    shutil.copy(next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb")), copy)
    assert cache.entry_dir(str(copy)) != entry
    assert open_host(open_run(str(logdir)).hosts[0]).n_events == 10246


def test_cache_key_depends_on_version(monkeypatch: pytest.MonkeyPatch) -> None:
    source = str(next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb")))
    before = cache.cache_key(source)
    monkeypatch.setattr(location, "__version__", "999.0")
    assert cache.cache_key(source) != before


@pytest.mark.integration  # seconds of work: the default tier stays under a minute
def test_large_conversions_report_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stepscope.cli.progress import stderr_progress
    from stepscope.model.load import PROGRESS_MIN_BYTES
    from tests.support.synthetic import synthetic_xspace_bytes

    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run_dir = tmp_path / "logs" / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    data = synthetic_xspace_bytes(800_000)
    assert len(data) > PROGRESS_MIN_BYTES
    (run_dir / "h.xplane.pb").write_bytes(data)
    profile = open_host(open_run(str(run_dir)).hosts[0], progress=stderr_progress())
    err = capsys.readouterr().err.splitlines()
    assert [line.split("]", 1)[1].split()[0] for line in err] == ["0%", "20%", "60%", "100%"]
    assert f"converted {profile.n_events:,} events" in err[-1]


def test_open_file_takes_a_path_and_caches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pathlib.Path reached the cache's JSON metadata as is: the writer thread died and
    # nothing was cached.
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "h.xplane.pb"
    shutil.copy(next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb")), copy)
    first = open_file(copy)
    background.wait()
    assert cache.load(cache.entry_dir(str(copy))) is not None
    second = open_file(copy)
    assert isinstance(second.start_ns.base, np.memmap)
    assert first.n_events == second.n_events == 10246
