"""The store computes each intermediate once however many threads ask, and a second analysis
thread (STEPSCOPE_THREADS=2) changes no result."""

from __future__ import annotations

import threading

import pytest

from stepscope.model import Profile
from stepscope.model.runs import single_file_run
from stepscope.tools import context, output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.fixtures import tf_xplane


def test_concurrent_askers_share_one_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second asker comes while the first one builds (the build goes on only once that
    asker waits for it: an event, not a sleep), and gets the first one's result."""
    run = single_file_run(str(tf_xplane("ctl_opt")))
    store = ProfileStore(use_cache=False)
    builds: list[int] = []
    started, waiting = threading.Event(), threading.Event()

    class Watched(threading.Event):  # the store's "being built" event, telling who waits
        def wait(self, timeout: float | None = None) -> bool:
            waiting.set()
            return super().wait(timeout)

    monkeypatch.setattr(context, "Event", Watched)

    def build(profile: Profile) -> int:
        builds.append(1)
        started.set()
        assert waiting.wait(60), "the second asker never waited for this build"
        return profile.n_events

    host = run.host_names[0]
    other = threading.Thread(target=lambda: store.intermediate(run, host, "slow", build))
    other.start()
    assert started.wait(60)
    assert store.intermediate(run, host, "slow", build) > 0
    other.join()
    assert builds == [1]


def test_a_failed_build_is_retried_by_the_next_asker() -> None:
    run = single_file_run(str(tf_xplane("ctl_opt")))
    store = ProfileStore(use_cache=False)
    host = run.host_names[0]

    def broken(profile: Profile) -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.intermediate(run, host, "x", broken)
    assert store.intermediate(run, host, "x", lambda p: 7) == 7


@pytest.mark.parametrize("fixture", ["ctl", "remote"])
def test_two_analysis_threads_give_the_same_pages(fixture: str) -> None:
    run = single_file_run(str(tf_xplane(fixture)))
    pages = []
    for threads in (1, 2):
        ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False, threads=threads))
        names = ("overview_page", "input_pipeline_analyzer", "op_stats")
        pages.append([output.to_json(get_tool(n).build(ctx)) for n in names])
    assert pages[0] == pages[1]


def test_background_work_runs_only_with_two_threads() -> None:
    ran: list[str] = []
    done = threading.Event()
    ProfileStore(threads=1).in_background(lambda: ran.append("one"))
    ProfileStore(threads=2).in_background(lambda: (ran.append("two"), done.set()))
    assert done.wait(10)
    assert ran == ["two"]
