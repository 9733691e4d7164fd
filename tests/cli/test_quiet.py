"""Progress and information lines are the CLI's rendering of library callbacks and logger
records: `--quiet` (or the user's logging configuration) silences them, never failures."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.cli.progress import quiet, stderr_progress
from tests.pod.builders import cpu_pod


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cpu_pod(tmp_path_factory.mktemp("logs"), 3, corrupt=(1,))


def test_quiet_keeps_failures_and_drops_progress(
    pod: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tool", str(pod), "overview_page", "--workers", "0", "--no-cache"]) == 3
    loud = capsys.readouterr()
    assert "host000: done" in loud.err and "host001: failed" in loud.err
    code = main(["tool", str(pod), "overview_page", "--workers", "0", "--no-cache", "--quiet"])
    silent = capsys.readouterr()
    assert code == 3 and silent.out == loud.out
    assert "done" not in silent.err
    assert "host001: failed" in silent.err and "1 host(s) left out" in silent.err
    assert logging.getLogger("stepscope").level == logging.INFO  # restored after the command


def test_progress_follows_the_stepscope_logger(capsys: pytest.CaptureFixture[str]) -> None:
    report = stderr_progress()
    report("decoding", 0.5)
    assert "50% decoding" in capsys.readouterr().err
    with quiet(True):
        report("decoding", 0.6)
    logger = logging.getLogger("stepscope")
    saved = logger.level
    logger.setLevel(logging.ERROR)  # what a user silencing stepscope in their script does
    try:
        report("decoding", 0.7)
    finally:
        logger.setLevel(saved)
    assert capsys.readouterr().err == ""
