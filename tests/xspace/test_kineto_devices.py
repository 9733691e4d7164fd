"""The Kineto import's device, vendor, thread, stream and time readers at their edges
(xspace/kineto/devices.py).

Each reader is what puts a trace's header and an event's fields on the profile: a GPU
plane's name, SM count and vendor, the host plane's rank, a host line's thread name, a
stream's line, an event's time. Issue #34's mutation run of the module showed which edges no
fixture reaches (a property list without ids, a vendor named in lower case, a stream written
"stream -3", a time at the int64 limit...); each case here is the answer a user sees.
"""

from __future__ import annotations

import math

import pytest

from stepscope.xspace.kineto.devices import (
    allocator_name,
    device_plane_stats,
    device_properties,
    device_vendor,
    distributed_stats,
    normalize_tid,
    stream_of,
    thread_line_name,
    trace_vendor,
    us_to_ns,
)


def test_device_properties_by_id_or_list_position() -> None:
    doc = {
        "deviceProperties": [
            {"id": 3, "name": "A"},
            "not a device",
            {"name": "B"},  # no id: its position
            {"id": "7", "name": "C"},  # an id that is not a number: its position
        ]
    }
    got = device_properties(doc)
    assert sorted(got) == [2, 3]
    assert got[2] == {"name": "B"}
    # position 3 holds "C", which replaces "A" (id 3) as the later entry
    assert got[3] == {"id": "7", "name": "C"}
    assert device_properties({"deviceProperties": {"id": 0}}) == {}
    assert device_properties({}) == {}


def test_device_properties_first_entry_without_id_is_device_0() -> None:
    assert device_properties({"deviceProperties": [{"name": "X"}, {"name": "Y"}]}) == {
        0: {"name": "X"},
        1: {"name": "Y"},
    }


@pytest.mark.parametrize(
    ("keys", "vendor"),
    [
        (("hip_runtime_version",), "AMD"),
        (("roctracer_version",), "AMD"),
        (("hip_driver_version",), "AMD"),
        (("cuda_runtime_version",), "Nvidia"),
        (("cupti_version",), "Nvidia"),
        (("cuda_driver_version",), "Nvidia"),
        (("cuda_runtime_version", "hip_runtime_version"), "AMD"),  # a ROCm build reports both
        (("schemaVersion",), ""),
    ],
)
def test_trace_vendor_from_the_runtime_versions(keys: tuple[str, ...], vendor: str) -> None:
    assert trace_vendor(dict.fromkeys(keys, 1)) == vendor


@pytest.mark.parametrize(
    ("name", "vendor"),
    [
        ("AMD Instinct MI300X", "AMD"),
        ("AMD MI250X", "AMD"),
        ("amd instinct mi250", "AMD"),
        ("Instinct MI210", "AMD"),
        ("Radeon RX 7900", "AMD"),
        ("NVIDIA H100 80GB HBM3", "Nvidia"),
        ("Tesla V100-SXM2-16GB", "Nvidia"),
        ("Quadro RTX 8000", "Nvidia"),
        ("Quadro P6000", "Nvidia"),
        ("GeForce GTX 1080", "Nvidia"),
        ("rtx a6000", "Nvidia"),
        ("Intel(R) Data Center GPU Max 1550", "Intel"),
        ("Some Accelerator", "fallback"),
    ],
)
def test_device_vendor_from_the_name(name: str, vendor: str) -> None:
    assert device_vendor(name, "fallback") == vendor


def test_device_plane_stats_rename_keep_and_drop() -> None:
    props = {
        "id": 0,
        "name": "NVIDIA A100-SXM4-40GB",
        "numSms": 108,
        "totalGlobalMem": 42314694656,
        "computeMajor": 8,
        "computeMinor": 0,
        "clockRate": 1410000,
        "warpSize": 32,
        "managedMemory": True,
        "unset": None,
        "uuids": [1, 2],
        "extra": {"a": 1},
    }
    stats = device_plane_stats(props, "AMD")
    assert stats == {
        "device_name": "NVIDIA A100-SXM4-40GB",
        "core_count": 108,
        "memory_size": 42314694656,
        "compute_cap_major": 8,
        "compute_cap_minor": 0,
        "clock_rate": 1410000,
        "warpSize": 32,
        "managedMemory": 1,
        "device_vendor": "Nvidia",  # the name wins over the header's runtime
    }
    assert type(stats["managedMemory"]) is int


def test_device_plane_stats_vendor_without_a_name() -> None:
    assert device_plane_stats(None, "AMD") == {"device_vendor": "AMD"}
    assert device_plane_stats({"numSms": 4}, "") == {"core_count": 4}
    assert device_plane_stats({"name": 7}, "Nvidia") == {
        "device_name": 7,
        "device_vendor": "Nvidia",
    }
    assert device_plane_stats({"name": "Mystery"}, "") == {"device_name": "Mystery"}
    # a name that says no vendor: the header's runtime does
    assert device_plane_stats({"name": "Mystery"}, "AMD") == {
        "device_name": "Mystery",
        "device_vendor": "AMD",
    }


def test_distributed_stats() -> None:
    doc = {
        "distributedInfo": {
            "rank": 3,
            "world_size": 8,
            "backend": "nccl",
            "ratio": 0.5,
            "flag": False,
            "pg_config": [{"pg_name": "0"}],
            "nested": {"a": 1},
            "none": None,
        }
    }
    stats = distributed_stats(doc)
    assert stats == {"rank": 3, "world_size": 8, "backend": "nccl", "ratio": 0.5, "flag": 0}
    assert type(stats["flag"]) is int
    assert distributed_stats({"distributedInfo": [1]}) == {}
    assert distributed_stats({}) == {}


@pytest.mark.parametrize(
    ("raw", "tid", "name"),
    [
        (None, 5, "thread 5"),
        ("", "7", "thread 7"),
        ("thread 123 (python3)", 123, "python3"),
        ("  thread 9 (pt_autograd_0)\n", 9, "pt_autograd_0"),
        ("thread 9 ()", 9, "thread 9 ()"),  # no name inside: the text as written
        ("thread x (python3)", 1, "thread x (python3)"),
        ("  main  ", 1, "main"),
    ],
)
def test_thread_line_name(raw: str | None, tid: object, name: str) -> None:
    assert thread_line_name(raw, tid) == name


@pytest.mark.parametrize(
    ("value", "stream"),
    [
        (7, 7),
        (0, 0),
        (True, None),
        ("7", 7),
        ("stream 7", 7),
        (" stream 12 ", 12),
        ("stream -3", -3),
        ("stream 7 x", None),
        ("cuda stream 7", 7),  # the last word
        ("stream X7", None),
        ("stream", None),
        (7.0, None),
        (None, None),
    ],
)
def test_stream_of(value: object, stream: int | None) -> None:
    assert stream_of(value) == stream


_LIMIT_US = (1 << 62) // 1000  # the last microsecond under XSpace's int64 picoseconds


@pytest.mark.parametrize(
    ("value", "ns"),
    [
        (1, 1000),
        (0, 0),
        (-2, -2000),
        (1.5, 1500),
        (1.999, 1999),
        (-1.5, -1500),
        (0.0015, 2),  # rounded to the nanosecond
        (1234567.0005, 1234567000 + round((1234567.0005 - 1234567) * 1000)),
        ("2.5", 2500),
        (" 3 ", 3000),
        ("x", None),
        (None, None),
        (True, None),
        ([1], None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (_LIMIT_US, _LIMIT_US * 1000),
        (-_LIMIT_US, -_LIMIT_US * 1000),
        (_LIMIT_US + 1, None),
        (-_LIMIT_US - 1, None),
        (1e300, None),
    ],
)
def test_us_to_ns(value: object, ns: int | None) -> None:
    got = us_to_ns(value)
    assert got == ns
    assert got is None or type(got) is int


@pytest.mark.parametrize(
    ("value", "tid"),
    [("25738", 25738), (" 12 ", 12), ("-3", "-3"), ("main", "main"), (5, 5), (None, None)],
)
def test_normalize_tid(value: object, tid: object) -> None:
    got = normalize_tid(value)
    assert got == tid and type(got) is type(tid)


@pytest.mark.parametrize(
    ("device_type", "device_id", "name"),
    [
        (1, 0, "GPU_0_bfc"),
        (6, 2, "GPU_2_bfc"),  # HIP
        (0, 0, "cpu"),
        (None, -1, "cpu"),
        (13, 0, "mps_0"),
        (2, 1, "mkldnn_1"),
        (20, 3, "privateuse1_3"),
        (99, 4, "device_type_99_4"),
    ],
)
def test_allocator_name(device_type: object, device_id: object, name: str) -> None:
    assert allocator_name(device_type, device_id) == name
