"""stepscope.data: instrumented generators, lists, DataLoaders and stages in tf.data naming."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT
from tests.support.capture import events, load_run, named


def _pipeline_events(profile: Any) -> list[dict[str, Any]]:
    return [e for e in events(profile) if e["name"].startswith(("Iterator", "IteratorGetNext"))]


def test_generator_fetches_inside_steps_are_input_events(tmp_path: Path) -> None:
    def gen() -> Iterator[int]:
        for i in range(3):
            time.sleep(0.001)
            yield i

    stepscope.start(tmp_path)
    batches = stepscope.data.instrument(gen(), name="Reader")
    got = []
    for s in range(3):
        with stepscope.step(s):
            got.append(next(batches))
    with pytest.raises(StopIteration):
        next(batches)
    profile = load_run(stepscope.stop())
    assert got == [0, 1, 2]
    get_next = named(profile, "IteratorGetNextOp::DoCompute")
    readers = named(profile, "Iterator::Reader")
    assert len(get_next) == len(readers) == 4  # the call that raised StopIteration included
    assert [e["stats"]["iter_num"] for e in get_next] == [0, 1, 2, 3]
    reader_id = readers[0]["stats"]["id"]
    assert all(e["stats"] == {"id": reader_id} for e in readers[:3])
    # the call that found the pass over says so, on both events (decision 636)
    assert readers[3]["stats"] == {"id": reader_id, END_OF_SEQUENCE_STAT: 1}
    assert get_next[3]["stats"][END_OF_SEQUENCE_STAT] == 1
    for wrapper, reader in zip(get_next, readers, strict=True):
        assert wrapper["start_ns"] <= reader["start_ns"] <= reader["end_ns"] <= wrapper["end_ns"]
        assert reader["dur_ns"] >= 1_000_000 or wrapper is get_next[-1]
    steps = named(profile, "train")
    for step, wrapper in zip(steps, get_next[:3], strict=True):
        assert step["start_ns"] <= wrapper["start_ns"] and wrapper["end_ns"] <= step["end_ns"]


def test_nested_stages_are_child_iterators_with_parent_ids(tmp_path: Path) -> None:
    @stepscope.data.stage("Decode")
    def decode(x: int) -> int:
        return x * 10

    def batch(source: Iterator[int], size: int) -> Iterator[list[int]]:
        while True:
            items = [decode(next(source)) for _ in range(size)]
            yield items

    mapped = stepscope.data.instrument(iter(range(100)), name="Map")
    batches = stepscope.data.instrument(batch(iter(mapped), 2), name="Batch")
    stepscope.start(tmp_path)
    first = next(batches)
    profile = load_run(stepscope.stop())
    assert first == [0, 10]
    names = [e["name"] for e in _pipeline_events(profile)]
    assert names == [
        "IteratorGetNextOp::DoCompute",
        "Iterator::Batch",
        "Iterator::Batch::Map",
        "Iterator::Batch::Decode",
        "Iterator::Batch::Map",
        "Iterator::Batch::Decode",
    ]
    by_name = {e["name"]: e["stats"] for e in _pipeline_events(profile)}
    batch_id = by_name["Iterator::Batch"]["id"]
    assert by_name["Iterator::Batch::Map"]["parent_id"] == batch_id
    assert by_name["Iterator::Batch::Decode"]["parent_id"] == batch_id
    assert (
        len(
            {
                batch_id,
                by_name["Iterator::Batch::Map"]["id"],
                by_name["Iterator::Batch::Decode"]["id"],
            }
        )
        == 3
    )


def test_list_is_reiterable_and_len_passes_through(tmp_path: Path) -> None:
    data = stepscope.data.instrument([1, 2, 3])
    assert len(data) == 3
    stepscope.start(tmp_path)
    assert list(data) == [1, 2, 3]
    assert list(data) == [1, 2, 3]  # a second epoch
    profile = load_run(stepscope.stop())
    lists = named(profile, "Iterator::List")
    assert len(lists) == 8  # 3 items + StopIteration, twice


def test_inactive_instrumentation_only_passes_items_through(tmp_path: Path) -> None:
    data = stepscope.data.instrument(range(5), name="Range")
    assert list(data) == [0, 1, 2, 3, 4]
    stepscope.start(tmp_path)
    profile = load_run(stepscope.stop())
    assert events(profile) == []  # (the stack sampler's lines aside)


def test_invalid_stage_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="::"):
        stepscope.data.instrument([], name="A::B")
    with pytest.raises(ValueError, match="::"):
        stepscope.data.stage("A::B")


@pytest.mark.integration
def test_pytorch_dataloader(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.arange(12, dtype=torch.float32).reshape(6, 2))
    loader = stepscope.data.instrument(DataLoader(dataset, batch_size=2), name="Loader")
    assert len(loader) == 3
    assert loader.batch_size == 2  # attributes pass through
    stepscope.start(tmp_path)
    for s, (batch,) in enumerate(loader):
        with stepscope.step(s):
            batch.sum()
    profile = load_run(stepscope.stop())
    assert len(named(profile, "Iterator::Loader")) == 4
    assert len(named(profile, "IteratorGetNextOp::DoCompute")) == 4
