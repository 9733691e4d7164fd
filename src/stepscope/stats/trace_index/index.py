"""The trace viewer's index of one (run, host): every event, organised for windowed queries.

Layout (all NumPy arrays; memory-mapped from the cache after the first build):

- ``depth[event]``: nesting depth within its line (see `lod`).
- A *row* is one (line, depth); ``row_line`` / ``row_depth`` describe the rows.
- Positions 0..n-1 hold the events sorted by (row, level, start): ``order[pos]`` is the event,
  ``start_ns[pos]`` its start and ``end_max_ns[pos]`` the running maximum of the (>= 1 ns)
  ends within its segment. A *segment* is one (row, level) run: ``seg_lo``/``seg_hi`` bound
  it, ``seg_row``/``seg_level`` name it, ``seg_start_ns``/``seg_end_ns`` give its time span.
  The level of detail of an event is explained in `lod`.
- ``flows`` (`flows`), ``counters`` (`counters`), ``names`` (`search`),
  ``steps`` (`tracks`). Names and steps are not needed to draw a window: a built index finds
  them on first use (the search, the steps endpoint, the background save after the answer).

Queries are in `window`. The index is built once per profile file and kept in the store
(`stepscope.store`, kind ``trace_index``, keyed by the converted profile's key and
`INDEX_VERSION`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import field, fields
from pathlib import Path

import numpy as np

from stepscope import log
from stepscope.model import Profile
from stepscope.model.cache import cache_key, entry_dir
from stepscope.records import record
from stepscope.stats.trace_index.counters import Counter, build_counters
from stepscope.stats.trace_index.flows import FlowTable, build_flows
from stepscope.stats.trace_index.layout import positions
from stepscope.stats.trace_index.lod import line_order, nesting_depth
from stepscope.stats.trace_index.memo import MemoAnswers
from stepscope.stats.trace_index.search import NameIndex, build_name_index
from stepscope.stats.trace_index.tracks import Steps, find_steps
from stepscope.stats.trace_index.wide import WideLevels
from stepscope.store import background, entries, location

INDEX_VERSION = 4  # bump whenever the index layout or its algorithms change
KIND = "trace_index"  # the store's name for these entries


@record(frozen=False)
class TraceIndex:
    origin_ns: int  # first event start: the time axis' zero
    end_ns: int  # last event end
    depth: np.ndarray  # int32 per event
    line_depths: np.ndarray  # int32 per line: number of rows (max depth + 1, 0 if empty)
    row_line: np.ndarray  # int32
    row_depth: np.ndarray  # int32
    order: np.ndarray  # int32/int64 event at each sorted position
    start_ns: np.ndarray  # int64 per position
    end_max_ns: np.ndarray  # int64 per position
    seg_row: np.ndarray  # int32
    seg_level: np.ndarray  # int8
    seg_lo: np.ndarray  # int64
    seg_hi: np.ndarray  # int64
    seg_start_ns: np.ndarray  # int64
    seg_end_ns: np.ndarray  # int64
    flows: FlowTable
    counters: list[Counter]
    # The name index (search only) and the steps (the step database: more than half of a
    # build at 10M events) are built on first use from ``_profile`` / ``_find_steps``, so a
    # first window waits for neither; the background save builds them after the answer.
    # Loaded from the store, they are there from the start.
    _names: NameIndex | None = field(default=None, repr=False, compare=False)
    _steps: Steps | None = field(default=None, repr=False, compare=False)
    _profile: Profile | None = field(default=None, repr=False, compare=False)
    _find_steps: Callable[[], Steps] | None = field(default=None, repr=False, compare=False)
    # one build of each when the background save and a request ask at once
    _names_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _steps_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # the trace viewer's last full-view answers (`memo`): they live and die with the index
    _full_views: MemoAnswers = field(default_factory=MemoAnswers, repr=False, compare=False)
    # wide windows' levels of detail laid out in event order (`wide`), made on first use
    _wide_levels: WideLevels = field(default_factory=WideLevels, repr=False, compare=False)

    @property
    def n_events(self) -> int:
        return len(self.order)

    @property
    def full_views(self) -> MemoAnswers:
        return self._full_views

    @property
    def wide_levels(self) -> WideLevels:
        return self._wide_levels

    @property
    def names(self) -> NameIndex:
        with self._names_lock:
            if self._names is None:
                assert self._profile is not None, "an index without names has its profile"
                self._names = build_name_index(self._profile)
                self._let_go()
            return self._names

    @property
    def steps(self) -> Steps:
        with self._steps_lock:
            if self._steps is None:
                assert self._find_steps is not None, "an index without steps can find them"
                self._steps = self._find_steps()
                self._let_go()
            return self._steps

    def _let_go(self) -> None:
        """Drops what the lazy parts were built from once both exist (the index no longer
        keeps the profile alive)."""
        if self._names is not None and self._steps is not None:
            self._profile = self._find_steps = None


def build_trace_index(profile: Profile, steps: Callable[[], Steps] | None = None) -> TraceIndex:
    """The index of ``profile``; its steps (`TraceIndex.steps`) are found on first use, from
    ``steps`` (the caller's, from its shared step database) when given, else by `find_steps`.
    Not on a second thread while the index is built: on two busy cores that delayed the
    first window (10M events, STEPSCOPE_THREADS=2: 3.8-6.7 s with the steps started at once,
    1.5-5.0 s after)."""
    return _build(profile, steps or (lambda: find_steps(profile)))


def _build(profile: Profile, find: Callable[[], Steps]) -> TraceIndex:
    n = profile.n_events
    start, dur = profile.start_ns, profile.dur_ns
    order0 = line_order(profile.line, start, start + dur)
    depth = nesting_depth(order0, profile.line, start, dur)
    origin = int(start.min()) if n else 0
    last = int((start + dur).max()) if n else 0
    at = positions(profile.line, len(profile.lines), order0, depth, start, dur, origin)
    del order0
    return TraceIndex(
        origin_ns=origin,
        end_ns=last,
        depth=depth,
        line_depths=at.line_depths,
        row_line=at.row_line,
        row_depth=at.row_depth,
        order=at.order,
        start_ns=at.start_ns,
        end_max_ns=at.end_max_ns,
        seg_row=at.seg_row,
        seg_level=at.seg_level,
        seg_lo=at.seg_lo,
        seg_hi=at.seg_hi,
        seg_start_ns=at.start_ns[at.seg_lo] if n else np.zeros(0, np.int64),
        seg_end_ns=at.end_max_ns[at.seg_hi - 1] if n else np.zeros(0, np.int64),
        flows=build_flows(profile, depth),
        counters=build_counters(profile),
        _profile=profile,
        _find_steps=find,
    )


# ---- cache --------------------------------------------------------------------------------


def _parts(index: TraceIndex) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """Arrays by file name, and the JSON header."""
    arrays: dict[str, np.ndarray] = {}
    for f in fields(TraceIndex):
        if f.name.startswith("_"):
            continue
        value = getattr(index, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = value
    for prefix, obj in (("flows", index.flows), ("names", index.names), ("steps", index.steps)):
        for f in fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, np.ndarray):
                arrays[f"{prefix}.{f.name}"] = value
    for k, counter in enumerate(index.counters):
        for part in ("a", "b", "c"):
            arrays[f"counter{k}.{part}"] = getattr(counter, part)
    header = {
        "version": INDEX_VERSION,
        "origin_ns": index.origin_ns,
        "end_ns": index.end_ns,
        "counters": [{"name": c.name, "unit": c.unit, "kind": c.kind} for c in index.counters],
    }
    return arrays, header


def save_index(index: TraceIndex, target: Path) -> None:
    """Write ``index`` to the directory ``target`` atomically."""
    arrays, header = _parts(index)
    entries.write_arrays(target, arrays, header)


def load_index(target: Path) -> TraceIndex | None:
    """The index stored at ``target`` (arrays memory-mapped), or None (also when damaged)."""
    if not entries.verify(target):
        return None
    try:
        header = entries.read_header(target)
        if header.get("version") != INDEX_VERSION:
            return None

        def arr(name: str) -> np.ndarray:
            return entries.array(target, name)

        def sub(cls: type, prefix: str) -> object:
            return cls(
                **{
                    f.name: arr(f"{prefix}.{f.name}")
                    for f in fields(cls)
                    if f.init and not f.name.startswith("_")
                }
            )

        counters = [
            Counter(c["name"], c["unit"], c["kind"], *(arr(f"counter{k}.{p}") for p in "abc"))
            for k, c in enumerate(header["counters"])
        ]
        plain = {
            f.name: arr(f.name)
            for f in fields(TraceIndex)
            if f.name not in ("origin_ns", "end_ns", "flows", "counters")
            and not f.name.startswith("_")
        }
        return TraceIndex(
            origin_ns=int(header["origin_ns"]),
            end_ns=int(header["end_ns"]),
            flows=sub(FlowTable, "flows"),  # type: ignore[arg-type]
            counters=counters,
            _names=sub(NameIndex, "names"),  # type: ignore[arg-type]
            _steps=sub(Steps, "steps"),  # type: ignore[arg-type]
            **plain,  # type: ignore[arg-type]
        )
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def index_dir(profile: Profile, cache_dir: Path | None = None) -> Path | None:
    """Where the index of ``profile`` is cached; None for profiles not read from a file."""
    if profile.source.startswith("<"):
        return None
    try:
        name = location.key(KIND, INDEX_VERSION, cache_key(profile.source))
        return location.entry(KIND, name, cache_dir)
    except OSError:
        return None


def open_trace_index(
    profile: Profile,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    verbose: bool = False,
    steps: Callable[[], Steps] | None = None,
) -> TraceIndex:
    """The index of ``profile``: from the cache when present, else built
    (`build_trace_index`) and cached."""
    target = index_dir(profile, cache_dir) if use_cache else None
    if target is not None:
        background.wait(target)  # this process is writing it: read it once written
        found = load_index(target)
        if found is not None and found.n_events == profile.n_events:
            return found
    started = time.monotonic()
    index = build_trace_index(profile, steps)
    if verbose and profile.n_events >= 1_000_000:
        log.info(
            f"stepscope: indexed {profile.n_events:,} events for the trace viewer in "
            f"{time.monotonic() - started:.1f} s"
        )
    if target is not None:  # written after the first window is answered
        where = target

        def save() -> None:
            # The save builds the name index (0.4-0.9 s of CPU at 10M events) and then waits
            # for the steps; the steps' child waits for the converted profile's write. Both
            # writes beside each other made that write, and the windows the page asked
            # meanwhile, wait longer (decision 571): the name index comes after it.
            with contextlib.suppress(OSError):  # the file gone: nothing to wait for
                background.after(entry_dir(profile.source, cache_dir))
            save_index(index, where)

        background.write_later(where, save, "the trace index")
    return index
