"""Dask options without a cluster (issue #32): one-line errors that name where the address came
from, the scheduler file, --dask-timeout, the workers' path map, and --quiet over Dask's own
warnings."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import pytest

from stepscope import limits
from stepscope.cli.hosts import executor_from
from stepscope.cli.main import build_parser, main
from stepscope.cli.progress import quiet
from stepscope.errors import StepscopeError
from stepscope.executor import dask_connect
from stepscope.executor.dask_connect import SCHEDULER_ENV
from stepscope.executor.worker import PATH_MAP_ENV, mapped, unreadable_reason
from tests.pod.builders import cpu_pod
from tests.support.optional import skip_without

skip_without("distributed")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(cpu_pod(tmp_path_factory.mktemp("pod"), 2, events=300))


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    # --no-cache: an answer kept for the run would be printed before any Dask option is read
    assert main([*argv, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip()


def test_a_bad_address_is_one_line(run: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "tool", run, "pod_viewer", "--dask", "bogus://x")
    assert err.startswith("stepscope: error: --dask bogus://x: not a Dask scheduler address (")
    assert err.endswith("give tcp://HOST:8786 (or tls://...)") and "\n" not in err


def test_the_environment_variable_is_named_as_the_source(
    run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked of the command's executor choice, not of everything on stderr during `main`:
    a kept answer for the run (`stepscope tool` prints it before reading any Dask option),
    $STEPSCOPE_MAX_PROFILE_BYTES (checked first) or a line from another test's thread
    would change what `main` printed, never which scheduler the variable names."""
    monkeypatch.delenv(limits.ENV_VAR, raising=False)
    monkeypatch.setenv(SCHEDULER_ENV, "bogus://y")
    args = build_parser("tool").parse_args(["tool", run, "pod_viewer"])
    with pytest.raises(StepscopeError) as error:
        executor_from(args)
    assert str(error.value).startswith(f"${SCHEDULER_ENV}=bogus://y: not a Dask scheduler")


def test_a_missing_scheduler_file_is_waited_for_then_named(
    run: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "scheduler.json"
    err = _error(
        capsys, "tool", run, "pod_viewer", "--dask-scheduler-file", str(missing),
        "--dask-timeout", "0.2",
    )  # fmt: skip
    assert err.splitlines()[-1] == (
        f"stepscope: error: --dask-scheduler-file {missing}: does not exist (start `dask "
        "scheduler --scheduler-file` first); waited 0.2 s (--dask-timeout)"
    )


def test_the_scheduler_file_is_waited_for_no_longer_than_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read again every 0.5 s, but a 0.05 s --dask-timeout sleeps 0.05 s in all, not 0.5."""
    slept: list[float] = []

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(seconds)
            time.sleep(seconds)

    monkeypatch.setattr(dask_connect, "time", Clock)
    with pytest.raises(StepscopeError, match="does not exist"):
        dask_connect.resolve(scheduler_file=str(tmp_path / "scheduler.json"), timeout_s=0.05)
    assert slept and sum(slept) <= 0.05


def test_a_scheduler_file_without_an_address(
    run: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "scheduler.json"
    written.write_text('{"type": "Scheduler"}')
    err = _error(
        capsys, "tool", run, "pod_viewer", "--dask-scheduler-file", str(written),
        "--dask-timeout", "0.1",
    )  # fmt: skip
    assert "has no scheduler address" in err


def test_dask_timeout_must_be_positive(run: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tool", run, "pod_viewer", "--dask", "tcp://x:1", "--dask-timeout", "0"])
    assert "is not a number of seconds above 0" in capsys.readouterr().err


def test_dask_and_scheduler_file_exclude_each_other(
    run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["tool", run, "pod_viewer", "--dask", "tcp://x:1", "--dask-scheduler-file", "f"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_path_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PATH_MAP_ENV, "/mnt/logs=/data/logs; /mnt/logs/run1=/fast/run1 ;bad")
    assert mapped("/mnt/logs/run2/h.xplane.pb") == "/data/logs/run2/h.xplane.pb"
    assert mapped("/mnt/logs/run1/h.xplane.pb") == "/fast/run1/h.xplane.pb"  # longest first
    assert mapped("/mnt/logsX/h.xplane.pb") == "/mnt/logsX/h.xplane.pb"  # whole components
    monkeypatch.setenv(PATH_MAP_ENV, "gs://bucket/logs=/mnt/bucket")
    assert mapped("gs://bucket/logs/r/h.pb") == "/mnt/bucket/r/h.pb"


def test_unreadable_reason(tmp_path: Path) -> None:
    here = tmp_path / "h.xplane.pb"
    here.write_bytes(b"x")
    assert unreadable_reason(str(here)) == ""
    assert unreadable_reason(str(tmp_path / "gone.pb")) == (
        "FileNotFoundError: No such file or directory"
    )


def _dask_says(dask_log: logging.Logger, quietly: bool) -> list[str]:
    """Dask's version warning and a log line, as its client gives them; the warnings seen."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet(quietly):
            warnings.warn_explicit(
                "Mismatched versions found", UserWarning, "client.py", 1, "distributed.client"
            )
            dask_log.warning("a Dask warning")
    return [str(w.message) for w in seen]


def test_quiet_silences_dask_warnings_and_logs(capsys: pytest.CaptureFixture[str]) -> None:
    dask_log = logging.getLogger("distributed.client")
    dask_log.setLevel(logging.WARNING)  # as Dask's logging configuration sets it
    handler = logging.StreamHandler()  # Dask's own handler writes to stderr the same way
    dask_log.addHandler(handler)
    try:
        assert _dask_says(dask_log, quietly=True) == []
        assert capsys.readouterr().err == ""
        assert _dask_says(dask_log, quietly=False) == ["Mismatched versions found"]
        assert capsys.readouterr().err == "a Dask warning\n"
    finally:
        dask_log.removeHandler(handler)
        dask_log.setLevel(logging.NOTSET)
