"""Input waits rank by rank, where a job's ranks differ (decision 601).

A job's breakdown is its ranks' mean (`stepscope.stats.job_steps`): one rank of four waiting
on its input 40% of its step time and three waiting 2% read "11% of the step time is input"
and "MODERATELY input-bound", and with eight ranks under 5% ("NOT input-bound"), while the
fix (more loader workers, another shard, a less busy host) belongs to that one rank. A rank
is input-bound on its own (`apart`) when its input is at least `MODERATE_INPUT` of its own
step time and the other ranks' median share is under half of it, `MODERATE_INPUT` points or
more below: ranks that mostly wait alike are what the mean says.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace

from stepscope.records import record
from stepscope.stats.advice import HIGH_INPUT, MODERATE_INPUT, Recommendation
from stepscope.stats.input.ahead import input_ahead
from stepscope.stats.steps.breakdown import StepDb

APART = 2.0  # the rank's input share at least this many times the median rank's


@record
class RankInput:
    host: str
    percent: float  # its input limit over its step time (all its steps)
    ms_per_step: float


def input_shares(ranks: Sequence[tuple[str, StepDb]]) -> list[RankInput]:
    """Each rank's input (its `input` limit, a loop's wait on its Python batch iterator
    included) as a share of its own step time, for the ranks with steps."""
    out = []
    for host, db in ranks:
        if not db.n_steps or int(db.dur_ns.sum()) <= 0:
            continue
        ns = float(db.limit_ns()["input"].sum())
        out.append(RankInput(host, 100.0 * ns / float(db.dur_ns.sum()), ns / db.n_steps / 1e6))
    return out


def apart(shares: Sequence[RankInput]) -> tuple[list[RankInput], list[RankInput]]:
    """(the ranks input-bound on their own, most input first; the other ranks): a rank whose
    share is at least `MODERATE_INPUT`, `APART` times the other ranks' median and
    `MODERATE_INPUT` points above it; none when every rank is."""
    ordered = sorted(p.percent for p in shares)  # once: each rank's median comes from it
    flags = [_alone(p.percent, _median_without(ordered, p.percent)) for p in shares]
    if all(flags):
        return [], list(shares)
    alone = [p for p, flag in zip(shares, flags, strict=True) if flag]
    rest = [p for p, flag in zip(shares, flags, strict=True) if not flag]
    return sorted(alone, key=lambda p: (-p.percent, p.host)), rest


def _alone(percent: float, median: float) -> bool:
    return (
        percent >= MODERATE_INPUT
        and percent >= APART * median
        and percent - median >= MODERATE_INPUT
    )


def _median_without(ordered: Sequence[float], value: float) -> float:
    """The median of the sorted ``ordered`` with one ``value`` (one of them) left out, without
    copying them (one rank's against the others', for every rank of a job); ``value`` when
    it is the only one."""
    n = len(ordered) - 1
    if not n:
        return value
    gone = bisect.bisect_left(ordered, value)

    def at(i: int) -> float:  # the i-th of the others
        return ordered[i if i < gone else i + 1]

    half = n // 2
    return at(half) if n % 2 else (at(half - 1) + at(half)) / 2


def _level(percent: float) -> str:
    return "HIGHLY" if percent >= HIGH_INPUT else "MODERATELY"


def _others(rest: Sequence[RankInput]) -> str:
    lo, hi = min(p.percent for p in rest), max(p.percent for p in rest)
    figures = f"{lo:.1f}%" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}%"
    return f"the other {'rank' if len(rest) == 1 else f'{len(rest)} ranks'} {figures}"


def _who(alone: Sequence[RankInput], named: bool = True) -> str:
    """ "vm.rank2 is input-bound: it waits for input 40.1% of its step time (12.03 ms per
    step)"; several: "vm.rank1 and vm.rank2 are input-bound: they wait for input 40.1% and
    35.0% of their step time (12.03, 10.50 ms per step)"; not ``named``: from "it waits"."""
    if len(alone) == 1:
        p = alone[0]
        return (
            (f"{p.host} is input-bound: " if named else "")
            + f"it waits for input {p.percent:.1f}% of its step time "
            f"({p.ms_per_step:.2f} ms per step)"
        )
    names = ", ".join(p.host for p in alone[:-1]) + f" and {alone[-1].host}"
    shares = ", ".join(f"{p.percent:.1f}%" for p in alone[:-1]) + f" and {alone[-1].percent:.1f}%"
    per_step = ", ".join(f"{p.ms_per_step:.2f}" for p in alone)
    return (
        f"{names} are input-bound: " if named else ""
    ) + f"they wait for input {shares} of their step time ({per_step} ms per step)"


def verdict_note(alone: Sequence[RankInput], rest: Sequence[RankInput]) -> str:
    """A sentence after the job's input verdict (the ranks' mean): who is input-bound alone,
    in the verdict's words."""
    if not alone or not rest:
        return ""
    level = f" {_level(alone[0].percent)} input-bound"
    who = _who(alone).replace(" input-bound", level, 1)
    return f" That is the ranks' mean; {who}, {_others(rest)}."


def advice(
    alone: Sequence[RankInput],
    rest: Sequence[RankInput],
    mean_percent: float,
    framework: str,
    has_device: bool = False,
) -> str:
    """The job's input advice when some ranks wait on their input and the others do not:
    who, their share and the others', and what to change on them."""
    if not alone or not rest:
        return ""
    one = len(alone) == 1
    target = alone[0].host if one else ", ".join(p.host for p in alone)
    mean = f"(the steps' {mean_percent:.1f}% is the ranks' mean)"
    slower = (
        f"look for what makes {'its' if one else 'their'} input slower than the other ranks' "
        "(the shard of the data, the storage, other processes on the same cores)."
    )
    ahead = input_ahead(framework, has_device)
    high = "HIGH: " if alone[0].percent >= HIGH_INPUT else ""
    if max(p.percent for p in rest) >= MODERATE_INPUT:  # the others wait too, less
        return (
            f"{high}Input, most of all on {target}: {_who(alone, named=False)}, "
            f"{_others(rest)} {mean}. "
            f"Prepare batches ahead of the step on every rank ({ahead}) and {slower}"
        )
    return (
        f"{high}Only {_who(alone)}, {_others(rest)} {mean}. On {target}, prepare batches "
        f"ahead of the step ({ahead}) and {slower}"
    )


# The advice's line for the input limit (`advice._LIMIT_ADVICE["input"]`): the ranks' mean
_MEAN_INPUT_LINE = re.compile(r"^(HIGH: )?\d+(\.\d+)?% of the step time( once warm)? is input: ")


def by_rank(recommendation: Recommendation, line: str) -> Recommendation:
    """The advice with ``line`` (`advice`) in place of its line for the ranks' mean input
    (or added after the limits' lines when the mean is under the line's threshold)."""
    if not line:
        return recommendation
    details = list(recommendation.details)
    at = next((k for k, d in enumerate(details) if _MEAN_INPUT_LINE.match(d)), None)
    if at is None:
        details.append(line)
    else:
        details[at] = line
    return replace(recommendation, details=tuple(details))
