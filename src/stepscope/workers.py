"""How many threads one host's work may use: ``$STEPSCOPE_THREADS`` (default 1).

Read by the XSpace decoder (event chunks decoded by that many threads) and by the tool
store (analysis intermediates built on a second thread); both give the same results with
any number.
"""

from __future__ import annotations

import os

THREADS_ENV = "STEPSCOPE_THREADS"


def threads() -> int:
    """``$STEPSCOPE_THREADS`` as a count of at least 1 (1 when unset or not a number)."""
    try:
        return max(1, int(os.environ.get(THREADS_ENV, "1")))
    except ValueError:
        return 1
