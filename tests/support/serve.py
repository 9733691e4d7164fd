"""The server tests' fake tools, small log directories and WSGI client (tests/serve and any
test that runs the server in process)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolOption, ToolSpec

RUN_A = "a/2026_01_01_00_00_00"
RUN_B = "b/2026_01_02_00_00_00"


@dataclass
class FakeResult:
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data

    def to_csv(self) -> str:
        return "name,value\n" + "".join(f"{k},{v}\n" for k, v in self.data.items() if k != "hosts")


@dataclass
class FakeTools:
    """A registry of two tools that count how often they are built."""

    builds: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def build(self, ctx: ToolContext) -> FakeResult:
        self.builds.append((ctx.run.name, ctx.host, dict(ctx.options)))
        size = sum(ctx.run.host(h).size_bytes for h in ctx.hosts)
        return FakeResult(
            {
                "run": ctx.run.name,
                "host": ctx.host,
                "hosts": ctx.hosts,
                "size_bytes": size,
                "idle": ctx.option("include_idle"),
                "padding": "x" * 2000,
                "nan": float("nan"),
            }
        )

    def specs(self) -> tuple[ToolSpec, ...]:
        return (
            ToolSpec(
                "fake_stats",
                "Fake stats",
                "counts bytes",
                self.build,
                formats=("json", "csv"),
                options=(ToolOption("include_idle", "count idle time", "true", ("true", "false")),),
                order=1,
            ),
            ToolSpec(
                "fake_single",
                "Fake single-host",
                "one host only",
                self.build,
                multi_host=False,
                order=2,
            ),
        )


def make_logdir(root: Path, fixtures_dir: Path, runs: tuple[str, ...] = (RUN_A,)) -> Path:
    """A log directory with copies of the small ctl fixture as runs (hosts "vm" and "w1")."""
    source = next((fixtures_dir / "tf" / "ctl_opt").rglob("*.xplane.pb"))
    for name in runs:
        add_run(root, source, name)
    return root


def add_run(root: Path, source: Path, name: str) -> None:
    top, session = name.rsplit("/", 1)
    run_dir = root / top / "plugins" / "profile" / session
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, run_dir / "vm.xplane.pb")
    shutil.copy(source, run_dir / "w1.xplane.pb")


def wsgi_get(
    app: WsgiApp, path: str, query: str = "", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One GET through the WSGI adapter, as a WSGI server would call it."""
    environ: dict[str, Any] = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query}
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    captured: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        captured["status"] = int(status.split()[0])
        captured["headers"] = {k.lower(): v for k, v in response_headers}

    body = b"".join(app(environ, start_response))
    return captured["status"], captured["headers"], body


@contextlib.contextmanager
def serving(logdir: Path, cache_dir: Path) -> Iterator[RunningServer]:
    """`stepscope serve` of ``logdir`` on a thread of this process (a free port on 127.0.0.1),
    its store in ``cache_dir``; stopped when the block ends."""
    state = ServerState(logdir, cache_dir=cache_dir)
    running = start_server(state.logdir, state=state)
    try:
        yield running
    finally:
        running.stop()


def add_tf_run(logdir: Path, xplane: Path, project: str, run: str, host_file: str) -> Path:
    """A copy of the TensorFlow profile ``xplane`` as run ``project/plugins/profile/run`` of
    ``logdir`` (fixtures are never written to); its run directory."""
    run_dir = logdir / project / "plugins" / "profile" / run
    run_dir.mkdir(parents=True)
    shutil.copy(xplane, run_dir / host_file)
    return run_dir
