"""``stepscope.data``: input-pipeline instrumentation (see `stepscope.capture.data`)."""

from stepscope.capture.data import (
    InstrumentedIterable,
    InstrumentedIterator,
    instrument,
    stage,
)

__all__ = ["InstrumentedIterable", "InstrumentedIterator", "instrument", "stage"]
