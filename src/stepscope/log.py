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

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    import logging

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
