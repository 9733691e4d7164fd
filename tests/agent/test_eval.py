"""An evaluation of the agent tools, without a model: questions an agent would ask of the
shared fixtures, the tool call it would make, and the answer computed independently (from
XProf's reference outputs, from the raw trace JSON, from the XSpace protobuf read by the
generated protobuf code), including questions the tools must refuse or answer "not in this
profile"."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")

from stepscope.cli.agent import capabilities as cap
from stepscope.cli.agent.workspace import Workspace, bounded
from stepscope.errors import StepscopeError
from tests.support.agent_logdir import CTL, CTL_OPT, GLOO, GPU, POD, make_logdir
from tests.support.fixtures import FIXTURES, tf_xplane


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = Workspace(make_logdir(tmp_path_factory.mktemp("logdir")))
    yield workspace
    workspace.close()


# ---- answers computed without stepscope's analysis ------------------------------------------
def xprof_summary(run: str) -> dict[str, str]:
    lines = (FIXTURES / "tf" / run / "xprof_reference" / "summary.txt").read_text().splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines) if v}


def xprof_top_host_op(run: str) -> tuple[str, str]:
    with gzip.open(FIXTURES / "tf" / run / "xprof_reference" / "framework_op_stats.json.gz") as f:
        table = json.load(f)[0]
    rows = [[c.get("v") for c in r["c"]] for r in table["rows"]]
    host = sorted((r for r in rows if r[1] == "Host" and r[2] != "IDLE"), key=lambda r: -r[7])
    return host[0][2], host[0][3]


def xspace_event_count(path: Path) -> int:
    from stepscope.xspace.proto import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def kineto_events(name: str) -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / "kineto" / name, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def top_kernel(name: str) -> str:
    totals: dict[str, float] = {}
    for e in kineto_events(name):
        if e.get("cat") == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    return max(totals, key=lambda k: totals[k])


# ---- the questions ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    text: str
    ask: Callable[[Workspace], Any]  # the tool call an agent would make
    check: Callable[[Any], None]  # the answer, against what was computed independently


def _steps_and_average(answer: Any) -> None:
    xprof = xprof_summary("ctl")
    steps = answer["steps"]
    assert len(steps) == 4  # XProf: "steps: 4" (input_pipeline_analyzer)
    average_ms = sum(s["duration_ns"] for s in steps) / len(steps) / 1e6
    assert average_ms == pytest.approx(float(xprof["steptime_ms_average"]), abs=0.05)


def _input_bound(answer: Any) -> None:
    assert "HIGHLY input-bound" in xprof_summary("ctl")["input_conclusion"]
    assert answer["input_bound"]["classification"] == "high"
    assert answer["bound_by"]["limits"][0]["key"] == "input"


def _events_per_host(answer: Any) -> None:
    expected = xspace_event_count(tf_xplane("ctl"))
    assert answer["rows"] == [["worker0", expected], ["worker1", expected]]


def _top_host_op(answer: Any) -> None:
    op_type, name = xprof_top_host_op("ctl")
    assert (answer["host_ops"][0]["type"], answer["host_ops"][0]["name"]) == (op_type, name)


def _top_kernel(answer: Any) -> None:
    assert answer["rows"][0]["kernel_name"] == top_kernel("a100_nccl_rank0.json.gz")


def _gloo_calls(answer: Any) -> None:
    expected = sum(
        1
        for e in kineto_events("cpu_only_gloo_rank34.json.gz")
        if e["name"] == "gloo:all_reduce" and e["dur"] > 0
    )
    assert answer["rows"] == [[expected]] and expected > 0


def _faster(answer: Any) -> None:
    before = float(xprof_summary("ctl")["steptime_ms_average"])
    after = float(xprof_summary("ctl_opt")["steptime_ms_average"])
    verdict = answer.split("Verdict:", 1)[1].splitlines()[0]
    found = re.search(r"([\d.]+) ms → ([\d.]+) ms mean per step", verdict)
    assert found, verdict
    assert float(found.group(1)) == pytest.approx(before, abs=0.05)  # XProf: 82.9 ms
    assert float(found.group(2)) == pytest.approx(after, abs=0.05)  # XProf: 17.7 ms
    assert verdict.startswith(" step time -")


def _not_in_profile(answer: Any) -> None:
    assert answer["answer"] == cap.NOT_IN_PROFILE and answer["why"]


def _no_kernels(answer: Any) -> None:
    from stepscope.xspace.proto import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(tf_xplane("ctl").read_bytes())
    assert not [p.name for p in space.planes if p.name.startswith("/device:GPU")]
    assert answer["rows"] == [[0]]


QUESTIONS = [
    Question(
        "How many steps did the TF loop profile, and what was the average step time?",
        lambda ws: cap.tool_page(ws, "overview", CTL),
        _steps_and_average,
    ),
    Question(
        "Is the TF loop input-bound?",
        lambda ws: cap.tool_page(ws, "overview", CTL),
        _input_bound,
    ),
    Question(
        "How many events does each host of the two-host run have?",
        lambda ws: cap.query(ws, POD, "select host, count(*) from events group by 1 order by 1"),
        _events_per_host,
    ),
    Question(
        "Which host op takes the most self time in the TF loop?",
        lambda ws: cap.op_stats(ws, CTL, top=1),
        _top_host_op,
    ),
    Question(
        "Which GPU kernel took the most time on the NCCL rank?",
        lambda ws: cap.kernel_stats(ws, GPU, "a100_nccl_rank0", top=1),
        _top_kernel,
    ),
    Question(
        "How many gloo all-reduces did the CPU rank run?",
        lambda ws: cap.query(
            ws, GLOO, "select count(*) from collectives", host="cpu_only_gloo_rank34"
        ),
        _gloo_calls,
    ),
    Question(
        "Did the optimized input pipeline make the steps faster?",
        lambda ws: cap.diff(ws, CTL, CTL_OPT),
        _faster,
    ),
    Question(
        "How many GPU kernels ran in the TF CPU loop?",
        lambda ws: cap.query(ws, CTL, "select count(*) from kernels"),
        _no_kernels,
    ),
    Question(
        "Which GPU kernel is slowest in the TF CPU loop?",
        lambda ws: cap.kernel_stats(ws, CTL),
        _not_in_profile,
    ),
    Question(
        "Which rank straggles in the one-host TF loop?",
        lambda ws: cap.tool_page(ws, "pod_viewer", CTL),
        _not_in_profile,
    ),
    Question(
        "What was the memory peak of the gloo rank?",
        lambda ws: cap.tool_page(ws, "memory_profile", GLOO, "cpu_only_gloo_rank34"),
        _not_in_profile,
    ),
]

REFUSED: list[tuple[str, Callable[[Workspace], Any], str]] = [
    (
        "read a file through SQL",
        lambda ws: cap.query(ws, CTL, "select * from read_csv('/etc/passwd')"),
        "not allowed",
    ),
    (
        "write a file through SQL",
        lambda ws: cap.query(ws, CTL, "copy events to '/tmp/out.csv'"),
        "COPY statements are not allowed",
    ),
    (
        "load an extension",
        lambda ws: cap.query(ws, CTL, "load httpfs"),
        "LOAD statements are not allowed",
    ),
    ("a run outside the log directory", lambda ws: cap.list_hosts(ws, "../.."), "no run '../..'"),
    (
        "a profile by absolute path",
        lambda ws: cap.tool_page(ws, "overview", str(tf_xplane("ctl"))),
        "never by a path",
    ),
    (
        "a host that is not in the run",
        lambda ws: cap.tool_page(ws, "overview", CTL, "/etc/passwd"),
        "has no host",
    ),
]


@pytest.mark.parametrize("question", QUESTIONS, ids=[q.text for q in QUESTIONS])
def test_question(ws: Workspace, question: Question) -> None:
    answer = question.ask(ws)
    question.check(answer)
    assert len(bounded(answer)) <= 40_000


@pytest.mark.parametrize(("what", "ask", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused(ws: Workspace, what: str, ask: Callable[[Workspace], Any], message: str) -> None:
    with pytest.raises(StepscopeError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ask(ws)


def test_the_missing_extra_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from stepscope.cli.main import main

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    assert main(["mcp", str(tmp_path)]) == 2
    assert "pip install 'stepscope[agent]'" in capsys.readouterr().err


def test_not_in_this_profile_says_what_the_profile_lacks(ws: Workspace) -> None:
    """The agent's "why" read the tool's description as the reason ("GPU kernel stats has
    nothing to show for run ...: Every GPU kernel per op: launch configuration, TensorCore
    use, time."); it says what the profile lacks and how to record it, as the CLI does."""
    from stepscope.tools.registry import get_tool

    why = cap.kernel_stats(ws, CTL)["why"]
    assert why.endswith(f"the profile lacks what it needs ({get_tool('kernel_stats').needs})")
    assert get_tool("kernel_stats").description not in why
    pod = cap.tool_page(ws, "pod_viewer", CTL)["why"]
    assert "several workers" in pod


def test_the_logdir_given_is_said_missing_or_not_a_directory(tmp_path: Path) -> None:
    """A mistyped log directory read "not a directory" (decision 612)."""
    with pytest.raises(StepscopeError, match="nope: no such directory; give the log directory"):
        Workspace(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StepscopeError, match="file: not a directory; give the log directory"):
        Workspace(tmp_path / "file")
