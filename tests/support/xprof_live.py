"""XProf 2.24.2 (the test extra's `xprof`) run on an XSpace written here: its own outputs,
for golden tests on profiles built in code (`integration`: it imports XProf)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace

RUN = "2026_01_01_00_00_00"


def xprof_tool(builder: XSpaceBuilder, tool: str, folder: Path) -> Any:
    """XProf's answer for ``tool`` on the profile ``builder`` makes (written under
    ``folder``), parsed from its JSON."""
    from xprof.convert import raw_to_tool_data

    path = folder / "plugins" / "profile" / RUN / "host.xplane.pb"
    write_xspace(builder.build(), path)
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], tool, {})
    return json.loads(data.decode() if isinstance(data, bytes) else data)


def xprof_hosts_tool(builders: dict[str, XSpaceBuilder], tool: str, folder: Path) -> Any:
    """XProf's answer for ``tool`` on several hosts at once (its ALL_HOSTS: one
    ``<host>.xplane.pb`` per builder, in the order given), parsed from its JSON."""
    from xprof.convert import raw_to_tool_data

    run = folder / "plugins" / "profile" / RUN
    paths = []
    for host, builder in builders.items():
        paths.append(run / f"{host}.xplane.pb")
        write_xspace(builder.build(), paths[-1])
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(p) for p in paths], tool, {})
    return json.loads(data.decode() if isinstance(data, bytes) else data)


def step_rows(overview: Any) -> dict[str, dict[str, Any]]:
    """XProf's overview step-time graph: step name -> its row (``hostComputeTimeMs``...)."""
    table = overview[1]
    columns = [c["id"] for c in table["cols"]]
    return {
        row["c"][0]["v"]: dict(zip(columns, [c.get("v") for c in row["c"]], strict=True))
        for row in table["rows"]
    }
