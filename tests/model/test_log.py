"""Library messages go through the "stepscope" logger: on stderr by default, silenced by level."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from stepscope import log
from tests.support.fixtures import FIXTURES
from tests.support.scripts import imported_by_first_overview

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def test_messages_reach_stderr_and_can_be_silenced(capsys: pytest.CaptureFixture[str]) -> None:
    log.warn("stepscope: something to know")
    assert capsys.readouterr().err == "stepscope: something to know\n"
    logger = logging.getLogger("stepscope")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        log.warn("stepscope: not shown")
        assert capsys.readouterr().err == ""
    finally:
        logger.setLevel(level)


def test_sub_loggers_stay_quiet_below_warning(capsys: pytest.CaptureFixture[str]) -> None:
    log.logger()
    logging.getLogger("stepscope.remote").info("detail nobody asked for")
    assert capsys.readouterr().err == ""


def test_module_loggers_import_logging_only_when_a_record_could_show(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Decision 302: below WARNING, a module's logger does nothing while no code of the
    process has imported `logging` (no handler could get the record); otherwise it is the
    real logger, and its records name the caller's line."""
    import sys

    from stepscope.cli import progress

    quiet_logger = log.module_logger("stepscope.some.module")
    with monkeypatch.context() as patch:
        patch.delitem(sys.modules, "logging")
        quiet_logger.debug("detail %s", 1)
        quiet_logger.info("detail %s", 2)
        assert progress.showing()  # nothing configured: the stepscope logger stands at INFO
        with progress.quiet(False):
            pass
        assert "logging" not in sys.modules
    assert sys.modules["logging"] is logging
    caplog.set_level(logging.DEBUG, logger="stepscope.some.module")
    quiet_logger.debug("shown %s", 3)
    quiet_logger.warning("warned")
    records = [r for r in caplog.records if r.name == "stepscope.some.module"]
    assert [r.getMessage() for r in records] == ["shown 3", "warned"]
    assert {r.pathname for r in records} == {__file__}
    assert quiet_logger.real() is logging.getLogger("stepscope.some.module")


@pytest.mark.integration
def test_a_first_overview_imports_no_logging(tmp_path: Path) -> None:
    assert not imported_by_first_overview(FIXTURES / "tf" / "ctl", "logging", tmp_path)
