"""stepscope's messages to the user: one logger, ``logging.getLogger("stepscope")``.

Warnings a library call has to tell (events dropped, a partial save, a bridge that could not
run, a cache that could not be written) go through the ``stepscope`` logger, which by default
writes each message as one line on stderr. Silence them with
``logging.getLogger("stepscope").setLevel(logging.ERROR)``, or send them elsewhere by
replacing its handlers (records also propagate to the root logger's handlers).

`logging` is imported on the first message, not at ``import stepscope`` (a training
script pays for that import at every start).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    import logging
    from typing import Any

NAME = "stepscope"


def logger() -> logging.Logger:
    """The ``stepscope`` logger, given its stderr handler on first use."""
    import logging
    import sys

    log = logging.getLogger(NAME)
    if not getattr(log, "_stepscope_ready", False):

        class _Stderr(logging.Handler):
            # Looks sys.stderr up for every record, so a redirected stderr gets the lines.
            # Sub-loggers' (stepscope.remote...) records below WARNING stay as quiet as they
            # were before this handler existed.
            def filter(self, record: logging.LogRecord) -> bool:
                return record.name == NAME or record.levelno >= logging.WARNING

            def emit(self, record: logging.LogRecord) -> None:
                try:
                    sys.stderr.write(self.format(record) + "\n")
                    sys.stderr.flush()
                except Exception:
                    self.handleError(record)

        if not log.handlers:
            log.addHandler(_Stderr())
        if log.level == logging.NOTSET:
            log.setLevel(logging.INFO)
        log._stepscope_ready = True  # type: ignore[attr-defined]
    return log


def warn(message: str) -> None:
    """One line for the user (WARNING level)."""
    import logging

    logger().log(logging.WARNING, message)


def info(message: str) -> None:
    """One line of progress or information (INFO level)."""
    import logging

    logger().log(logging.INFO, message)


class ModuleLogger:
    """``logging.getLogger(name)`` for a module's own diagnostics, without importing
    `logging` until it could show something (decision 302: 2.4-3.8 ms of every analysing
    command). Below WARNING, a record made while no code of the process has imported
    `logging` could reach no handler: nothing has configured one, the root logger stands at
    WARNING and the ``stepscope`` logger's handler (`logger`) passes its sub-loggers' records
    from WARNING up; so `debug` and `info` return at once then, and otherwise go to the real
    logger (a script's or a test's configuration applies as before). The record names the
    caller's file and line, as a direct call would."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def real(self) -> logging.Logger:
        """The `logging.Logger` this stands for (importing `logging`)."""
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if "logging" in sys.modules:
            self.real().debug(msg, *args, **_one_up(kwargs))

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        if "logging" in sys.modules:
            self.real().info(msg, *args, **_one_up(kwargs))

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.real().warning(msg, *args, **_one_up(kwargs))

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.real().error(msg, *args, **_one_up(kwargs))


def _one_up(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The caller's frame (not `ModuleLogger`'s) for the record's file and line."""
    return {**kwargs, "stacklevel": int(kwargs.get("stacklevel", 1)) + 1}


def module_logger(name: str) -> ModuleLogger:
    """The logger of module ``name`` (pass ``__name__``), `logging` imported on demand."""
    return ModuleLogger(name)
