"""Kineto event args as the XSpace stats the kernel and memcpy tools read
(stepscope.xspace.kineto.categories): XProf's ``kernel_details`` text, memcpy names and
details. These strings are what the kernel stats table and the trace viewer's details show,
so they are checked whole, for Kineto's usual args and for the odd ones real traces carry
(floats, short or missing launch dimensions, AMD's ``kind`` arg, sizes absent)."""

from __future__ import annotations

import pytest

from stepscope.xspace.kineto.categories import (
    Kind,
    classify,
    convert_args,
    kernel_details,
    memcpy_details,
    memcpy_name,
    memset_details,
)

USUAL = {
    "registers per thread": 32,
    "shared memory": 4096,
    "est. achieved occupancy %": 50,
    "grid": [80, 2, 1],
    "block": [128, 4, 1],
}


def test_kinetos_usual_launch_configuration() -> None:
    assert kernel_details(USUAL) == (
        "regs:32 static_shared:4096 dynamic_shared:0 grid:80,2,1 block:128,4,1 occ_pct:50"
    )


def test_odd_launch_configurations_keep_every_field() -> None:
    """A float occupancy, a two-dimensional grid, a block given as text: the same fields,
    integers printed without a fraction, missing dimensions 1."""
    odd = {**USUAL, "est. achieved occupancy %": 37.5, "grid": [80, 2], "block": "128"}
    assert kernel_details(odd) == (
        "regs:32 static_shared:4096 dynamic_shared:0 grid:80,2,1 block:1,1,1 occ_pct:37.5"
    )
    floats = {**USUAL, "shared memory": 4096.0, "block": [128, 4, 2]}
    assert kernel_details(floats) == (
        "regs:32 static_shared:4096 dynamic_shared:0 grid:80,2,1 block:128,4,2 occ_pct:50"
    )
    only_grid = {"grid": [1, 1, 1]}
    assert kernel_details(only_grid) == (
        "regs:0 static_shared:0 dynamic_shared:0 grid:1,1,1 block:1,1,1 occ_pct:0"
    )
    assert kernel_details({"registers per thread": 32}) is None  # no launch configuration


def test_memcpy_names_sources_and_sizes() -> None:
    assert memcpy_name("Memcpy HtoD (Pageable -> Device)", {}) == (
        "MEMCPYHToD",
        "pageable",
        "device",
    )
    assert memcpy_name("Memcpy AtoD (Array -> Device)", {}) == ("MEMCPYDToD", "array", "device")
    # AMD: the direction in the `kind` arg; an unknown one stays visible as Other
    assert memcpy_name("hipMemcpyAsync", {"kind": "DtoH"}) == ("MEMCPYDToH", "", "")
    assert memcpy_name("Memcpy XtoY", {"kind": 3}) == ("MEMCPYOther", "", "")
    assert memcpy_details({"bytes": 1024}, "pageable", "device") == (
        "num_bytes:1024 kind_src:pageable kind_dst:device"
    )
    assert memcpy_details({"bytes": 0}, "", "") == "num_bytes:0"
    assert memcpy_details({}, "", "device") == "kind_dst:device"  # no size given
    assert memset_details("Memset (Device)", {"bytes": 64}) == "num_bytes:64 kind:device"


def test_an_unknown_category_goes_by_its_args() -> None:
    """A category no table knows (a newer Kineto, another vendor): on a device when its args
    name both a stream and a device, else on the host; the category's name is kept."""
    assert classify("gpu_new_thing", {"stream": 7, "device": 0}) == (Kind.DEVICE, "gpu_new_thing")
    assert classify("gpu_new_thing", {"stream": 7}) == (Kind.HOST, "gpu_new_thing")
    assert classify(None, {}) == (Kind.HOST, "unknown")
    assert classify(3, None) == (Kind.HOST, "3")


def test_args_become_stats_under_xprofs_names() -> None:
    stats = convert_args(
        {
            "correlation": 12,
            "device": 0,
            "Ev Idx": 5,
            "stream": 7,
            "big": (1 << 64) - 1,  # an unsigned 64-bit value fits
            "ok": True,
            "none": None,
            "dims": [[8, 3], []],
        }
    )
    assert stats == {
        "correlation_id": 12,
        "device_id": 0,
        "stream": 7,
        "big": (1 << 64) - 1,
        "ok": 1,
        "dims": "[[8, 3], []]",
    }
    with pytest.raises(OverflowError, match="'huge' = 18446744073709551616 does not fit"):
        convert_args({"huge": 1 << 64})


def test_renamed_args_keep_their_new_name_whatever_their_type() -> None:
    """Kineto's device / context / correlation become XProf's *_id stats as ints, and as
    JSON text when a trace writes a list or an object there."""
    assert convert_args({"device": [0, 1], "context": {"a": 1}, "correlation": 5}) == {
        "device_id": "[0, 1]",
        "context_id": '{"a": 1}',
        "correlation_id": 5,
    }


def test_a_block_without_a_grid_is_still_a_launch_configuration() -> None:
    assert kernel_details({"block": [128, 1, 1]}) == (
        "regs:0 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:0"
    )


def test_a_launch_configuration_without_registers_shared_memory_or_occupancy() -> None:
    assert kernel_details({"grid": [1, 2, 3], "block": [4, 5, 6]}) == (
        "regs:0 static_shared:0 dynamic_shared:0 grid:1,2,3 block:4,5,6 occ_pct:0"
    )
    # a bool is not a count (JSON true), and the renames hold for ints and bools alike
    assert convert_args({"device": True, "correlation": 7}) == {"device_id": 1, "correlation_id": 7}


# (raw JSON list text, whether it is already json.dumps's text of its value)
_LIST_TEXTS = [
    (b"[]", True),
    (b"[[1, 3, 224, 224], [64, 3, 7, 7], []]", True),
    (b'["float", "", "c10::BFloat16"]', True),
    (b'["", "15", "False", "[1, 2]"]', True),
    (b"[-12, 0, 123456789012345678]", True),
    (b"[1234567890123456789]", False),  # 19 digits: decoded, whatever the decoder makes
    (b"[-0]", False),  # decodes to 0
    (b"[1,2]", False),
    (b"[ 1]", False),
    (b"[1.5, 1e5]", False),
    (b'["a\\"b", "a\\\\b"]', False),
    (b'["\xc3\xa9"]', False),  # json.dumps writes \u00e9
    (b'["\x7f"]', False),
    (b"[true, null]", False),
    (b'[{"a": 1}]', False),
]


@pytest.mark.parametrize(("raw", "as_written"), _LIST_TEXTS)
def test_list_args_in_dumps_form_are_taken_as_written(raw: bytes, as_written: bool) -> None:
    """Decision 441: a list arg whose text is what json.dumps writes for its value is used as
    it is, not decoded and written again; any other text goes through json.dumps."""
    import json

    from stepscope.xspace.kineto.categories import json_text_of_raw
    from stepscope.xspace.kineto.decode import loads

    text = json_text_of_raw(raw)
    assert (text is not None) is as_written
    if text is not None:
        assert text == json.dumps(loads(raw))
