"""The "bound by collectives" words name the collectives the steps spent that time in, and only
those (decision 1037): they said "(all-reduce, all-gather)" of every job."""

from __future__ import annotations

import pytest

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.bound import bound_by
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.gpu_fixtures import fixture_profile

US = 1_000
STEPS = 8


def _gloo_loop(*calls: tuple[str, float]) -> XSpaceBuilder:
    """Per 10 ms step: 2 ms of compute, then each of ``calls`` (gloo span, ms) on gloo's
    thread one after another while the step's thread waits (`c10d::` enqueue, 20 us)."""
    builder = XSpaceBuilder("vm")
    host = builder.plane("/host:CPU")
    main, gloo = host.line(1, "MainThread"), host.line(2, "gloo")
    for k in range(STEPS):
        t0 = k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::addmm", t0, 2 * MS)
        at = t0 + 2 * MS
        for name, ms in calls:
            main.event("c10d::" + name.split(":")[1] + "_", at, 20 * US)
            gloo.event(name, at, int(ms * MS))
            at += int(ms * MS)
    return builder


def _words(builder: XSpaceBuilder) -> str:
    found = bound_by(summarize_steps({"vm": build_step_db(build(builder))}))
    assert found.first == "collectives"
    return found.limits[0].evidence


def test_an_all_reduce_job_names_all_reduce_alone() -> None:
    assert _words(_gloo_loop(("gloo:all_reduce", 7))) == (
        "collective communication (all-reduce) with nothing else running"
    )


def test_each_kind_is_named_the_most_time_first() -> None:
    words = _words(_gloo_loop(("gloo:barrier", 1), ("gloo:broadcast", 3), ("gloo:all_gather", 4)))
    assert words == (
        "collective communication (all-gather, broadcast, barrier) with nothing else running"
    )


def test_a_kind_with_little_of_the_time_is_not_named() -> None:
    # DDP's broadcast in its first steps: under 5% of the collective time
    words = _words(_gloo_loop(("gloo:all_reduce", 7), ("gloo:broadcast", 0.2)))
    assert "(all-reduce)" in words


def test_no_known_kind_names_none() -> None:
    words = _words(_gloo_loop(("gloo:custom_op", 7)))
    assert words == "collective communication with nothing else running"


@pytest.mark.parametrize(
    "fixture",
    [
        "cpu_only_gloo_rank34",
        "a100_nccl_rank0",  # ncclKernel_AllReduce_... kernels
        "mi300x_resnet_training_rank0",  # ncclDevKernel_Generic, launched in nccl:all_reduce
    ],
)
def test_real_traces_name_their_all_reduce(fixture: str) -> None:
    profile = fixture_profile(f"kineto/{fixture}.json.gz")
    summary = summarize_steps({"h": build_step_db(profile)})
    kinds = [kind for kind, _ in summary.limits.collectives]
    assert kinds[0] == "all_reduce"
    assert "all_gather" not in kinds
