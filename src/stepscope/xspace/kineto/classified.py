"""The column route's classification of each event of a scanned trace (`Classified`), in a
module of its own: `fast_route` makes it, `fast_stats` and `fast_memory` read it, and
`fast_route` imports those two (a type imported back from it made a cycle).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.records import record
from stepscope.xspace.kineto.scan import ScannedTrace
from stepscope.xspace.kineto.stat_codec import StatCodec

# (memory events ascending, per memory arg their `ScannedTrace.arg_at`: present, kind, value)
MemoryReads = tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]


@record(frozen=False)
class Classified:
    """Per event: whether it is routed as a complete event, its category and kind."""

    trace: ScannedTrace
    routed: np.ndarray  # bool: X events and the instants routed like them
    memory: np.ndarray  # bool: [memory] instants
    kind: np.ndarray  # int8 Kind (-1 where not routed)
    category: np.ndarray  # int32 index into `categories`
    categories: list[str]
    # Events left out, by what the warning calls them (the route adds them to the skipped).
    skipped: dict[str, int] = field(default_factory=dict)
    # Whether an event may hold two stats of one name (`fast_stats` then merges them).
    merge_stats: bool = False
    # The memory events' args as `fast_route.classify` read them (`fast_memory.Reads`), for
    # `fast_memory.prepare`, which frees them.
    memory_reads: MemoryReads | None = None
    # Set by `route`: absolute start, duration, final name id (string id) of each event.
    start_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dur_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    names: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    codec: StatCodec = field(default_factory=StatCodec)
    # Set by `fast_memory.prepare`: memory events in time order and their args.
    memory_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    memory_args: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
