"""How the CLI shows progress and what `--quiet` silences.

Library code reports progress through callbacks (`stepscope.model.load.Progress`, the
executor's per-host progress) and messages through the ``stepscope`` logger; the CLI renders
them here. `--quiet` (every sub-command) raises the logger to WARNING for the command, which
also turns the progress displays off: what is left on stderr are warnings and errors.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from stepscope import log

if TYPE_CHECKING:  # the model (NumPy) is imported by the commands that convert, not here
    from stepscope.model.load import Progress


def showing() -> bool:
    """Whether progress and information lines are wanted (not `--quiet`, not silenced by the
    user's logging configuration). Where nothing has imported `logging`, nothing has
    configured it: the ``stepscope`` logger would stand at INFO (decision 302)."""
    if "logging" not in sys.modules:
        return True
    import logging

    return log.logger().isEnabledFor(logging.INFO)


@contextlib.contextmanager
def quiet(enabled: bool) -> Iterator[None]:
    """With ``enabled``, only warnings and errors of the ``stepscope`` logger for the block,
    and nothing of Dask's own below an error: its warnings (a package version that differs
    between this process and the workers) are `stepscope doctor --dask`'s to report."""
    if not enabled and "logging" not in sys.modules:
        # no level to set or put back: a logger made in the block starts at INFO, as here
        with warnings.catch_warnings():
            yield
        return
    import logging

    logger = log.logger()
    saved = {logger: logger.level}
    with warnings.catch_warnings():
        if enabled:
            logger.setLevel(logging.WARNING)
            # Dask's configuration gives its loggers their own levels (distributed.client...)
            for name in ["distributed", *logging.root.manager.loggerDict]:
                if name == "distributed" or name.startswith("distributed."):
                    dask_logger = logging.getLogger(name)
                    saved[dask_logger] = dask_logger.level
                    dask_logger.setLevel(logging.ERROR)
            warnings.filterwarnings("ignore", module=r"distributed(\.|$)")
        try:
            yield
        finally:
            for each, level in saved.items():
                each.setLevel(level)


def stderr_progress(width: int = 24) -> Progress:
    """The progress display on stderr: a bar redrawn in place on a terminal, one line per
    stage otherwise (logs, CI); messages without a fraction are written as lines. Nothing
    when progress is not `showing`."""
    started = time.monotonic()
    tty = sys.stderr.isatty()
    state = {"open": False}

    def report(stage: str, fraction: float | None = None) -> None:
        if not showing():
            return
        elapsed = f"{time.monotonic() - started:5.1f}s"
        if fraction is None or not tty:
            if state["open"]:
                sys.stderr.write("\n")
                state["open"] = False
            percent = "" if fraction is None else f"{fraction:4.0%} "
            sys.stderr.write(f"[{elapsed}] {percent}{stage}\n")
            sys.stderr.flush()
            return
        filled = round(width * min(max(fraction, 0.0), 1.0))
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r[{bar}] {fraction:4.0%} {stage[:60]:<60} {elapsed}")
        state["open"] = fraction < 1.0
        if fraction >= 1.0:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report
