"""tests/support/workers.py: which runs `-n auto` spreads over pytest-xdist workers
(decision 860). Only the default tier, which reads no real timing, and only a folder's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import workers


@pytest.mark.parametrize(
    "markexpr",
    [
        "not integration and not browser",  # pyproject's addopts
        "not browser and not integration",
        "not integration and not browser and not slow",
        "(not integration) and (not browser)",
    ],
)
def test_the_default_tier_may_run_in_workers(markexpr: str) -> None:
    assert workers.selects_only_default_tier(markexpr)


@pytest.mark.parametrize(
    "markexpr",
    [
        "",  # every tier
        "integration",
        "browser",
        "untimed",
        "integration and not browser and untimed",  # CI's untimed lane
        "not browser",  # integration tests too (scripts/fuzz_native.py)
        "not integration",  # browser tests too
        "not integration and not browser or untimed",
        "not integration and (",  # pytest reports it; no workers meanwhile
    ],
)
def test_a_run_with_integration_or_browser_tests_stays_in_one_process(markexpr: str) -> None:
    assert not workers.selects_only_default_tier(markexpr)
    assert workers.auto_workers(markexpr, {}) == 0


def test_one_worker_a_core_for_the_default_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert workers.auto_workers("not integration and not browser", {}) == 2
    assert workers.auto_workers("not integration and not browser", {}, whole_folders=False) == 0
    monkeypatch.setattr(workers, "cores", lambda: 1)
    assert workers.auto_workers("not integration and not browser", {}) == 0


def test_the_environment_chooses_first() -> None:
    env = {workers.ENV_VAR: "3"}
    assert workers.auto_workers("integration", env) == 3
    with pytest.warns(UserWarning, match="not a number"):
        assert workers.auto_workers("integration", {workers.ENV_VAR: "many"}) == 0


class _Config:
    """What `names_a_folder` reads of a pytest.Config."""

    def __init__(self, base: Path, args: list[str], source: pytest.Config.ArgsSource) -> None:
        self.args = args
        self.args_source = source
        self.invocation_params = pytest.Config.InvocationParams(args=args, plugins=None, dir=base)


def test_a_folder_runs_in_workers_a_file_or_a_test_does_not(tmp_path: Path) -> None:
    (tmp_path / "area").mkdir()
    (tmp_path / "area" / "test_a.py").write_text("")
    given = pytest.Config.ArgsSource.ARGS

    def folder(args: list[str], source: pytest.Config.ArgsSource = given) -> bool:
        return workers.names_a_folder(_Config(tmp_path, args, source))  # type: ignore[arg-type]

    assert folder([], pytest.Config.ArgsSource.TESTPATHS)  # a bare pytest
    assert folder(["area"])
    assert folder(["area/test_a.py", "area"])
    assert not folder(["area/test_a.py"])
    assert not folder(["area/test_a.py::test_x[1]"])
