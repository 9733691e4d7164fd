"""The headline of a loop fed by a queue names what its steps wait on: the thread filling the
queue and its heaviest traced work, as the advice does (decision 1028), on the real capture of
decision 1011 (`test_queue_producer.py`).

Before: the headline said "getting the next batch from a queue another thread or process
fills, get (queue.py) ...: the stack sampler saw the loop there, the trace times it" and
nothing of the producer, which only the advice named; and where input was not the headline's
limit, its line told the loop to prepare batches "in a background thread or process for a
Python loader": the loop already had one.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.input.producer import Producer
from stepscope.tools import _analysis as analysis
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool

CAPTURE = Path(__file__).parents[1] / "data" / "jax_queue_prefetch.xplane.pb"


def _ctx(tmp_path: Path) -> ToolContext:
    run_dir = tmp_path / "run" / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    shutil.copy(CAPTURE, run_dir / "host.xplane.pb")
    run = open_run(str(tmp_path / "run"))
    return ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})


def test_the_headline_names_the_thread_filling_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    page = output.to_json(get_tool("overview_page").build(_ctx(tmp_path)))
    headline = page["bound_by"]["headline"]
    assert headline.startswith("Bound by input")
    assert "the steps wait there on the thread filling it" in headline
    assert "traced only in shard_args x80" in headline
    advice = " ".join(page["recommendation"]["details"])
    assert "the thread filling it is traced only in shard_args x80" in advice  # the same work


def test_an_input_line_under_another_headline_gives_the_queues_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input graded under another limit (an un-jitted update's loop): the producer's fix."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    ctx = _ctx(tmp_path)
    producer = analysis.queue_producer(ctx)
    assert producer is not None
    summary = replace(analysis.steps(ctx), producer=producer.headline())
    bound = bound_by(summary)
    others = tuple(limit for limit in bound.limits if limit.key != "input")
    first = replace(others[0], percent=99.0)
    inputs = tuple(limit for limit in bound.limits if limit.key == "input")
    moved = replace(bound, limits=(first, *inputs, *others[1:]))
    [line] = [d for d in recommend(summary, moved).details if "is input:" in d]
    assert "the steps wait there on the thread filling it" in line
    assert "The thread or process filling the queue makes batches slower" in line
    assert "Prepare batches ahead" not in line and "background thread" not in line


def test_the_heaviest_of_several_traced_works_and_a_native_id() -> None:
    two = Producer(27497, ("shard_args", "convert"), (74, 40), 900_000, 60, (600_000, 300_000))
    words = two.headline()
    assert "(native id 27497, as threading.get_native_id() gives it)" in words
    assert "its heaviest traced work shard_args x74 (0.60 ms of its 0.90 ms traced per step)" in (
        words
    )
    assert ";" not in words  # the headline's parts are divided by ";"
    hashed = replace(two, thread_id=-2182115368840483794)
    assert "native id" not in hashed.headline()
