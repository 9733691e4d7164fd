"""A real gloo DDP job whose 4 ranks of 2 threads each share one core with a busy loop: every
rank's steps' thread waits for the core, and the job's page says so of the whole job rather
than naming one rank (decision 687). On a quiet machine the ranks read runnable 21-23% of
their steps (asleep in their collectives much of the rest), on a busy one 50-56%: the rule
reads a thread waiting at least as long as it ran as waiting too (decision 1039)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.stats import stragglers_cores
from tests.support.ddp_runs import job

pytestmark = pytest.mark.integration


def test_every_rank_waiting_for_the_core_is_said_of_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job(tmp_path, *("--ranks", "4", "--threads", "2", "--one-core", "--steps", "40"))
    [run] = (tmp_path / "plugins" / "profile").iterdir()
    seen = _readings_kept(monkeypatch)
    assert main(["tool", str(run), "overview_page", "--workers", "0", "--no-cache"]) == 0
    overview: dict[str, Any] = json.loads(capsys.readouterr().out)
    # a CI run once had no note here and nothing to tell why: say what each rank read
    assert len(overview["job"]["held_alike"]) == 1, (seen, overview["bound_by"]["headline"])
    (note,) = overview["job"]["held_alike"]
    assert note.startswith("Every rank waits for a core: each rank's steps' thread was runnable")
    assert overview["bound_by"]["headline"].startswith("Every rank waits for a core")
    advice = overview["recommendation"]
    assert advice["details"][0].startswith("Every rank waits for a CPU core (")
    assert "torch.set_num_threads" in advice["details"][0]


def _readings_kept(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each rank's (runnable, on-a-core) shares and readings as the core rule reads them, in
    words, for the failure's message."""
    seen: list[str] = []
    shares = stragglers_cores._shares

    def kept(rank: Any, rows: Any) -> Any:
        found = shares(rank, rows)
        cpu = rank.calls.cpu if rank.calls is not None else None
        readings = len(cpu.start_ns) if cpu is not None else 0
        seen.append(f"{rank.host}: {readings} readings over {len(rows)} steps, shares {found}")
        return found

    monkeypatch.setattr(stragglers_cores, "_shares", kept)
    return seen
