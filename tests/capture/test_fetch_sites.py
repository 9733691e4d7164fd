"""Which frames the loop entered for its next item (`stepscope.capture.fetch_sites`): read from
the caller's current instruction, as the sampler records it (``f_lasti``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import FrameType

from stepscope.capture.fetch_sites import FetchSites
from stepscope.capture.python_sampler import stack_text

SITES = FetchSites()
SEEN: list[tuple[str, bool]] = []


def _probe() -> None:
    """Record whether the caller's caller stands at a fetch site."""
    frame = sys._getframe(1)
    caller = frame.f_back
    assert caller is not None
    SEEN.append((frame.f_code.co_name, SITES.at(caller.f_code, caller.f_lasti)))


def _gen() -> Iterator[int]:
    while True:
        _probe()
        yield 1


class _It:
    def __iter__(self) -> _It:
        return self

    def __next__(self) -> int:
        _probe()
        return 1


def _load(i: int) -> int:
    _probe()
    return i


def _seen(run: object) -> list[bool]:
    """What the probes saw on the last of 30 runs: by then CPython has specialized the
    calls (3.11 calls a builtin such as `next` from its PRECALL then)."""
    for _ in range(30):
        SEEN.clear()
        run()  # type: ignore[operator]
    return [fetched for _, fetched in SEEN]


def test_a_for_statement_and_next_are_fetch_sites() -> None:
    def loop() -> None:
        g = _gen()
        for _ in g:
            break
        next(g)
        next(iter(g))
        next(g, None)
        for _ in map(_load, [1]):
            pass
        for _, _ in enumerate(_It()):
            break
        next(_It())
        _It().__next__()

    assert _seen(loop) == [True] * 8


def test_other_calls_are_not() -> None:
    def loop() -> None:
        _load(1)
        list(map(_load, [1]))
        [_load(x) for x in [1]]
        sum(x for x, _ in zip(_gen(), range(1), strict=False))

    # sum's generator expression drives the generator with its own `for`: a fetch site of
    # the expression's frame, not of the loop's (the expression is entered by sum's call)
    # (zip asks the generator twice: the second time to find range exhausted)
    assert _seen(loop) == [False, False, False, True, True]
    assert [name for name, _ in SEEN] == ["_load", "_load", "_load", "_gen", "_gen"]


def test_stack_text_marks_the_frames_entered_for_a_next_item() -> None:
    taken: list[tuple[tuple[object, int], int]] = []

    def gen() -> Iterator[int]:
        frame: FrameType | None = sys._getframe()
        while frame is not None:  # innermost first, as the sampler keeps it
            taken.append(((frame.f_code, frame.f_lineno), frame.f_lasti))
            frame = frame.f_back
        yield 1

    def loop() -> None:
        for _ in gen():
            break

    loop()
    stack = tuple(code_line for code_line, _ in taken)
    lastis = [lasti for _, lasti in taken]
    _, text, fetched = stack_text(stack, {}, lastis, FetchSites())  # type: ignore[arg-type]
    frames = text.split(";")
    assert frames[-1].startswith("gen (test_fetch_sites.py:")
    assert frames[-2].startswith("loop (test_fetch_sites.py:")
    assert fetched == str(len(frames) - 1)  # the generator, entered by loop's `for`
    assert stack_text(stack, {})[2] == ""  # type: ignore[arg-type]
