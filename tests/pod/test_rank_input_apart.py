"""`rank_input.apart` follows its rule for every rank of a job, whatever the count: a rank is
input-bound on its own when its share is at least `MODERATE_INPUT`, `APART` times the other
ranks' median and `MODERATE_INPUT` points above it (decision 601). The rule is written here
plainly (each rank against the median of a list of the others); the module sorts the shares
once, so a job of 256 or 1024 ranks is not ranks² work."""

from __future__ import annotations

import random
import statistics

import pytest

from stepscope.stats.advice import MODERATE_INPUT
from stepscope.stats.rank_input import APART, RankInput, apart


def _by_the_rule(shares: list[RankInput]) -> tuple[list[str], list[str]]:
    alone = []
    for k, p in enumerate(shares):
        others = [q.percent for i, q in enumerate(shares) if i != k]
        median = statistics.median(others) if others else p.percent
        high = p.percent >= MODERATE_INPUT and p.percent - median >= MODERATE_INPUT
        if high and p.percent >= APART * median:
            alone.append(p)
    if len(alone) == len(shares):
        return [], [p.host for p in shares]
    ordered = sorted(alone, key=lambda p: (-p.percent, p.host))
    return [p.host for p in ordered], [p.host for p in shares if p not in alone]


@pytest.mark.parametrize("seed", range(40))
def test_each_rank_is_judged_against_the_others_median(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 4, 5, 8, 9, 16, 256])
    # repeated shares too: a rank's own share among the others' is left out once
    pool = [rng.choice([0.5, 2.0, 6.0, 12.0, 30.0]) for _ in range(4)]
    shares = [
        RankInput(f"vm.rank{r}", rng.choice(pool) if rng.random() < 0.5 else rng.uniform(0, 60), 1)
        for r in range(n)
    ]
    alone, rest = apart(shares)
    assert ([p.host for p in alone], [p.host for p in rest]) == _by_the_rule(shares)


def test_one_rank_of_256_waiting_is_named() -> None:
    shares = [RankInput(f"vm.rank{r}", 1.0 + (r % 7) / 10, 0.1) for r in range(256)]
    shares[37] = RankInput("vm.rank37", 30.0, 4.0)
    alone, rest = apart(shares)
    assert [p.host for p in alone] == ["vm.rank37"] and len(rest) == 255
