"""ALL_HOSTS tools run through the fan-out (the pod tests and the executor tests)."""

from __future__ import annotations

import json
from pathlib import Path

from stepscope.model import ALL_HOSTS
from stepscope.tools import output
from stepscope.tools._fanout import build_tool
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.runs import whole_folder

CPU_TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats", "pod_viewer", "diagnostics")
GPU_TOOLS = (*CPU_TOOLS, "kernel_stats", "memory_profile")


def tool_json(run_dir: Path, tool: str, cache: Path, executor: object | None) -> dict:
    store = ProfileStore(use_cache=True, cache_dir=cache, executor=executor)  # type: ignore[arg-type]
    ctx = ToolContext(whole_folder(run_dir), ALL_HOSTS, store)
    return json.loads(json.dumps(output.to_json(build_tool(ctx, get_tool(tool))), default=str))
