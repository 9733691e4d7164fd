"""The pod viewer page of a straggler job and of a run with a corrupt host, in Chromium: the
late rank and its steps are named, the heat map is drawn, the failed host is shown on every
ALL_HOSTS page while the others are analyzed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepscope.model import ALL_HOSTS
from stepscope.serve.app import RunningServer
from tests.pod.builders import cpu_pod, data_parallel_job, memory_pod
from tests.support.browser import goto, open_page, tool_json
from tests.support.serve import serving

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


@pytest.fixture(scope="module")
def pod_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("pod_logs")
    data_parallel_job(
        root / "job", input_ms=lambda rank, step: 6.0 if rank == 5 and 10 <= step <= 20 else 1.0
    )
    cpu_pod(root / "broken", 4, corrupt=(2,))
    memory_pod(root / "memory", 3, lambda host, step: (1 + host * step) << 20)
    with serving(root, tmp_path_factory.mktemp("pod_cache")) as running:
        yield running


def _run(server: RunningServer, prefix: str) -> str:
    import httpx

    runs = httpx.get(server.url + "api/runs").json()["runs"]
    return next(r["run"] for r in runs if r["run"].startswith(prefix))


def test_straggler_named_with_heat_map(browser: Any, pod_server: RunningServer) -> None:
    context, page, rec = open_page(browser, pod_server.url)
    goto(page, pod_server.url, "pod_viewer", _run(pod_server, "job"), ALL_HOSTS)
    items = page.eval_on_selector_all(".pod-stragglers li", "els => els.map(e => e.dataset.host)")
    assert items == ["rank5"]
    text = page.inner_text(".pod-stragglers")
    assert "steps 10-20" in text and "input" in text
    # the worker and its late steps said once (it read "rank5 — steps 10-20, input:
    # rank5 is late at steps 10-20 ...")
    assert text.count("10-20") == 1 and text.count("rank5") == 1, text
    assert page.eval_on_selector("canvas.pod-heat", "c => [c.width > 0, c.height > 0]") == [
        True,
        True,
    ]
    context.close()
    rec.check()


def test_a_held_jobs_overview_reads_in_parts(browser: Any, pod_server: RunningServer) -> None:
    """Decision 552: the straggler headline and the statement across the ranks on two lines,
    each advice's lead in bold and its fix on a line of its own, the texts unchanged."""
    context, page, rec = open_page(browser, pod_server.url)
    run = _run(pod_server, "job")
    goto(page, pod_server.url, "overview_page", run, ALL_HOSTS)
    data = tool_json(pod_server, "overview_page", run, ALL_HOSTS)
    headline = page.query_selector('[data-field="bound_by.headline"]')
    assert headline is not None and headline.text_content() == data["bound_by"]["headline"]
    assert headline.eval_on_selector(".across", "e => e.textContent").startswith(
        "Across the ranks: Bound by "
    )
    shown = page.eval_on_selector_all(
        "p.advice",
        """els => els.map((p) => [p.textContent, p.querySelector('.advice-lead')?.textContent,
            p.querySelector('.advice-fix')?.textContent])""",
    )
    assert [text for text, _lead, _fix in shown] == data["recommendation"]["details"]
    lead, fix = next((lead, fix) for text, lead, fix in shown if text.startswith("Straggler"))
    assert lead == "Straggler across hosts (medium):" and fix.startswith("Fix: The late rank ")
    context.close()
    rec.check()


@pytest.mark.parametrize("tool", ["overview_page", "pod_viewer", "op_stats", "diagnostics"])
def test_failed_host_shown_on_every_all_hosts_page(
    browser: Any,
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


def test_memory_peak_across_hosts(browser: Any, pod_server: RunningServer) -> None:
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


_VIEW = """() => {
  const v = window.stepscopeTrace;
  const hosts = v.structure.hosts;
  const lines = v.data ? [...new Set(v.data.line)] : [];
  return {
    bands: v.layout.bands.filter((b) => b.kind === 'host').map((b) => [b.label, b.closed]),
    hostsWithEvents: hosts.filter((h, k) => lines.some((l) => l >= h.line_base
      && (k + 1 === hosts.length || l < hosts[k + 1].line_base))).map((h) => h.name),
    starts: hosts.map((h) => h.start_ns),
    loading: v.root.dataset.loading,
    drawn: Number(v.root.dataset.drawn),
  };
}"""


def _view(page: Any) -> dict[str, Any]:
    page.wait_for_function(
        "() => window.stepscopeTrace && window.stepscopeTrace.root.dataset.loading === '0'"
        " && Number(window.stepscopeTrace.root.dataset.drawn) > 0",
        timeout=60_000,
    )
    return page.evaluate(_VIEW)  # type: ignore[no-any-return]


def test_trace_viewer_all_hosts_one_timeline(
    browser: Any,
    pod_server: RunningServer,
) -> None:
    from tests.support.browser import SHOTS

    context, page, rec = open_page(browser, pod_server.url)
    run = _run(pod_server, "job")
    goto(page, pod_server.url, "trace_viewer", run, ALL_HOSTS)
    page.wait_for_selector('.tv-pod[data-hosts="8"]')
    view = _view(page)
    # 8 hosts: the first open, the others collapsed to their band; only rank0's tracks fetched
    assert view["bands"] == [["rank0", False]] + [[f"rank{r}", True] for r in range(1, 8)]
    assert view["hostsWithEvents"] == ["rank0"]
    # wall clock: each rank's clock starts 7.78 ms after the previous one's (the job's clocks)
    assert view["starts"] == [r * 7_777_777 for r in range(8)]
    page.click("text=Expand all")
    page.wait_for_function(
        "() => { const v = window.stepscopeTrace; return v.data && v.root.dataset.loading === '0'"
        " && new Set(v.data.line).size > 3; }"
    )
    assert len(_view(page)["hostsWithEvents"]) > 1  # the tracks now in view, of several hosts
    page.screenshot(path=str(SHOTS / "trace_viewer_all_hosts.png"))
    # a click on a host band collapses it
    page.evaluate("() => { window.stepscopeTrace.scroller.scrollTop = 0; }")
    box = page.query_selector("canvas.tv-canvas").bounding_box()
    page.mouse.click(box["x"] + 40, box["y"] + 26 + 12)  # below the time axis: rank0's band
    assert _view(page)["bands"][0] == ["rank0", True]
    # aligned on profile starts instead
    page.select_option('[data-control="align"]', "start")
    page.wait_for_function("() => location.hash.includes('align=start')")
    page.wait_for_selector('.tv-pod[data-hosts="8"]')
    page.wait_for_function("() => window.stepscopeTrace.structure.align === 'start'")
    assert _view(page)["starts"] == [0] * 8
    # the host picker: two hosts
    page.click('[data-action="choose-hosts"]')
    page.click(".tv-host-picker button >> text=None")
    page.check('.tv-host-list input[value="rank2"]')
    page.check('.tv-host-list input[value="rank5"]')
    page.click('[data-action="apply-hosts"]')
    page.wait_for_selector('.tv-pod[data-hosts="2"]')
    assert "hosts=rank2%2Crank5" in page.evaluate("location.hash")
    assert [b[0] for b in _view(page)["bands"]] == ["rank2", "rank5"]
    context.close()
    rec.check()
