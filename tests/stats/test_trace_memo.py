"""The trace index's memo of full-view answers: the last few, by key."""

from __future__ import annotations

from stepscope.stats.trace_index.memo import MemoAnswers


def test_the_memo_keeps_the_last_answers_and_computes_the_rest() -> None:
    memo = MemoAnswers()
    computed: list[int] = []

    def answer(k: int) -> tuple[bytes, str]:
        return memo.get(k, lambda: (computed.append(k), (str(k).encode(), "t"))[1])

    for k in range(memo.size):
        assert answer(k) == (str(k).encode(), "t")
    assert answer(0) == (b"0", "t") and computed == list(range(memo.size))  # kept
    answer(memo.size)  # one more: the least recently used (1) goes
    assert len(memo) == memo.size
    answer(0)
    answer(1)
    assert computed == [*range(memo.size), memo.size, 1]
