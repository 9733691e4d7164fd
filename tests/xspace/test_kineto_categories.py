"""Kineto categories and args at their edges (stepscope.xspace.kineto.categories): the
kernel_details text of odd launch configurations (fractions, large counts, numbers written as
text, dimensions that are not numbers), memcpy and memset names with parentheses or arrows
inside, categories that are not strings, renamed args holding text or a fraction, and the
64-bit limits. Each string is what the kernel stats table or the trace viewer shows."""

from __future__ import annotations

import pytest

from stepscope.xspace.kineto.categories import (
    Kind,
    classify,
    convert_args,
    kernel_details,
    memcpy_name,
    memset_details,
)

GRID = {"grid": [80, 2, 1], "block": [128, 4, 1]}


def test_launch_figures_are_integers_when_whole_else_six_digits() -> None:
    """Floats take the general path: whole values print as integers, however large; others
    with six significant digits, in exponent form when tiny."""
    odd = {**GRID, "registers per thread": 32.0, "shared memory": 1234567.0}
    assert kernel_details({**odd, "est. achieved occupancy %": 100 / 3}) == (
        "regs:32 static_shared:1234567 dynamic_shared:0 grid:80,2,1 block:128,4,1 occ_pct:33.3333"
    )
    assert kernel_details({**odd, "est. achieved occupancy %": 1.5e-05}).endswith(
        " occ_pct:1.5e-05"
    )


def test_launch_figures_given_as_text_or_past_float_precision() -> None:
    """A count written as text is read as a number; an integer past 2^53 keeps every digit."""
    text = {**GRID, "registers per thread": "40", "shared memory": (1 << 53) + 1}
    assert kernel_details(text) == (
        "regs:40 static_shared:9007199254740993 dynamic_shared:0 grid:80,2,1 block:128,4,1 "
        "occ_pct:0"
    )


def test_launch_dimensions_that_are_not_numbers_count_as_one() -> None:
    """Only the first three dimensions are read; one that is not a number (text, null)
    counts as 1, as a missing one does."""
    odd = {"grid": [80, 2, 1, 7], "block": ["128", None, 4]}
    assert kernel_details(odd) == (
        "regs:0 static_shared:0 dynamic_shared:0 grid:80,2,1 block:1,1,4 occ_pct:0"
    )


def test_known_categories_keep_their_kind_whatever_the_args() -> None:
    """A known category goes where the table says (old capitalised names normalised), even
    when its args name a stream and a device; a category that is not a string is unknown."""
    device_args = {"stream": 7, "device": 0}
    assert classify("Kernel", device_args) == (Kind.DEVICE, "kernel")
    assert classify("cuda_sync", device_args) == (Kind.SYNC, "cuda_sync")
    assert classify("cpu_op", device_args) == (Kind.HOST, "cpu_op")
    assert classify(["kernel"], {}) == (Kind.HOST, "['kernel']")


def test_renamed_args_holding_text_or_a_fraction_are_renamed() -> None:
    assert convert_args({"device": "0", "correlation": 1.5, "External id": "7"}) == {
        "device_id": "0",
        "correlation_id": 1.5,
        "external_id": "7",
    }


def test_the_least_int64_fits() -> None:
    assert convert_args({"offset": -(1 << 63)}) == {"offset": -(1 << 63)}
    with pytest.raises(OverflowError, match="does not fit 64 bits"):
        convert_args({"offset": -(1 << 63) - 1})


def test_memcpy_names_of_one_or_two_words() -> None:
    """``Memcpy`` alone says no direction (nor does a ``kind`` that is a list);
    ``Memcpy HtoD`` says one without source or destination kinds."""
    assert memcpy_name("Memcpy", {}) == ("MEMCPYOther", "", "")
    assert memcpy_name("Memcpy", {"kind": ["HtoD"]}) == ("MEMCPYOther", "", "")
    assert memcpy_name("Memcpy HtoD", {}) == ("MEMCPYHToD", "", "")


def test_memcpy_kinds_read_as_written_inside_the_first_parenthesis() -> None:
    """The kinds are what the first parenthesis holds, split at its first arrow; a
    parenthesis without an arrow names no kinds; the text is kept to its last letter."""
    assert memcpy_name("Memcpy HtoD (Pageable)", {}) == ("MEMCPYHToD", "", "")
    assert memcpy_name("Memcpy HtoD (Pinned (async) -> Device)", {}) == (
        "MEMCPYHToD",
        "pinned (async)",
        "device",
    )
    assert memcpy_name("Memcpy DtoD (Device -> Peer -> Device)", {}) == (
        "MEMCPYDToD",
        "device",
        "peer -> device",
    )
    assert memcpy_name("Memcpy DtoD (GFX -> BOX)", {})[1:] == ("gfx", "box")


def test_memset_kind_reads_the_first_parenthesis_to_its_last_letter() -> None:
    assert memset_details("Memset (Device (async))", {}) == "kind:device (async"
    assert memset_details("Memset (BOX)", {"bytes": 8}) == "num_bytes:8 kind:box"
