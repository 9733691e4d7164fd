"""A diff whose candidate's steps waited for a CPU core (decisions 950-952): the run summary
carries the steps' thread's runnable time per step (the stack sampler's `Thread CPU`
readings), the diff shows it as a row, and when the extra wait is half of the mean step
time's change or more the verdict and a failing gate say it is the machine's load, not the
program. Synthetic summaries, and real analyses of synthetic sampled loops: one whose steps
are longer only by runnable time, one slower on its core."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.diff_render import render_markdown, render_text
from stepscope.stats.compare import RunSummary, diff_runs, evaluate, metric_names, parse_rule
from stepscope.stats.compare.diff_output import diff_output
from stepscope.stats.compare.summary_file import summary_file
from stepscope.tools import output
from stepscope.xspace.io import write_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.compare.synthetic import MS, summary
from tests.support.compare import LOAD, loaded_diff, path_summary
from tests.support.compare import LOAD_RULE as RULE
from tests.support.cpu_readings import sampled_loop


def _waited(s: RunSummary, wait_ms: np.ndarray) -> RunSummary:
    return replace(s, core_wait_ns=np.round(wait_ms * MS).astype(np.int64))


def test_a_slowdown_the_core_wait_explains_is_called_the_machines_load() -> None:
    rng = np.random.default_rng(950)
    base = summary(rng, steps=30)
    # the candidate's compute 4 ms longer a step, 3.5 ms of it runnable off its core
    cand = summary(rng, steps=30, extra_compute_ms=4.0)
    base = _waited(base, np.full(30, 0.2))
    cand = _waited(cand, 3.7 + 0.1 * rng.standard_normal(30))
    diff = diff_runs(base, cand)
    wait = diff.metric("core_wait")
    assert wait is not None and wait.significant and wait.tested
    assert wait.delta == pytest.approx(cand.core_wait_ns.mean() - base.core_wait_ns.mean())  # type: ignore[union-attr]
    assert diff.core_wait_share is not None and 0.5 <= diff.core_wait_share < 0.9
    assert f"mostly {LOAD}: the steps' thread waited for a CPU core +" in diff.verdict
    # the driving category is still named, after the wait
    assert diff.verdict.endswith("(fusion.3 op +4.00 ms/step)")
    assert diff.driver == "device_compute"
    result = evaluate(parse_rule(RULE, metric_names()), diff)
    assert result.failed and LOAD in result.reason  # still a failure (decision 952)
    assert diff_output(diff).core_wait_share == diff.core_wait_share
    # the footnote says the row is tested on its own, outside the Holm family
    assert "Waiting for a CPU core: tested on its own" in render_text(diff, [result], 200)
    assert "Waiting for a CPU core: tested on its own, p &lt; 0.05" in render_markdown(diff, [])


def test_a_wait_under_half_the_change_leaves_the_verdict() -> None:
    rng = np.random.default_rng(951)
    base = summary(rng, steps=30)
    cand = summary(rng, steps=30, extra_compute_ms=4.0)
    plain = diff_runs(base, cand)
    diff = diff_runs(_waited(base, np.full(30, 0.2)), _waited(cand, np.full(30, 1.5)))
    assert diff.metric("core_wait").significant  # type: ignore[union-attr]
    assert diff.core_wait_share is None and diff.verdict == plain.verdict
    result = evaluate(parse_rule(RULE, metric_names()), diff)
    assert result.failed and LOAD not in result.reason


def test_without_readings_there_is_no_row() -> None:
    rng = np.random.default_rng(952)
    diff = diff_runs(summary(rng), summary(rng, extra_compute_ms=3.0))
    assert diff.metric("core_wait") is None and diff.core_wait_share is None
    assert "tested on its own" not in render_text(diff, [], 200)
    one = diff_runs(_waited(summary(rng), np.full(50, 1.0)), summary(rng))
    wait = one.metric("core_wait")
    assert wait is not None and wait.base == pytest.approx(1.0 * MS) and wait.cand is None
    with pytest.raises(Exception, match="no stack sampler readings"):
        evaluate(parse_rule("core_wait>+1ms", metric_names()), one)


def test_the_wait_is_cut_with_the_warm_up() -> None:
    rng = np.random.default_rng(953)
    s = _waited(summary(rng, steps=10), np.arange(10.0))
    warm = replace(s, warmup_steps=2).once_warm()
    assert warm.core_wait_ns.tolist() == s.core_wait_ns[2:].tolist()  # type: ignore[union-attr]


def test_a_summary_file_carries_the_wait_and_an_older_one_loads_without() -> None:
    rng = np.random.default_rng(954)
    s = _waited(summary(rng, steps=5), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    data = json.loads(json.dumps(output.to_json(summary_file(s))))
    assert data["steps"]["core_wait_ns"] == [1 * MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]
    back = RunSummary.from_json(data)
    assert back.core_wait_ns.tolist() == s.core_wait_ns.tolist()  # type: ignore[union-attr]
    del data["steps"]["core_wait_ns"]  # a file written before decision 950
    assert RunSummary.from_json(data).core_wait_ns is None
    none = json.loads(json.dumps(output.to_json(summary_file(replace(s, core_wait_ns=None)))))
    assert "core_wait_ns" not in none["steps"]
    data["steps"]["core_wait_ns"] = [1, 2]
    with pytest.raises(Exception, match="damaged stepscope summary"):
        RunSummary.from_json(data)


# Below: real analyses of synthetic sampled loops (~0.1 s a run): integration tier.


def _write(root: Path, name: str, space: XSpace) -> Path:
    run = root / name / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    write_xspace(space, run / "vm.xplane.pb")
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cores")
    return {
        "base": _write(root, "base", sampled_loop(0, False)),
        "loaded": _write(root, "loaded", sampled_loop(8, True)),
        "slower": _write(root, "slower", sampled_loop(8, False)),
        "unread": _write(root, "unread", sampled_loop(8, True, readings=False)),
    }


@pytest.mark.integration
def test_steps_longer_only_by_their_wait_for_a_core_are_the_machines_load(
    runs: dict[str, Path],
) -> None:
    base, loaded = path_summary(str(runs["base"])), path_summary(str(runs["loaded"]))
    diff = loaded_diff(base, loaded, 8 * MS)
    assert f"{LOAD}: the steps' thread waited for a CPU core +8.00 ms/step" in diff.verdict
    assert "as much as the whole change or more" in diff.verdict
    result = evaluate(parse_rule(RULE, metric_names()), diff)
    assert result.failed and LOAD in result.reason


@pytest.mark.integration
def test_steps_slower_on_their_core_keep_the_verdict(runs: dict[str, Path]) -> None:
    base, slower = path_summary(str(runs["base"])), path_summary(str(runs["slower"]))
    diff = diff_runs(base, slower)
    assert diff.metric("core_wait").delta == 0  # type: ignore[union-attr]
    assert diff.core_wait_share is None and LOAD not in diff.verdict
    no_wait = replace(base, core_wait_ns=None), replace(slower, core_wait_ns=None)
    assert diff.verdict == diff_runs(*no_wait).verdict
    assert diff.verdict.startswith("step time +")


@pytest.mark.integration
def test_a_run_without_readings_has_no_wait(runs: dict[str, Path]) -> None:
    assert path_summary(str(runs["unread"])).core_wait_ns is None
    diff = diff_runs(path_summary(str(runs["base"])), path_summary(str(runs["unread"])))
    wait = diff.metric("core_wait")
    assert wait is not None and wait.cand is None and diff.core_wait_share is None
