"""`stepscope mcp LOGDIR` answers a scripted client session over stdio, the protocol spoken by
hand here (newline-delimited JSON-RPC): initialize, list the tools, call each tool."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.agent.workspace import MAX_CHARS
from tests.support.agent_logdir import CTL, CTL_OPT, GPU, POD, make_logdir
from tests.support.fixtures import REPO

# A server process. The SDK runs in that process only: asking whether it is installed, not
# importing it, keeps its 0.8 s of CPU out of every collection (decision 695).
pytestmark = [
    pytest.mark.untimed,
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="pip install mcp"),
]


class Session:
    def __init__(self, logdir: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "stepscope.cli.main", "mcp", str(logdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        if notify:
            return None
        reply = json.loads(self.process.stdout.readline())
        assert reply["id"] == self.next_id, reply
        return reply

    def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        reply = self.send("tools/call", {"name": tool, "arguments": arguments})
        result = reply["result"]
        (content,) = result["content"]
        return result["isError"], content["text"]

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    s = Session(make_logdir(tmp_path_factory.mktemp("logdir")))
    reply = s.send(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "stepscope-test", "version": "0"},
        },
    )
    assert reply["result"]["serverInfo"]["name"] == "stepscope"
    s.send("notifications/initialized", notify=True)
    yield s
    assert s.close() == 0


EXPECTED_TOOLS = {
    "list_runs",
    "list_hosts",
    "overview",
    "input_pipeline",
    "op_stats",
    "kernel_stats",
    "memory_profile",
    "pod_viewer",
    "diagnostics",
    "report",
    "diff",
    "sql_tables",
    "query",
}


def test_tools_are_listed_read_only(session: Session) -> None:
    tools = session.send("tools/list")["result"]["tools"]
    assert {t["name"] for t in tools} == EXPECTED_TOOLS
    for tool in tools:
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["description"]


CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("list_runs", {}, CTL),
    ("list_hosts", {"run": GPU}, "a100_nccl_rank0"),
    ("overview", {"run": CTL}, "Bound by input"),
    ("input_pipeline", {"run": CTL}, "input"),
    ("op_stats", {"run": CTL, "top": 3}, "host_ops"),
    ("kernel_stats", {"run": GPU, "host": "a100_nccl_rank0", "top": 3}, "ncclKernel"),
    ("memory_profile", {"run": CTL}, "peak_bytes"),
    ("pod_viewer", {"run": POD}, "worker1"),
    ("diagnostics", {"run": CTL}, "input"),
    ("report", {"run": CTL}, "Recommendation"),
    ("diff", {"baseline": CTL, "candidate": CTL_OPT}, "Verdict"),
    ("sql_tables", {}, "collectives"),
    ("query", {"run": CTL, "sql": "select count(*) as n from events"}, "10246"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), CALLS, ids=[c[0] for c in CALLS])
def test_each_tool_answers(
    session: Session, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    is_error, text = session.call(tool, **arguments)
    assert not is_error, text
    assert expected in text
    assert len(text) <= MAX_CHARS + 100


def test_answers_are_bounded(session: Session) -> None:
    is_error, text = session.call("query", run=CTL, sql="select * from events", max_rows=100000)
    assert not is_error and len(text) <= MAX_CHARS + 100
    data = json.loads(text)
    assert data["truncated"] is True and len(data["rows"]) <= 200


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("list_hosts", {"run": "../../etc"}, "no run '../../etc' under the log directory"),
        ("overview", {"run": "/etc/passwd"}, "never by a path"),
        ("overview", {"run": CTL, "host": "../x"}, "has no host"),
        ("query", {"run": CTL, "sql": "select * from read_csv('/etc/passwd')"}, "not allowed"),
        ("query", {"run": CTL, "sql": "copy events to '/tmp/x.csv'"}, "COPY statements"),
    ],
)
def test_refusals_are_errors_with_a_message(
    session: Session, tool: str, arguments: dict[str, Any], message: str
) -> None:
    is_error, text = session.call(tool, **arguments)
    assert is_error and message in text
    assert "Traceback" not in text
