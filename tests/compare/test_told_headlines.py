"""`stepscope summary`, `stepscope diff` and the Compare page say what bounds the steps in the
overview's words, from one source (`_analysis.told_steps`, decision 1060): decisions 1028 and
1029 changed the report's headline for a loop fed by a queue (the thread filling it) and for
eager TensorFlow ops (their time per step), and the summary, the diff and the compare page
kept the old words ("a queue another thread or process fills" and nothing of the producer;
no eager share at all).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp
from tests.support.cpu_readings import sampled_loop
from tests.support.serve import wsgi_get
from tests.support.tf_mixed_loop import mixed_space

QUEUE = Path(__file__).parents[1] / "data" / "jax_queue_prefetch.xplane.pb"
SESSION = "2026_01_01_00_00_00"


def _run(root: Path, name: str, files: dict[str, bytes]) -> Path:
    run_dir = root / name / "plugins" / "profile" / SESSION
    run_dir.mkdir(parents=True)
    for host, data in files.items():
        (run_dir / f"{host}.xplane.pb").write_bytes(data)
    return run_dir


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main([*argv, "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def _told(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The overview's headline and once-warm headline ("" without a warm-up)."""
    page = _cli(["tool", str(run), "overview_page", "--json", "-q"], capsys)
    steady = page.get("steady_state") or {}
    return page["bound_by"]["headline"], (steady.get("bound_by") or {}).get("headline", "")


def _compare(root: Path, name: str) -> dict[str, Any]:
    app = WsgiApp(build_routes(ServerState(root, use_cache=False)))
    status, _, body = wsgi_get(app, "/api/compare", f"base={name}/{SESSION}&cand={name}/{SESSION}")
    assert status == 200
    data: dict[str, Any] = json.loads(body)
    return data


def _says_alike(root: Path, name: str, run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The overview's headline, checked word for word against the summary's, the diff's and
    the Compare page's (and the once-warm ones likewise)."""
    headline, warm = _told(run, capsys)
    saved = _cli(["summary", str(run)], capsys)
    assert (saved["bound_by"], saved["bound_by_once_warm"]) == (headline, warm)
    diffed = _cli(["diff", str(run), str(run), "--json"], capsys)
    for side in ("baseline", "candidate"):
        assert (diffed[side]["bound_by"], diffed[side]["bound_by_once_warm"]) == (headline, warm)
    page = _compare(root, name)
    assert (page["baseline"]["bound_by"], page["baseline"]["bound_by_once_warm"]) == (
        headline,
        warm,
    )
    return headline + " " + warm


def test_a_queue_fed_loop_is_told_of_its_producer_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The capture of decision 1011: a JAX loop taking its batches from a queue.Queue that a
    thread fills with jax.device_put."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = _run(tmp_path / "logs", "q", {"host": QUEUE.read_bytes()})
    said = _says_alike(tmp_path / "logs", "q", run, capsys)
    assert "the steps wait there on the thread filling it" in said
    assert "traced only in shard_args x80" in said


def test_eager_ops_are_told_per_step_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tests.support.tf_mixed_loop`'s loop: eager ops beside a tf.function's calls."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    space = mixed_space(("Cast", "RealDiv", "Sub"), steps=6)
    run = _run(tmp_path / "logs", "e", {"h": space.SerializeToString()})
    said = _says_alike(tmp_path / "logs", "e", run, capsys)
    assert "ran eagerly, one op at a time from the Python thread" in said
    assert " ms step, " in said and " ms of the mean " in said  # per step (decision 1029)


def test_a_wait_for_a_core_is_said_first_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tests.support.cpu_readings`' sampled loop whose steps' thread is runnable off its core
    the last 30 ms of each 50-52 ms step, 59% of their time (decision 1063): the overview says
    it before the parts, and so do the others."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = _run(tmp_path / "logs", "w", {"h": sampled_loop(30, True).SerializeToString()})
    said = _says_alike(tmp_path / "logs", "w", run, capsys)
    assert said.startswith(
        "Waiting for a CPU core: the steps' thread was runnable but off its core 59% of the "
        "step time (the stack sampler's readings), and every part below includes that wait. "
        "Bound by "
    )


def test_a_saved_summary_keeps_the_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline written by `stepscope summary -o` and read back by `stepscope diff`."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = _run(tmp_path / "logs", "q", {"host": QUEUE.read_bytes()})
    headline, _ = _told(run, capsys)
    base = tmp_path / "base.json"
    assert main(["summary", str(run), "-o", str(base), "--no-cache"]) == 0
    capsys.readouterr()
    diffed = _cli(["diff", str(base), str(run), "--json"], capsys)
    assert diffed["baseline"]["bound_by"] == headline == diffed["candidate"]["bound_by"]
