"""Step markers at their edges (`stepscope.stats.steps.markers`): a device's Steps line and
the numbers each source gives its steps."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stepscope.errors import StepscopeError
from stepscope.model import Profile
from stepscope.model.profile import Stats
from stepscope.model.strings import StringTable
from stepscope.stats.steps.markers import find_step_markers
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.wire import KIND_BYTES, KIND_STR
from tests.support.analysis import MS, build


def _tpu(stats: list[dict[str, int]]) -> XSpaceBuilder:
    builder = XSpaceBuilder("tpu")
    plane = builder.plane("/device:TPU:0")
    steps, ops = plane.line(1, "Steps"), plane.line(2, "XLA Ops")
    for k, s in enumerate(stats):
        steps.event("train", k * 5 * MS, 5 * MS, s)
        ops.event("fusion", k * 5 * MS, 4 * MS)
    return builder


def test_a_device_steps_line_numbers_its_steps_by_group_then_step_number() -> None:
    markers = find_step_markers(
        build(_tpu([{"group_id": 7 + k, "step_num": 100 + k} for k in range(3)]))
    )
    assert markers.source == "device"
    assert markers.description == "3 steps from the 'Steps' line of /device:TPU:0"
    assert markers.event.dtype == np.int64 and markers.event.tolist() == [0, 1, 2]
    assert markers.step_num.dtype == np.int64 and markers.step_num.tolist() == [7, 8, 9]
    assert markers.names == ("train 7", "train 8", "train 9")
    assert markers.use_groups is False and markers.drop_incomplete is True
    # without group ids, the step numbers; without either, the positions
    markers = find_step_markers(build(_tpu([{"step_num": 100 + k} for k in range(3)])))
    assert markers.step_num.tolist() == [100, 101, 102]
    assert find_step_markers(build(_tpu([{}, {}, {}]))).step_num.tolist() == [0, 1, 2]


def _host_steps(stats: list[dict[str, int]], name: str = "train") -> XSpaceBuilder:
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "main")
    for k, s in enumerate(stats):
        main.event(name.format(k=k), k * 10 * MS, 9 * MS, s)
    return builder


def test_marker_steps_take_any_root_level_and_may_number_by_iteration() -> None:
    markers = find_step_markers(
        build(_host_steps([{"_r": 1, "iter_num": 40 + k} for k in range(3)]))
    )
    assert markers.source == "marker"
    assert markers.step_num.dtype == np.int64 and markers.step_num.tolist() == [40, 41, 42]
    assert markers.names == ("train 40", "train 41", "train 42")
    # XProf 2.24.2 makes steps of _r=0 and of a text _r too (test_xprof_live).
    for level in (0, "1"):
        zero = find_step_markers(
            build(_host_steps([{"_r": level, "step_num": k} for k in range(3)]))
        )
        assert zero.source == "marker" and zero.names == ("train 0", "train 1", "train 2")


def test_profiler_steps_keep_their_names_and_follow_links() -> None:
    markers = find_step_markers(build(_host_steps([{}, {}, {}], "ProfilerStep#{k}")))
    assert markers.source == "profiler_step"
    assert markers.description == "3 PyTorch ProfilerStep#N annotations"
    assert markers.names == ("ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2")
    assert markers.use_groups is True and markers.drop_incomplete is False


def test_keras_batches_need_a_step_number() -> None:
    stats = [{"step_num": 5}, {}, {"step_num": 7}]
    markers = find_step_markers(build(_host_steps(stats, "Profiled batch")))
    assert markers.source == "keras_batch"
    assert markers.description == (
        "2 Keras 'Profiled batch' traces (they have no _r, so XProf finds no step in them)"
    )
    assert markers.step_num.tolist() == [5, 7]
    assert markers.use_groups is True and markers.drop_incomplete is False


def test_what_no_steps_and_an_unknown_source_say() -> None:
    builder = XSpaceBuilder("host")
    builder.plane("/host:CPU").line(1, "main").event("setup", 0, MS)
    profile = build(builder)
    assert find_step_markers(profile).description == (
        "no step markers (_r/step_num, ProfilerStep#N, Profiled batch, device Steps line), "
        "no inference framework's per-batch call (vLLM execute_model, Hugging Face generate) "
        "and no repeating top-level event from which to infer steps"
    )
    assert find_step_markers(profile, "device").description == "no steps from source 'device'"
    with pytest.raises(StepscopeError) as error:
        find_step_markers(profile, "epochs")
    assert str(error.value) == (
        "unknown step source 'epochs'; use auto or one of marker, profiler_step, keras_batch, "
        "device, serving, inferred"
    )


def _with_first_string(profile: Profile, text: str) -> Profile:
    """``profile`` with ``text`` as string id 0 (ids 0 and ``text``'s swapped in every
    column): a string table need not start with the empty string."""
    swap = np.arange(len(profile.strings))
    k = profile.strings.id_of(text)
    swap[[0, k]] = swap[[k, 0]]
    strings = [profile.strings[int(i)] for i in swap]

    def stats(table: Stats) -> Stats:
        value = table.value.copy()
        text_valued = np.isin(table.kind, (KIND_STR, KIND_BYTES))
        value[text_valued] = swap[value[text_valued]]
        return Stats(swap[table.key].astype(table.key.dtype), table.kind, value)

    return dataclasses.replace(
        profile,
        strings=StringTable(strings),
        name=swap[profile.name].astype(profile.name.dtype),
        meta_name=swap[profile.meta_name].astype(profile.meta_name.dtype),
        meta_display_name=swap[profile.meta_display_name].astype(profile.meta_display_name.dtype),
        stats=stats(profile.stats),
        meta_stats=stats(profile.meta_stats),
    )


def test_an_implicit_root_named_by_the_first_string_is_still_no_marker() -> None:
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(3):
        main.event("FunctionRun", k * 10 * MS, MS, {"_r": 1})
        main.event("train", k * 10 * MS, 8 * MS, {"_r": 1, "step_num": k})
    profile = _with_first_string(build(builder), "FunctionRun")
    assert profile.strings.id_of("FunctionRun") == 0
    markers = find_step_markers(profile)
    assert markers.source == "marker"
    assert markers.description == "3 step markers ('train' with _r and step_num)"
    assert markers.names == ("train 0", "train 1", "train 2")
