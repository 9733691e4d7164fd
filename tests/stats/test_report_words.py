"""Words the pod_kineto fixture's report read wrong: the untraced host time's place named its
thread twice (a Kineto trace names its threads "thread 3100453": "on thread thread 3100453,
mostly after '(step start)' ..."), one pod step was "1 pod steps", and a100_triton_tiny's
one kernel "Top 1 device ops"."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats.host.untraced import GapPlace, Untraced, where_untraced
from stepscope.stats.steps.describe_hosts import describe_hosts
from stepscope.stats.steps.markers import find_step_markers
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.fixtures import FIXTURES

TINY = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"  # one ProfilerStep, one kernel


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("thread 3100453", "on thread 3100453, "),
        ("MainThread", "on thread MainThread, "),
        ("pt_main_thread", "on thread pt_main_thread, "),
        ("", "on the steps' thread, "),
    ],
)
def test_the_thread_is_named_once(label: str, said: str) -> None:
    place = Untraced(label, (GapPlace("aten::add", "aten::mul", 8 * MS, 2),))
    text = where_untraced(place, 2, 20 * MS)
    assert text.startswith(said), text
    assert "thread thread" not in text


def test_one_pod_step_is_one_pod_step() -> None:
    """pod_kineto's report read "... 1 pod steps, the first being ..." and "the hosts share 0
    step numbers"."""
    one = HostSteps("one", np.array([7], np.int64), np.array([0], np.int64), np.array([9]))
    other = HostSteps("other", np.array([4], np.int64), np.array([0], np.int64), np.array([9]))
    said = pair_host_steps([one, other]).description
    assert said.startswith("paired by position (the hosts share no step number): 1 pod step, ")
    alike = HostSteps("alike", np.array([7], np.int64), np.array([0], np.int64), np.array([9]))
    starts, durs = np.arange(4, dtype=np.int64) * 10, np.full(4, 9, np.int64)
    low = HostSteps("low", np.arange(1, 5, dtype=np.int64), starts, durs)
    high = HostSteps("high", np.arange(4, 8, dtype=np.int64), starts, durs)
    said = pair_host_steps([low, high]).description
    assert said.startswith("paired by position (the hosts share 1 step number): 4 pod steps")
    assert (
        pair_host_steps([one, alike]).description == "paired by step number: 1 step every host has"
    )


@pytest.mark.skipif(not TINY.exists(), reason="no fixture")
def test_the_report_of_a100_triton_tiny_names_its_thread_once_and_its_one_device_op(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # no line wrapped inside a phrase
    assert main(["report", str(TINY), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "on thread 3100453, mostly after '(step start)'" in out
    assert "\nTop 1 device op by self time\n" in out


def test_a_step_sources_count_of_one_is_singular_and_hosts_still_fold() -> None:
    """Four Kineto fixtures' reports began "Steps: 1 (profiler_step: 1 PyTorch
    ProfilerStep#N annotations; ...". pod_kineto's two hosts (1 and 3 annotations) still
    read as one sentence with a range."""
    said = [find_step_markers(build(_profiler_steps(n))).description for n in (1, 3)]
    assert said == ["1 PyTorch ProfilerStep#N annotation", "3 PyTorch ProfilerStep#N annotations"]
    one, three = "1 PyTorch ProfilerStep#N annotation", "3 PyTorch ProfilerStep#N annotations"
    folded = "on each of 2 hosts: 1-3 PyTorch ProfilerStep#N annotations"
    assert describe_hosts([one, three]) == describe_hosts([three, one]) == folded


def _profiler_steps(n: int) -> XSpaceBuilder:
    builder = XSpaceBuilder(hostname="h")
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(n):
        line.event(f"ProfilerStep#{k}", k * 10 * MS, 9 * MS)
    return builder
