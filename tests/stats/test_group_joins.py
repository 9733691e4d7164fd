"""The producer/consumer joins of the step groups (`stats.steps.groups`): the one-sort join
of pair keys gives the same edges as numbering the pairs and joining the numbers (decision
202), in some order: the labels they carry are minima, the same in any order."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.steps.groups import _join, _join_pairs, _pair_codes


def _numbered(
    src_pair: tuple[np.ndarray, np.ndarray],
    src: np.ndarray,
    dst_pair: tuple[np.ndarray, np.ndarray],
    dst: np.ndarray,
    limit: int,
) -> tuple[np.ndarray, np.ndarray]:
    src_code, dst_code = _pair_codes(src_pair, dst_pair)
    return _join(src_code, src, dst_code, dst, limit=limit)


def _edges(got: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    return sorted(zip(got[0].tolist(), got[1].tolist(), strict=True))


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("limit", [0, 2, 3])
@pytest.mark.parametrize("types", [3, 1 << 40])  # pair types a radix sort takes, and wider
def test_the_one_sort_join_is_the_numbered_join(seed: int, limit: int, types: int) -> None:
    rng = np.random.default_rng(seed)
    n_src, n_dst = int(rng.integers(0, 300)), int(rng.integers(0, 300))
    wide = np.array([-(1 << 62), -5, 0, 7, 1 << 62], dtype=np.int64)  # ids use the whole range
    kinds = np.array([-types, 0, types], dtype=np.int64)

    def pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
        return kinds[rng.integers(0, 3, n)], wide[rng.integers(0, len(wide), n)]

    src_pair, dst_pair = pairs(n_src), pairs(n_dst)
    src = np.sort(rng.choice(1000, n_src, replace=False)).astype(np.int64)
    dst = np.sort(rng.choice(1000, n_dst, replace=False)).astype(np.int64)
    got = _join_pairs(src_pair, src, dst_pair, dst, limit=limit)
    want = _numbered(src_pair, src, dst_pair, dst, limit)
    assert _edges(got) == _edges(want)
    assert got[0].dtype == np.int64 and got[1].dtype == np.int64


def test_keys_one_apart_past_2_to_the_53_are_two_keys() -> None:
    """Keys are int64 (context types and ids, step ids, iteration numbers): both parts of a
    pair one apart near 2**62, where float64 would make them equal, are different keys; a
    key that only a source has, the largest of all, counts in the limit's bins too."""
    big = np.int64(1 << 62)
    # the last source's key is the largest and has no destination
    src_pair = (np.array([big, big + 1, 0, big + 1]), np.array([0, 0, big + 1, 5]))
    dst_pair = (np.array([big + 1, big, 0, 0]), np.array([0, 0, big, big + 1]))
    src, dst = np.array([10, 11, 12, 13]), np.array([20, 21, 22, 23])
    for limit in (0, 64):
        got = _join_pairs(src_pair, src, dst_pair, dst, limit=limit)
        pairs = sorted(zip(got[0].tolist(), got[1].tolist(), strict=True))
        assert pairs == [(10, 21), (11, 20), (12, 23)]
    src_code, dst_code = _pair_codes(src_pair, dst_pair)
    assert len(set(src_code.tolist())) == 4
    assert dst_code[0] == src_code[1] and dst_code[1] == src_code[0]
    assert dst_code[2] not in src_code and dst_code[3] == src_code[2]
