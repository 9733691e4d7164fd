"""`stepscope import`: every Kineto fixture becomes a run every analysis tool can open."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture.bridges import import_traces
from stepscope.cli.main import main
from stepscope.errors import StepscopeError
from stepscope.model import ALL_HOSTS, discover_runs, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import ToolSpec, all_tools
from tests.support.fixtures import FIXTURES, by_size

KINETO = sorted(
    [
        "a100_nccl_rank0.json.gz",
        "a100_triton_tiny.json.gz",
        "b200_vllm_fp8_rank0.json.gz",
        "cpu_only_gloo_rank34.json.gz",
        "h100_bert_small_inference.json.gz",
        "h100_timesformer_inference.json.gz",
        "mi300x_resnet_training_rank0.json.gz",
        "v100_resnet50_training_2021schema.json.gz",
        "v100_training_with_memory.json.gz",
    ]
)


def _import_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["import", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


class _ImportedRuns(dict[str, Path]):
    """Kineto fixture name -> its run directory, imported on first use (once per module), so
    a run limited to the default tier never imports the heavy fixtures."""

    def __init__(self, logdir: Path) -> None:
        super().__init__()
        self.logdir = logdir

    def __missing__(self, name: str) -> Path:
        result = import_traces([FIXTURES / "kineto" / name], self.logdir, run_name=name[:-8])
        assert not result.failures
        self[name] = result.run_dir
        return result.run_dir


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each Kineto fixture imported as its own run (the CLI path is tested below)."""
    return _ImportedRuns(tmp_path_factory.mktemp("imported"))


def test_every_kineto_fixture_is_in_the_suite(fixtures_dir: Path) -> None:
    assert sorted(p.name for p in (fixtures_dir / "kineto").glob("*.json.gz")) == KINETO


def test_cli_prints_the_run_directory_with_one_host_per_rank(
    fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [
        fixtures_dir / "kineto" / n
        for n in ("a100_nccl_rank0.json.gz", "cpu_only_gloo_rank34.json.gz")
    ]
    code, out, err = _import_cli(
        capsys, *map(str, sources), "--logdir", str(tmp_path), "--run", "job"
    )
    assert code == 0
    run_dir = Path(out.strip())
    assert run_dir == tmp_path / "plugins" / "profile" / "job"
    assert sorted(p.name for p in run_dir.iterdir()) == ["rank0.xplane.pb", "rank34.xplane.pb"]
    assert "rank34" in err  # the summary goes to stderr
    [run] = discover_runs(str(tmp_path))
    assert sorted(run.host_names) == ["rank0", "rank34"]
    # A second import never overwrites the first.
    code, out, _ = _import_cli(capsys, str(sources[0]), "--logdir", str(tmp_path), "--run", "job")
    assert code == 0 and Path(out.strip()).name == "job_2"


def test_two_traces_of_one_rank_stay_two_hosts(
    fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kineto = fixtures_dir / "kineto"
    code, out, _ = _import_cli(
        capsys,
        str(kineto / "a100_triton_tiny.json.gz"),
        str(kineto / "cpu_only_gloo_rank34.json.gz"),
        str(kineto / "a100_triton_tiny.json.gz"),  # named twice: imported once
        "--logdir",
        str(tmp_path),
        "--json",
    )
    assert code == 0
    import json

    summary = json.loads(out)
    assert [h["host"] for h in summary["hosts"]] == ["a100_triton_tiny", "rank34"]
    copy = tmp_path / "copy" / "rank34.json.gz"
    copy.parent.mkdir()
    shutil.copyfile(kineto / "cpu_only_gloo_rank34.json.gz", copy)
    result = import_traces([kineto / "cpu_only_gloo_rank34.json.gz", copy.parent], tmp_path)
    assert [h.host for h in result.hosts] == ["rank34", "rank34_2"]
    assert "both host 'rank34'" in result.warnings[0]


def test_xspace_files_are_copied_under_their_host_name(fixtures_dir: Path, tmp_path: Path) -> None:
    source = fixtures_dir / "xspace" / "gpu_jax_fused_attention.xplane.pb"
    result = import_traces([source], tmp_path)
    assert [h.host for h in result.hosts] == ["gpu_jax_fused_attention"]
    assert (result.run_dir / "gpu_jax_fused_attention.xplane.pb").stat().st_size > 0


def test_bad_files_are_reported_and_skipped(
    fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.pt.trace.json"
    broken.write_text('{"schemaVersion": 1}')
    empty = tmp_path / "empty.json.gz"
    empty.write_bytes(gzip.compress(b""))
    good = fixtures_dir / "kineto" / "a100_triton_tiny.json.gz"
    code, out, err = _import_cli(capsys, str(good), str(broken), "--logdir", str(tmp_path / "l"))
    assert code == 1 and Path(out.strip()).is_dir()
    assert "not imported" in err and "no traceEvents list" in err
    code, out, err = _import_cli(capsys, str(broken), str(empty), "--logdir", str(tmp_path / "m"))
    assert code == 2 and out == "" and "nothing imported" in err
    assert not (tmp_path / "m").exists()
    code, _, err = _import_cli(capsys, str(tmp_path / "missing.json"), "--logdir", str(tmp_path))
    assert code == 2 and "no such file or directory" in err
    with pytest.raises(StepscopeError, match="plain directory name"):
        import_traces([good], tmp_path, run_name="../x")


def test_a_file_read_in_part_is_imported_and_said(
    fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a trace cut in the middle (a copy that stopped, a full disk): the events before the cut
    # are imported, and the import says the file was read in part (decision 582)
    whole = gzip.decompress((fixtures_dir / "kineto" / "a100_triton_tiny.json.gz").read_bytes())
    cut = tmp_path / "cut.pt.trace.json"
    cut.write_bytes(whole[: len(whole) // 2])
    code, out, err = _import_cli(capsys, str(cut), "--logdir", str(tmp_path / "l"))
    assert code == 0 and Path(out.strip()).is_dir()
    assert f"{cut}: read in part, repaired invalid JSON: file is truncated" in err


def _build(spec: ToolSpec, run_dir: Path) -> list[Any]:
    run = open_run(str(run_dir))
    store = ProfileStore(use_cache=False)
    hosts = [ALL_HOSTS] if spec.multi_host else run.host_names
    outputs = []
    for host in hosts:
        ctx = ToolContext(run, host, store)
        if spec.available(ctx):
            outputs.append(output.to_json(spec.build(ctx)))
    return outputs


@pytest.mark.parametrize("path", by_size([FIXTURES / "kineto" / name for name in KINETO]))
def test_every_tool_runs_on_every_imported_fixture(imported: dict[str, Path], path: Path) -> None:
    ran = []
    for spec in all_tools():
        for data in _build(spec, imported[path.name]):
            assert isinstance(data, dict)
            ran.append(spec.name)
    assert "overview_page" in ran and "trace_viewer" in ran
