"""A diff after a warm-up compares the steps once warm (decision 386): two runs of a compiled
loop whose compiles took different times, one of them slower once warm. Over all steps the
compile's noise hides the regression (the candidate's mean step is shorter: its compile was
cached); once warm the gate fails it, and an equal pair passes."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats.compare import RunSummary, diff_runs, evaluate, metric_names, parse_rule
from stepscope.stats.compare.diff_output import diff_output
from stepscope.stats.compare.summary_file import summary_file
from stepscope.tools import output
from stepscope.xspace.io import write_xspace
from tests.compare.synthetic import summary, with_warmup
from tests.support.compare import path_summary
from tests.support.compiled_loop import compiled_loop_space

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

ITERATIONS = 12
RULE = "step_time.mean>+10%"


def test_the_gate_judges_each_runs_steps_after_its_warm_up() -> None:
    # 20 steps of ~10 ms (5% noise); the candidate 2 ms slower a step once warm, its compile
    # 2.1 s shorter (a cache): over all steps its mean step is shorter
    rng = np.random.default_rng(386)
    base = with_warmup(summary(rng, steps=20), 3000.0)
    slow = with_warmup(summary(rng, steps=20, extra_compute_ms=2.0), 900.0)
    same = with_warmup(summary(rng, steps=20), 900.0, 400.0)
    rule = parse_rule(RULE, metric_names())
    assert not evaluate(rule, diff_runs(base, slow, once_warm=False)).failed
    diff = diff_runs(base, slow)
    assert evaluate(rule, diff).failed and diff.driver == "device_compute"
    assert (
        diff.metric("step_time.mean").base
        == pytest.approx(  # type: ignore[union-attr]
            base.step_dur_ns[1:].mean()
        )
    )
    equal = diff_runs(base, same)  # each run's own warm-up: 1 step and 2
    assert not equal.flagged and not evaluate(rule, equal).failed
    assert equal.metric("warmup.time").cand == same.step_dur_ns[:2].sum()  # type: ignore[union-attr]


def _write(root: Path, name: str, **kwargs: object) -> Path:
    space, _ = compiled_loop_space(ITERATIONS, **kwargs)  # type: ignore[arg-type]
    run = root / name / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    write_xspace(space, run / "vm.xplane.pb")
    return run


# Below: real analyses of synthetic compiled loops (~0.1 s a run): integration tier.


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("warm")
    later = {k: 0.5 for k in range(1, ITERATIONS)}  # 0.5 ms more host work once warm
    return {
        "base": _write(root, "base", compile_ms=1000.0),
        "same": _write(root, "same", compile_ms=300.0),  # a cached compile: shorter
        "slow": _write(root, "slow", compile_ms=300.0, extra=later),
    }


@pytest.mark.integration
def test_a_regression_once_warm_fails_the_gate_the_compile_noise_hid(
    runs: dict[str, Path],
) -> None:
    base, slow = path_summary(str(runs["base"])), path_summary(str(runs["slow"]))
    assert base.warmup_steps == 1 and slow.warmup_steps == 1
    rule = parse_rule(RULE, metric_names())
    # over all steps the shorter compile outweighs 0.5 ms a step: the gate passed it
    every = diff_runs(base, slow, once_warm=False)
    assert not every.once_warm and not evaluate(rule, every).failed
    assert every.verdict.startswith("no significant change in step time (-")
    diff = diff_runs(base, slow)
    assert diff.once_warm
    result = evaluate(rule, diff)
    assert result.failed
    assert "once warm" in result.reason
    assert diff.verdict.startswith("once warm, step time +")
    # the ops are those of the steps once warm: the compile's ops are in no row
    names = {r.name for r in diff.host_ops}
    assert "log_metrics" in names and not names & {"dynamo", "compile_fx"}
    assert diff.driver_detail is not None and diff.driver_detail.startswith("log_metrics op")
    assert {"dynamo", "compile_fx"} <= {r.name for r in every.host_ops}
    warm = diff.metric("warmup.time")
    assert warm is not None and not warm.tested
    assert warm.base == base.step_dur_ns[0] and warm.cand == slow.step_dur_ns[0]


@pytest.mark.integration
def test_an_equal_pair_with_different_compiles_passes_once_warm(runs: dict[str, Path]) -> None:
    base, same = path_summary(str(runs["base"])), path_summary(str(runs["same"]))
    diff = diff_runs(base, same)
    assert diff.verdict.startswith("once warm, no significant change in step time")
    assert not diff.flagged
    for text in (RULE, "step_time.median>+5%", "step_time.p90>+5%"):
        assert not evaluate(parse_rule(text, metric_names()), diff).failed
    # the warm-up is a figure of its own, and a rule may gate it (one figure: not tested)
    shorter = evaluate(parse_rule("warmup.time<-50%", metric_names()), diff)
    assert shorter.failed and "warmup.time" in shorter.reason
    data = output.to_json(diff_output(diff))
    assert data["compared"] == "once_warm"
    assert data["baseline"]["warmup_steps"] == [0]
    assert data["candidate"]["bound_by_once_warm"]
    assert output.to_json(diff_output(diff_runs(base, same, once_warm=False)))["compared"] == "all"


@pytest.mark.integration
def test_a_summary_file_keeps_the_warm_up_and_its_rows(runs: dict[str, Path]) -> None:
    base = path_summary(str(runs["base"]))
    data = output.to_json(summary_file(base))
    assert data["steps"]["warmup_steps"] == 1
    back = RunSummary.from_json(json.loads(json.dumps(data)))
    assert back.warmup_steps == 1 and back.rows_once_warm is not None
    assert back.rows_once_warm.host_ops.keys == base.rows_once_warm.host_ops.keys  # type: ignore[union-attr]
    # a file written before the warm-up was kept: the same rule on its step times
    for key in ("warmup_steps",):
        del data["steps"][key]
    del data["once_warm"]
    old = RunSummary.from_json(data)
    assert old.warmup_steps == 1 and old.rows_once_warm is None


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.integration
def test_the_cli_gate_says_it_judged_the_steps_once_warm(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    base = tmp_path / "base.json"
    code, _, err = _cli("summary", str(runs["base"]), "-o", str(base), "--no-cache")
    assert code == 0 and "warm-up: step 0 (" in err and "compares the 11 steps after it" in err
    code, out, err = _cli("diff", str(base), str(runs["slow"]), "--fail-on", RULE, "--no-cache")
    assert code == 1
    words = " ".join(out.split())
    assert "Compared once warm" in words and "--all-steps compares every step" in words
    assert err.startswith(f"stepscope diff: FAIL {RULE}: step_time.mean once warm +")
    code, out, _ = _cli(
        "diff", str(base), str(runs["slow"]), "--fail-on", RULE, "--all-steps", "--no-cache"
    )
    assert code == 0 and "Compared over all steps, the warm-up included" in " ".join(out.split())
