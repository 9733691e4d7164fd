"""Library messages go through the "stepscope" logger: on stderr by default, silenced by level."""

from __future__ import annotations

import logging

import pytest

from stepscope import log


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
