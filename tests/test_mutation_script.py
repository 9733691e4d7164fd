"""scripts/mutation.py's rerun of survivors tests again the last run's survivors and nothing
else (issue #34: a rerun with ``--sample`` once re-ran the mutants the run before had KILLED,
against the new tests alone, and listed them as survivors).

The fast tests stand a small stand-in for mutmut's ``run`` in place of the real one: it keeps
mutmut 3's rule (a mutant named by a pattern on the command line is tested again whatever its
verdict; without patterns only the untested are) and lets every mutant it tests survive, as a
new test that kills nothing would. The integration test runs the real mutmut on a toy module.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.fixtures import REPO

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

MODULE = "toy/calc.py"
TOY_SOURCE = """\
def clamp(x, low=0, high=10, step=2):
    if x < low:
        return low + 0
    if x > high:
        return high - 0
    return x // step * step + 1
"""
# the tests the first run had (they kill some of clamp's mutants) and a new test that reaches
# clamp and kills none
TOY_TESTS = """\
from toy.calc import clamp


def test_clamp():
    assert clamp(-3) == 0
    assert clamp(30) == 10
    assert clamp(5) == 5
"""
NEW_TEST = """\
from toy.calc import clamp


def test_reaches_clamp():
    clamp(5, 0, 10)
"""


def _load_script() -> ModuleType:
    path = REPO / "scripts" / "mutation.py"
    spec = importlib.util.spec_from_file_location("mutation_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while made
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _toy_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src" / "toy").mkdir(parents=True)
    (repo / "src" / "toy" / "__init__.py").write_text("")
    (repo / "src" / MODULE).write_text(TOY_SOURCE)
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(TOY_TESTS)
    (repo / "tests" / "test_new.py").write_text(NEW_TEST)
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nmarkers = ["integration: x", "browser: x"]\n'
    )
    (tmp_path / "shared").mkdir()
    return repo


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script, pointed at a toy repository with one group, ``toy``."""
    mutation = _load_script()
    repo = _toy_repo(tmp_path)
    monkeypatch.setattr(mutation, "REPO", repo)
    monkeypatch.setattr(mutation, "EQUIVALENTS", repo / "none.toml")
    toy = mutation.Group((MODULE,), ("tests/test_calc.py",))
    monkeypatch.setattr(mutation, "GROUPS", {"toy": toy})
    return mutation


def _name(n: int) -> str:
    return f"toy.calc.x_clamp__mutmut_{n}"


# The first run's verdicts, a sample of the mutants numbered *1: 1 and 21 killed, 11 survived,
# 31 found by no test; the others were not in the sample (never tested).
FIRST_RUN: dict[str, int | None] = {
    _name(1): 1,
    _name(11): 0,
    _name(21): 1,
    _name(31): 33,
    _name(2): None,
    _name(3): None,
    _name(12): None,
}


def _meta(work: Path) -> Path:
    return work / "toy" / "mutants" / "src" / f"{MODULE}.meta"


def _fake_mutmut(work: Path, tested: list[str]) -> Any:
    """subprocess.run as the script calls it: ``mutmut run`` by mutmut 3's rule, and the
    survivors' diffs (none)."""

    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if cmd[1:4] == ["-m", "mutmut", "run"]:
            patterns = cmd[6:]  # after --max-children N
            data = json.loads(_meta(work).read_text())
            codes = data["exit_code_by_key"]
            for name, code in codes.items():
                if patterns:
                    chosen = any(fnmatch.fnmatchcase(name, p) for p in patterns)
                else:
                    chosen = code is None
                if chosen:
                    codes[name] = 0  # the new tests kill nothing
                    tested.append(name)
            _meta(work).write_text(json.dumps(data))
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return subprocess.CompletedProcess(cmd, 0, "{}", "")

    return run


def _first_run(script: ModuleType, work: Path) -> None:
    script.prepare("toy", script.GROUPS["toy"], work)
    _meta(work).parent.mkdir(parents=True)
    _meta(work).write_text(json.dumps({"exit_code_by_key": FIRST_RUN}))
    (work / "toy" / "mutants" / "src" / MODULE).write_text(TOY_SOURCE)


@pytest.mark.parametrize("sample", [["--sample", "1"], []])
def test_a_rerun_tests_again_only_the_survivors_of_the_run_before(
    script: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sample: list[str],
) -> None:
    work = tmp_path / "work"
    _first_run(script, work)
    tested: list[str] = []
    monkeypatch.setattr(script.subprocess, "run", _fake_mutmut(work, tested))
    argv = ["--work", str(work), "--rerun-survivors", "--tests", "tests/test_new.py", *sample]
    script.main([*argv, "--", "toy"])
    out = capsys.readouterr().out
    # with or without --sample, the rerun is of the first run's two survivors: the killed keep
    # their verdict, and mutants outside the first run's sample are not tested now
    assert sorted(tested) == [_name(11), _name(31)]
    codes = json.loads(_meta(work).read_text())["exit_code_by_key"]
    assert codes[_name(1)] == 1 and codes[_name(21)] == 1
    assert codes[_name(2)] is None
    if sample:
        assert "2 of 4 mutants killed (50.0%); 2 survived" in out


def test_a_rerun_after_a_run_without_survivors_tests_nothing(
    script: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path / "work"
    _first_run(script, work)
    _meta(work).write_text(json.dumps({"exit_code_by_key": {_name(1): 1, _name(2): None}}))
    tested: list[str] = []
    monkeypatch.setattr(script.subprocess, "run", _fake_mutmut(work, tested))
    script.main(["--work", str(work), "--rerun-survivors", "--", "toy"])
    assert tested == []
    assert "no survivors to test again" in capsys.readouterr().out


def test_the_survivors_of_a_sample_and_of_only(script: ModuleType, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _first_run(script, work)
    spec, root = script.GROUPS["toy"], work / "toy"
    assert script.survivors(root, spec) == [_name(11), _name(31)]
    assert script.survivors(root, spec, sample="3") == []
    assert script.survivors(root, spec, only=["*__mutmut_3?"]) == [_name(31)]


@pytest.mark.integration
def test_a_real_mutmut_rerun_keeps_the_killed_killed(tmp_path: Path) -> None:
    """The whole script with mutmut itself on the toy module: a sampled run, then its
    survivors against a test that kills nothing; the report must not change."""
    repo = _toy_repo(tmp_path)
    work = tmp_path / "work"
    runner = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
from tests.test_mutation_script import _load_script
m = _load_script()
m.REPO = Path({str(repo)!r})
m.EQUIVALENTS = m.REPO / "none.toml"
m.GROUPS = {{"toy": m.Group(({MODULE!r},), ("tests/test_calc.py",))}}
m.main(["--work", {str(work)!r}, "--jobs", "1", *sys.argv[1:], "--", "toy"])
"""

    def report(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", runner, *args],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        return next(line for line in lines if line.startswith("toy: toy/calc.py"))

    first = report("--sample", "147")
    assert "survived" in first and not first.startswith("toy: toy/calc.py: 0 of")
    rerun = report("--sample", "147", "--rerun-survivors", "--tests", "tests/test_new.py")
    assert rerun == first
