"""`stepscope tool` answers a command it answered before from the result cache, and only
while the run's files and stepscope's code are unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.store import location
from stepscope.tools import registry
from tests.support.fixtures import FIXTURES, REPO, tf_xplane

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl_opt"), run / "host.xplane.pb")
    return run


def _no_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> registry.ToolSpec:
        raise AssertionError(f"tool {name} computed instead of read from the cache")

    monkeypatch.setattr(registry, "get_tool", refuse)


def _answer(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["tool", *argv]) == 0
    return capsys.readouterr().out


def test_second_identical_command_reads_the_kept_answer(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _answer(capsys, str(run_dir), "overview_page")
    csv = (str(run_dir), "op_stats", "--csv", "-o", "include_idle=false")
    first_csv = _answer(capsys, *csv)
    assert first.startswith("{") and first_csv.startswith("rank,")
    _no_tools(monkeypatch)
    assert _answer(capsys, str(run_dir), "overview_page") == first
    assert _answer(capsys, *csv) == first_csv


def test_a_changed_run_or_other_options_compute_again(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _answer(capsys, str(run_dir), "overview_page")
    computed: list[str] = []
    real = registry.get_tool
    monkeypatch.setattr(registry, "get_tool", lambda n: computed.append(n) or real(n))
    _answer(capsys, str(run_dir), "overview_page", "-o", "step_source=inferred")
    _answer(capsys, str(run_dir), "overview_page", "--no-cache")
    host = run_dir / "host.xplane.pb"
    stat = host.stat()
    os.utime(host, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    _answer(capsys, str(run_dir), "overview_page")
    shutil.copy(host, run_dir / "other.xplane.pb")  # a host added to the run
    _answer(capsys, str(run_dir), "overview_page", "--host", "host")
    _answer(capsys, str(run_dir), "overview_page", "--host", "host")  # now kept
    monkeypatch.setattr(location, "_code_stamp", "another stepscope")
    _answer(capsys, str(run_dir), "overview_page", "--host", "host")
    assert [n for n in computed if n == "overview_page"] == ["overview_page"] * 5


@pytest.mark.integration  # five commands: 0.3 s
def test_a_summary_tool_keeps_the_answers_of_the_others(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # decision 200: after the overview, input pipeline and op stats are read, not computed
    others = ("input_pipeline_analyzer", "op_stats")
    computed = {n: _answer(capsys, str(run_dir), n, "--no-cache") for n in others}
    _answer(capsys, str(run_dir), "overview_page")
    _no_tools(monkeypatch)
    assert {n: _answer(capsys, str(run_dir), n) for n in others} == computed
    # with options, or after the file changed, a command computes its own answer
    with pytest.raises(AssertionError, match="computed instead"):
        main(["tool", str(run_dir), "op_stats", "-o", "include_idle=true"])
    host = run_dir / "host.xplane.pb"
    stat = host.stat()
    os.utime(host, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(AssertionError, match="computed instead"):
        main(["tool", str(run_dir), "op_stats"])


def test_only_answers_from_work_already_done_are_kept(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # op stats alone never builds the step database: the overview and the input pipeline,
    # which read it, are left to their own commands
    _answer(capsys, str(run_dir), "op_stats")
    _no_tools(monkeypatch)
    for name in ("overview_page", "input_pipeline_analyzer"):
        with pytest.raises(AssertionError, match="computed instead"):
            main(["tool", str(run_dir), name])


def test_bad_command_lines_get_the_full_parser_errors(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["tool", str(run_dir)])
    assert "required: TOOL" in capsys.readouterr().err
    assert main(["tool", str(run_dir), "nope"]) == 2
    assert "unknown tool 'nope'" in capsys.readouterr().err
    assert main(["tool", str(run_dir / "missing"), "overview_page"]) == 2


@pytest.mark.parametrize(
    "line",
    [
        "RUN overview_page",
        "RUN op_stats --csv -o include_idle=false -o x=1",
        "--host h1 RUN input_pipeline_analyzer --json",
        "RUN op_stats --host=h2 --option=a=b -q --workers 2 --max-profile-bytes 2G",
        "RUN op_stats --host h1 --host h2 --dask-timeout 5 --option= --quiet",
        "RUN trace_viewer -o hosts=a,b --dask tcp://x:1 --dask-timeout 3",
    ],
)
def test_the_quick_parse_keys_a_command_as_the_full_parser_does(line: str) -> None:
    """The kept answer's lookup reads plain command lines without argparse (decision 231):
    the key it makes is the full command's."""
    from stepscope.cli import cached_tool
    from stepscope.cli.main import build_parser

    full = build_parser("tool").parse_args(["tool", *line.split()])
    quick = cached_tool._parse(line.split())
    assert quick is not None
    assert cached_tool.command_of(quick) == cached_tool.command_of(full)
    assert quick.run == full.run


@pytest.mark.parametrize(
    "line",
    [
        "RUN",  # a tool missing
        "RUN op_stats extra",
        "RUN op_stats --no-cache",
        "RUN op_stats --csv --json",
        "RUN op_stats --dask tcp://x:1 --dask-scheduler-file f.json",
        "RUN op_stats --ho h1",  # an abbreviation: the full parser's rules
        "RUN op_stats -oa=b",
        "RUN op_stats --host",
        "RUN op_stats --host -x",
        "RUN op_stats -- x",
        "RUN op_stats --csv=1",
        "RUN op_stats --help",
    ],
)
def test_the_quick_parse_leaves_anything_else_to_the_full_parser(line: str) -> None:
    from stepscope.cli import cached_tool

    assert cached_tool._parse(line.split()) is None


@pytest.mark.integration
def test_cached_answer_imports_neither_numpy_nor_tools(run_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = (
        "import sys; from stepscope.cli.main import main; code = main(sys.argv[1:]); "
        "heavy = [m for m in ('numpy', 'stepscope.tools', 'stepscope.model', 'argparse', "
        "'re', 'json', 'typing', '_hashlib', 'contextlib') if m in sys.modules]; "
        "sys.stderr.write(repr(heavy)); sys.exit(code)"
    )
    argv = [sys.executable, "-c", code, "tool", str(run_dir), "overview_page"]
    cold = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert "numpy" in cold.stderr and warm.stderr == "[]"
    assert warm.stdout == cold.stdout


@pytest.mark.integration
def test_a_tensorflow_overview_imports_no_kineto_reader_capture_or_numpy_ma(
    run_dir: Path,
) -> None:
    # decision 201: 0.025 s of CPU for the accelerators' packages, 8 ms for numpy.ma
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    unused = ("numpy.ma", "stepscope.xspace.kineto", "stepscope.capture", "msgspec")
    code = (
        "import sys; from stepscope.cli.main import main; code = main(sys.argv[1:]); "
        f"sys.stderr.write(repr([m for m in {unused!r} if m in sys.modules])); sys.exit(code)"
    )
    argv = [sys.executable, "-c", code, "tool", str(run_dir), "overview_page"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert done.stderr.endswith("[]"), done.stderr[-300:]


@pytest.mark.integration
@pytest.mark.parametrize(
    "fixture", ["kineto/v100_training_with_memory.json.gz", "jax/cnn_cpu", "tf/keras"]
)
def test_kineto_jax_and_keras_overviews_import_no_numpy_ma(tmp_path: Path, fixture: str) -> None:
    # decision 1051: np.setdiff1d (slow steps), np.unique (JAX's eager stretches, Keras's
    # eager ops at the capture's edges) and np.isin loaded it (30-60 ms of a 0.6 s
    # `stepscope tool` on 216k events)
    source = FIXTURES / fixture
    trace = tmp_path / source.name
    if source.is_dir():
        shutil.copytree(source, trace)
    else:
        shutil.copyfile(source, trace)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = (
        "import sys; from stepscope.cli.main import main; code = main(sys.argv[1:]); "
        "sys.stderr.write(repr('numpy.ma' in sys.modules)); sys.exit(code)"
    )
    argv = [sys.executable, "-c", code, "tool", str(trace), "overview_page", "-q"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert done.stderr.endswith("False"), done.stderr[-300:]


@pytest.mark.integration  # two fresh interpreters
def test_a_tool_process_skips_only_the_interpreters_teardown(run_dir: Path) -> None:
    """decision 232: once the answer is out, exit functions run and the store's writes end,
    but no module is torn down (about 25 ms of a 0.3 s command)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    code = (
        "import atexit, sys\n"
        "from stepscope.cli.main import main\n"
        "atexit.register(lambda: sys.stderr.write('exit functions ran\\n'))\n"
        "class Teardown:\n"
        "    def __del__(self):\n"
        "        sys.stderr.write('torn down\\n')\n"
        "kept = Teardown()\n"
        "sys.exit(main())\n"
    )
    argv = [sys.executable, "-c", code, "tool", str(run_dir), "overview_page"]
    first = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert first.returncode == 0 and first.stdout.startswith("{")
    assert "exit functions ran" in first.stderr and "torn down" not in first.stderr
    # decision 303: the same command again prints its kept answer and ends the same way
    again = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "exit functions ran" in again.stderr and "torn down" not in again.stderr
    # the answers it kept were written before it ended: the next command reads them
    reader = "import sys; from stepscope.cli.main import main; main(sys.argv[1:]); " + (
        "print('numpy' in sys.modules, file=sys.stderr)"
    )
    other = [sys.executable, "-c", reader, "tool", str(run_dir), "op_stats"]
    second = subprocess.run(other, env=env, capture_output=True, text=True, check=True)
    assert second.stderr.strip() == "False" and second.stdout.startswith("{")
    failed = subprocess.run([*argv[:5], "nope"], env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and "unknown tool 'nope'" in failed.stderr
