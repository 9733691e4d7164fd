"""The pod viewer page of a straggler job and of a run with a corrupt host, in Chromium: the
late rank and its steps are named, the heat map is drawn, the failed host is shown on every
ALL_HOSTS page while the others are analyzed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepscope.model import ALL_HOSTS
from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.state import ServerState
from tests.pod.builders import cpu_pod, data_parallel_job, memory_pod
from tests.support.browser import browser, goto, open_page  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def pod_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("pod_logs")
    data_parallel_job(
        root / "job", input_ms=lambda rank, step: 6.0 if rank == 5 and 10 <= step <= 20 else 1.0
    )
    cpu_pod(root / "broken", 4, corrupt=(2,))
    memory_pod(root / "memory", 3, lambda host, step: (1 + host * step) << 20)
    state = ServerState(root, cache_dir=tmp_path_factory.mktemp("pod_cache"))
    running = start_server(state.logdir, state=state)
    yield running
    running.stop()


def _run(server: RunningServer, prefix: str) -> str:
    import httpx

    runs = httpx.get(server.url + "api/runs").json()["runs"]
    return next(r["run"] for r in runs if r["run"].startswith(prefix))


def test_straggler_named_with_heat_map(browser: Any, pod_server: RunningServer) -> None:  # noqa: F811
    context, page, rec = open_page(browser, pod_server.url)
    goto(page, pod_server.url, "pod_viewer", _run(pod_server, "job"), ALL_HOSTS)
    items = page.eval_on_selector_all(".pod-stragglers li", "els => els.map(e => e.dataset.host)")
    assert items == ["rank5"]
    text = page.inner_text(".pod-stragglers")
    assert "steps 10-20" in text and "input" in text
    assert page.eval_on_selector("canvas.pod-heat", "c => [c.width > 0, c.height > 0]") == [
        True,
        True,
    ]
    context.close()
    rec.check()


@pytest.mark.parametrize("tool", ["overview_page", "pod_viewer", "op_stats", "diagnostics"])
def test_failed_host_shown_on_every_all_hosts_page(
    browser: Any,  # noqa: F811
    pod_server: RunningServer,
    tool: str,
) -> None:
    context, page, rec = open_page(browser, pod_server.url)
    goto(page, pod_server.url, tool, _run(pod_server, "broken"), ALL_HOSTS)
    notes = page.inner_text(".tool-page")
    assert "Host host002 left out" in notes and "not a valid XSpace" in notes
    assert page.query_selector(f'.tool-page[data-tool="{tool}"]') is not None
    context.close()
    rec.check()


def test_memory_peak_across_hosts(browser: Any, pod_server: RunningServer) -> None:  # noqa: F811
    context, page, rec = open_page(browser, pod_server.url)
    goto(page, pod_server.url, "memory_profile", _run(pod_server, "memory"), ALL_HOSTS)
    rows = page.eval_on_selector_all(
        'table[data-table="peaks_across_hosts"] tbody tr',
        "els => els.map(e => Object.fromEntries([...e.querySelectorAll('td')]"
        ".map(td => [td.dataset.key, td.dataset.value])))",
    )
    gpu = next(r for r in rows if r["allocator_kind"] == "GPU_*_bfc")
    assert (gpu["host"], gpu["memory_id"], gpu["peak_step"]) == ("host2", "GPU_2_bfc", "4")
    assert gpu["peak_bytes"] == str(9 << 20)  # 1 + 2 x 4 MiB: host 2 at its last step
    hosts = page.eval_on_selector_all('table[data-table="host_peaks"] tbody tr', "e => e.length")
    assert hosts == 6  # 3 hosts x (GPU, cpu)
    assert "Peak across hosts" in page.inner_text(".tool-page")
    context.close()
    rec.check()
