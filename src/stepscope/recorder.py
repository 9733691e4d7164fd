"""``stepscope.recorder``: the flight recorder (see `stepscope.capture.recorder`).

import stepscope.recorder
stepscope.recorder.start("logs", keep_steps=50)
"""

from __future__ import annotations

# The public names are the implementation's own `__all__`: listed once, there.
from stepscope.capture.recorder import *  # noqa: F403
from stepscope.capture.recorder import __all__ as __all__
