"""memory_profile at ALL_HOSTS: each host's peak and the peak across hosts (which host, which
step, how much), reduced from the per-host summaries the workers send back."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.executor import InlineExecutor
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.pod.builders import memory_pod
from tests.support.pod import tool_json

MB = 1 << 20


def _peak(host: int, step: int) -> int:
    # host 5 peaks at step 3 with 900 MB; every other host stays at 300-340 MB
    return 900 * MB if (host, step) == (5, 3) else (300 + 10 * step) * MB


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_pod(tmp_path_factory.mktemp("mem"), 8, _peak)


def test_peak_across_hosts_names_the_host_step_and_bytes(pod: Path, tmp_path: Path) -> None:
    data = tool_json(pod, "memory_profile", tmp_path, InlineExecutor())
    peaks = {p["allocator_kind"]: p for p in data["peaks_across_hosts"]}
    assert set(peaks) == {"GPU_*_bfc", "cpu"}  # every host's GPU compared, not GPU_5 alone
    gpu = peaks["GPU_*_bfc"]
    assert (gpu["host"], gpu["memory_id"], gpu["peak_step"]) == ("host5", "GPU_5_bfc", 3)
    assert gpu["peak_bytes"] == 900 * MB
    assert gpu["hosts"] == 8 and gpu["median_peak_bytes"] == 340 * MB
    assert gpu["terms"] == "tensorflow"
    # per host: each allocator's own peak (host 0's GPU peaks at its last step)
    rows = {(p["host"], p["memory_id"]): p for p in data["host_peaks"]}
    assert len(rows) == 16
    assert rows[("host0", "GPU_0_bfc")]["peak_bytes"] == 340 * MB
    assert rows[("host0", "GPU_0_bfc")]["peak_step"] == 4
    assert rows[("host3", "cpu")]["peak_bytes"] == 1024


def test_fanned_out_peaks_equal_the_in_process_reduction(pod: Path, tmp_path: Path) -> None:
    fanned = tool_json(pod, "memory_profile", tmp_path / "a", InlineExecutor())
    # every profile opened in this process, no per-host summaries
    ctx = ToolContext(open_run(str(pod)), ALL_HOSTS, ProfileStore(cache_dir=tmp_path / "b"))
    local = output.to_json(get_tool("memory_profile").build(ctx))
    assert fanned["peaks_across_hosts"] == local["peaks_across_hosts"]
    assert fanned["host_peaks"] == local["host_peaks"]
