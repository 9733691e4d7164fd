"""The collective calls of a host are made where they can be used: by a worker analysing one
host of an ALL_HOSTS tool (the parent's straggler analysis reads them), not by a one-host run's
overview (no other host to compare with: issue #30's Kineto overview spent 15 ms on them)."""

from __future__ import annotations

from collections.abc import Iterable

from stepscope.executor import HostTask
from stepscope.model.runs import single_file_run
from stepscope.tools._fanout import SummaryArgs, host_summary
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.fixtures import tf_xplane


def _calls(names: Iterable[str]) -> list[str]:
    return [n for n in names if n.startswith("collective_calls")]


def test_a_one_host_run_makes_no_collective_calls() -> None:
    run = single_file_run(str(tf_xplane("ctl_opt")))
    store = ProfileStore(use_cache=False)
    get_tool("diagnostics").build(ToolContext(run, run.host_names[0], store))
    names = [name for _path, name in store.intermediates()]
    assert any(n.startswith("diagnostics") for n in names)  # the findings were made
    assert not _calls(names)


def test_a_worker_makes_its_hosts_share_of_the_straggler_analysis() -> None:
    run = single_file_run(str(tf_xplane("ctl_opt")))
    args = SummaryArgs(("diagnostics",), (), "", use_cache=False)
    summary = host_summary(HostTask(run.hosts[0], args))
    assert _calls(summary.values)
