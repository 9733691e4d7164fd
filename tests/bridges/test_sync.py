"""Clock alignment from marker events (`stepscope.capture.bridges.sync`)."""

from __future__ import annotations

from stepscope.capture.bridges.sync import (
    SYNC_PREFIX,
    ClockSync,
    FoundMarkers,
    Marker,
    find_markers,
    find_markers_in_columns,
)
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.wire import decode_columns

DELTA = 6_500  # framework clock = perf_counter + 6.5 us, as measured for Kineto


def _sync_with(
    delta_at: dict[int, int], spread: int = 1_000
) -> tuple[ClockSync, dict[str, tuple[int, int]]]:
    """Markers at perf times 10 ms (batch 0) and 10 s (batch 1); framework stamps inside."""
    sync = ClockSync()
    stamps = {}
    for batch, base in ((0, 10_000_000), (1, 10_000_000_000)):
        for k in range(4):
            before = base + k * 10_000
            after = before + 2 * spread + k * 100  # brackets of uneven width
            name = f"{SYNC_PREFIX}{batch * 4 + k}"
            sync.markers.append(Marker(name, before, after, 42, batch))
            start = before + spread + delta_at[batch]  # the stamp sits inside the bracket
            stamps[name] = (start, start + 200)
    return sync, stamps


def test_constant_offset_is_found_within_the_bracket_width() -> None:
    sync, stamps = _sync_with({0: DELTA, 1: DELTA})
    clock, how = sync.clock_map(stamps)
    assert clock.rate == 0
    assert abs(clock(20_000_000 + DELTA) - 20_000_000) <= 1_000
    assert how.startswith("markers")


def test_drift_between_start_and_stop_is_corrected_linearly() -> None:
    sync, stamps = _sync_with({0: DELTA, 1: DELTA + 50_000})  # 50 us over 10 s
    clock, how = sync.clock_map(stamps)
    assert clock.rate != 0 and "drift" in how
    for perf in (10_000_000, 5_000_000_000, 10_000_000_000):
        framework = perf + DELTA + round(50_000 * (perf - 10_000_000) / 9_990_000_000)
        assert abs(clock(framework) - perf) <= 1_500


def test_without_markers_unix_time_is_assumed() -> None:
    sync = ClockSync()
    clock, how = sync.clock_map({})
    assert how.startswith("unix")
    assert clock(sync.wall_ns) == sync.perf_ns


def test_find_markers_reads_stamps_and_lines_and_nested_child() -> None:
    builder = XSpaceBuilder()
    host = builder.plane("/host:CPU")
    line = host.line(-77, "python")
    line.event(f"{SYNC_PREFIX}0", 1_000, 900)
    line.event("aten::empty", 1_300, 100)
    line.event("aten::mm", 5_000, 100)
    line.event(f"{SYNC_PREFIX}1", 8_000, 500)
    line.sort_events()
    plane = builder.build().planes[0]
    plain = find_markers(plane)
    assert plain.stamps == {f"{SYNC_PREFIX}0": (1_000, 1_900), f"{SYNC_PREFIX}1": (8_000, 8_500)}
    assert plain.lines == {f"{SYNC_PREFIX}0": -77, f"{SYNC_PREFIX}1": -77}
    nested = find_markers(plane, child="aten::empty")
    assert nested.stamps == {f"{SYNC_PREFIX}0": (1_300, 1_400)}  # marker 1 has no child
    # the same on raw columns (the PyTorch bridge's trace)
    raw = decode_columns(builder.build().SerializeToString())
    assert find_markers_in_columns(raw, "/host:CPU") == plain
    assert find_markers_in_columns(raw, "/host:CPU", child="aten::empty") == nested
    assert find_markers_in_columns(raw, "/device:GPU:0") == FoundMarkers()


def test_tsl_line_id_is_libstdcxx_thread_id_hash() -> None:
    """TSL's host line ids: std::hash<std::thread::id> of pthread_self (values from
    libstdc++'s _Hash_bytes and a JAX 0.10 trace)."""
    from stepscope.capture.bridges.tsl import tsl_line_id

    assert tsl_line_id(140247457483648) == 5284633107639872940
    assert tsl_line_id(140246781904576) == -6641785872524348926
