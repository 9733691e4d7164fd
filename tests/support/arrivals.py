"""Ranks whose collective calls are given in code (arrival, exit, sequence number, run-up per
category), for the straggler rules' tests: every figure of an answer can be worked out by
hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from stepscope.stats.collective_calls import CollectiveCalls
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.type_sweep import N_TYPES
from stepscope.stats.stragglers_types import Rank

MS = 1_000_000
STEP = 20 * MS  # every rank's steps: [s * STEP, (s + 1) * STEP) on its own clock


@dataclass(frozen=True)
class Call:
    step: int  # row of the rank's steps, -1 outside them
    arrive: int  # ns on the job's clock (the rank's clock offset is added)
    exit: int
    lane: int = 0
    seq: int = -1
    runup: dict[str, int] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)  # traced events started in the run-up


def _steps(n: int, clock: int, numbers: Sequence[int] | None, step_ns: int) -> StepDb:
    nums = np.asarray(range(n) if numbers is None else numbers, np.int64)
    return StepDb(
        "test",
        "",
        "window",
        False,
        nums,
        (),
        clock + np.arange(len(nums), dtype=np.int64) * step_ns,
        np.full(len(nums), step_ns, np.int64),
        np.zeros((len(nums), N_TYPES), np.int64),
        len(nums),
        0,
        0,
    )


def rank(
    host: str,
    calls: Sequence[Call] | None,
    n_steps: int,
    clock: int = 0,
    lanes: tuple[str, ...] = ("all_reduce",),
    numbers: Sequence[int] | None = None,
    step_ns: int = STEP,
) -> Rank:
    """A rank with ``n_steps`` steps of ``step_ns`` from ``clock`` (numbered 0, 1... unless
    ``numbers``) and these calls (None: its calls were not recorded)."""
    steps = _steps(n_steps, clock, numbers, step_ns)
    if calls is None:
        return Rank(host, steps, None)
    ordinal = np.zeros(len(calls), np.int64)
    seen: dict[tuple[int, int], int] = {}
    for k, c in enumerate(calls):  # position among the calls of its (step, lane)
        ordinal[k] = seen.get((c.step, c.lane), 0)
        seen[(c.step, c.lane)] = int(ordinal[k]) + 1
    runup = np.zeros((len(calls), len(CATEGORY_NAMES)), np.int64)
    ops = np.zeros((len(calls), len(CATEGORY_NAMES)), np.int64)
    for k, c in enumerate(calls):
        for name, ns in c.runup.items():
            runup[k, CATEGORY_NAMES.index(name)] = ns
        for name, count in c.ops.items():
            ops[k, CATEGORY_NAMES.index(name)] = count
    return Rank(
        host,
        steps,
        CollectiveCalls(
            "host collectives",
            lanes,
            np.array([c.lane for c in calls], np.int32),
            np.array([c.seq for c in calls], np.int64),
            np.array([c.step for c in calls], np.int64),
            ordinal,
            np.array([c.arrive for c in calls], np.int64) + clock,
            np.array([c.exit for c in calls], np.int64) + clock,
            runup,
            runup_ops=ops,
        ),
    )


def job(
    n_ranks: int,
    n_steps: int,
    ready: Callable[[int, int], int],
    end: int = 15 * MS,
    runup: Callable[[int, int], dict[str, int]] | None = None,
    hosts: Sequence[str] | None = None,
    clock: Callable[[int], int] = lambda r: 0,
    exit_: Callable[[int, int], int] | None = None,
    seq: bool = False,
    step_ns: int = STEP,
    extra: Callable[[int], list[Call]] = lambda r: [],
    ops: Callable[[int, int], dict[str, int]] | None = None,
) -> list[Rank]:
    """One all-reduce a step: rank ``r`` arrives ``ready(r, s)`` ns into step ``s`` and leaves
    at ``end`` (or ``exit_(r, s)``); its run-up is ``runup(r, s)`` (default: host compute
    until it is ready), with ``ops(r, s)`` traced events started in it (default none);
    sequence numbers 0, 1... when ``seq``; then ``extra(r)``."""
    names = hosts or [f"r{r}" for r in range(n_ranks)]
    out = []
    for r in range(n_ranks):
        calls = [
            Call(
                s,
                s * step_ns + ready(r, s),
                s * step_ns + (exit_(r, s) if exit_ else end),
                seq=s if seq else -1,
                runup=runup(r, s) if runup else {"host_compute": ready(r, s)},
                ops=ops(r, s) if ops else {},
            )
            for s in range(n_steps)
        ]
        out.append(rank(names[r], calls + extra(r), n_steps, clock(r), step_ns=step_ns))
    return out
