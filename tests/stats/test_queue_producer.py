"""The report of a loop fed by a queue speaks of the queue and of the thread filling it
(decision 1024), on the real capture of decision 1011 (`test_queue_prefetch_capture.py`).

The producer thread there makes each batch with NumPy (untraced), then ``jax.device_put``s it
(``shard_args`` > ``DevicePutWithSharding``, traced on its own thread) and puts it in the
queue; the loop waits in ``q.get()`` for 80% of its warm iterations (its own clock).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.model.load import open_file
from stepscope.stats.input.producer import queue_producer
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool

CAPTURE = Path(__file__).parents[1] / "data" / "jax_queue_prefetch.xplane.pb"


def _tool(tmp_path: Path, name: str) -> dict:
    run_dir = tmp_path / "run" / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    shutil.copy(CAPTURE, run_dir / "host.xplane.pb")
    run = open_run(str(tmp_path / "run"))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    return output.to_json(get_tool(name).build(ctx))


def test_the_producer_is_the_thread_whose_puts_end_in_the_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the loop's thread, nor XLA's client pool whose copies the put starts: the program's
    own thread, its top-level traced work a put per array (x and y: 80 in 40 steps)."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    profile = open_file(CAPTURE, use_cache=False)
    db = build_step_db(profile)
    found = queue_producer(profile, db)
    assert found is not None
    assert found.names[0] == "shard_args" and found.counts[0] == 80
    assert found.thread_id != profile.lines[db.lines[0]].id
    assert 0.5e6 < found.ns_per_step < 2e6  # 37.9 ms of puts over 40 steps
    assert "is traced only in shard_args x80" in found.describe()


def test_the_overview_advises_about_the_producer_not_an_iterator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the advice named no producer's work, and the steps' note said "at its batch's
    fetch from the loop's Python iterator" for a ``q.get()``."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    found = _tool(tmp_path, "overview_page")
    text = " ".join(found["recommendation"]["details"]) + found["step_source_detail"]
    assert "Python iterator" not in text
    assert "at its wait for its batch in a queue another thread or process fills" in text
    assert "the loop waits in get (queue.py) for its next batch: the thread filling it" in text
    assert "traced only in shard_args x80" in text


def test_the_input_pipeline_page_says_queue_not_iterator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "The loop waits on its Python iterator get (queue.py) ...: make the next batches
    while the step computes, in worker processes (... a multiprocessing pool filling a
    queue)": the loop already takes them from a queue."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    found = _tool(tmp_path, "input_pipeline_analyzer")
    first = found["recommendations"][0]
    assert first.startswith(
        "The loop waits in get (queue.py) for a queue another thread or process fills"
    )
    assert "Python iterator" not in first and "shard_args x80" in first


def test_a_straggler_waiting_in_a_queue_is_not_said_to_pull_an_iterator() -> None:
    """Before: "its loop getting each batch from the Python iterator get (queue.py)"."""
    from stepscope.stats.stragglers_types import fetch_words

    words = fetch_words("get (queue.py)")
    assert "Python iterator" not in words
    assert words.startswith("its loop waiting for each batch in a queue another thread")
    assert "Python iterator batches (train.py)" in fetch_words("batches (train.py)")
