"""What a tool is given: the run, the selected host(s), options, and cached intermediates."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path
from threading import Event, Lock, Thread, local
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from stepscope import workers
from stepscope.log import module_logger
from stepscope.model import ALL_HOSTS, Profile, Run, open_host
from stepscope.records import record
from stepscope.xspace import partial

if TYPE_CHECKING:
    from stepscope.executor import Executor, ProgressFn

T = TypeVar("T")

# The option a worker sets on the context of its host (`_fanout.host_summary`): the host is
# one share of an ALL_HOSTS tool, so the intermediates the parent's reduction reads are
# computed there, where the profile is open. Not a user option.
ALL_HOSTS_SHARE = "_all_hosts_share"


class Key(Generic[T]):
    """The name of a per-host intermediate, typed by the value it holds.

    Declared once, at module level beside the function that builds it
    (``OP_METRICS: Key[OpMetrics] = Key("op_metrics")``), and passed to
    `ToolContext.intermediate`, which then returns that type. The store, the per-host
    summaries of ALL_HOSTS and their cache on disk keep values by this name, so a name
    declared by two modules (two kinds of value under one name) raises at import.
    ``key.at(param, ...)`` names one variant (``step_db:marker``), of the same type.
    ``kept=True``: the value is also kept in the store on disk, for the next process
    (`stepscope.tools.kept`): only for values that depend on the host file alone (and on
    the parameters in the name) and that the store can hold (`stepscope.store.values`).
    """

    __slots__ = ("kept", "name")
    _declared: ClassVar[dict[str, str]] = {}  # name -> the module that declared it

    def __init__(self, name: str, *, module: str | None = None, kept: bool = False) -> None:
        import sys

        where = module or sys._getframe(1).f_globals.get("__name__", "?")
        if ":" in name:
            raise ValueError(f"intermediate name {name!r}: ':' separates variants (Key.at)")
        known = Key._declared.setdefault(name, where)
        if known != where:
            raise RuntimeError(f"intermediate {name!r} declared in {known} and in {where}")
        self.name = name
        self.kept = kept

    def at(self, *params: object) -> Key[T]:
        """The variant of this intermediate for ``params`` (its name ``name:p1:p2``)."""
        variant: Key[T] = object.__new__(Key)
        variant.name = ":".join([self.name, *(f"{p}" for p in params)])
        variant.kept = self.kept
        return variant

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


logger = module_logger(__name__)


class NotAtHand(Exception):
    """Under `ProfileStore.at_hand_only`, a profile or intermediate this process has not
    computed (or is computing) yet."""


class ProfileStore:
    """Profiles and per-(run, host) intermediates, memoized in process (LRU) and on disk.

    One store is shared by a server's requests or a CLI invocation, so every tool of a host
    reuses the same converted profile and the same intermediates (step db, op metrics...).
    """

    def __init__(
        self,
        max_profiles: int = 8,
        use_cache: bool = True,
        cache_dir: Path | None = None,
        progress: Callable[[str], None] | None = None,
        executor: Executor | None = None,
        host_progress: ProgressFn | None = None,
        threads: int | None = None,
        keep_intermediates: bool | None = None,
    ) -> None:
        self.max_profiles = max_profiles
        self.use_cache = use_cache
        self.cache_dir = cache_dir
        # kept intermediates (`Key.kept`) read from and written to the store on disk
        # (`stepscope.tools.kept`); None: when the profile cache is used
        self.keep_intermediates = use_cache if keep_intermediates is None else keep_intermediates
        self.progress = progress
        # Where ALL_HOSTS per-host work runs (None: chosen per request by its size) and how
        # its progress is shown; see tools/_fanout.py.
        self.executor = executor
        self.host_progress = host_progress
        self._profiles: OrderedDict[str, Profile] = OrderedDict()
        self._intermediates: dict[tuple[str, str], Any] = {}
        self._summarized: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
        self._reductions: dict[tuple[str, ...], Any] = {}
        self.host_errors: dict[str, str] = {}  # host file path -> why its analysis failed
        # host file path -> the workers that could not open it, and where it ran instead
        self.host_moves: dict[str, str] = {}
        # analysis threads per host ($STEPSCOPE_THREADS; 1: none in the background)
        self.threads = workers.threads() if threads is None else threads
        self._running: dict[tuple[str, str], Event] = {}
        self._lock = Lock()
        self._local = local()  # .at_hand: this thread may only read what is in memory

    @contextmanager
    def at_hand_only(self) -> Iterator[None]:
        """In this block (this thread only), asking for a profile or an intermediate that is not
        in memory raises `NotAtHand` instead of opening, reading or building it: what a
        command does with the work it has already done (`stepscope.cli.sibling_answers`)."""
        before = getattr(self._local, "at_hand", False)
        self._local.at_hand = True
        try:
            yield
        finally:
            self._local.at_hand = before

    def profile(self, run: Run, host: str) -> Profile:
        host_file = run.host(host)
        key = host_file.path
        with self._lock:
            found = self._profiles.get(key)
            if found is not None:
                self._profiles.move_to_end(key)
                return found
        if getattr(self._local, "at_hand", False):
            raise NotAtHand(f"profile of {host}")
        profile = open_host(
            host_file,
            use_cache=self.use_cache,
            cache_dir=self.cache_dir,
            progress=self.progress,
            threads=self.threads,
        )
        with self._lock:
            self._profiles[key] = profile
            # what the answers built from it must say (shipped back by ALL_HOSTS workers)
            self._intermediates[(key, partial.INTERMEDIATE)] = partial.partial_reads(
                profile.warnings
            )
            while len(self._profiles) > self.max_profiles:
                evicted, _ = self._profiles.popitem(last=False)
                self._intermediates = {
                    k: v for k, v in self._intermediates.items() if k[0] != evicted
                }
        return profile

    def reduction(self, key: tuple[str, ...], build: Callable[[], T]) -> T:
        """A value computed from several hosts' intermediates (never from a profile), memoized
        under ``key`` for the life of the store."""
        with self._lock:
            if key in self._reductions:
                return self._reductions[key]
        value = build()
        with self._lock:
            self._reductions[key] = value
        return value

    def intermediates(self) -> dict[tuple[str, str], Any]:
        """Every memoized intermediate, by (host file path, name)."""
        with self._lock:
            return dict(self._intermediates)

    def has_summary(self, path: str, tool: str, options: tuple[tuple[str, str], ...]) -> bool:
        with self._lock:
            return (path, tool, options) in self._summarized

    def seed(
        self, path: str, tool: str, options: tuple[tuple[str, str], ...], values: dict[str, Any]
    ) -> None:
        """Adopts intermediates a worker computed for the host file at ``path``."""
        with self._lock:
            for name, value in values.items():
                self._intermediates.setdefault((path, name), value)
            self._summarized.add((path, tool, options))

    def partial_reads(self, path: str) -> tuple[str, ...]:
        """The partial-read warnings of the host file at ``path`` (`xspace.partial`); empty
        when its profile was read whole or was never opened by this store or its workers."""
        with self._lock:
            return tuple(self._intermediates.get((path, partial.INTERMEDIATE), ()))

    def fail(self, path: str, error: str) -> None:
        with self._lock:
            self.host_errors[path] = error

    def moved(self, path: str, line: str) -> None:
        with self._lock:
            self.host_moves[path] = line

    def intermediate(
        self, run: Run, host: str, name: str, build: Callable[[Profile], T], kept: bool = False
    ) -> T:
        """``build(profile)`` computed once per (host file, name): a caller that finds it being
        computed (by a server's other request, or `in_background`) waits for that result.
        ``kept``: read from the store on disk when an earlier process kept it there (the
        profile is not opened), else built and kept there (`stepscope.tools.kept`)."""
        host_file = run.host(host)
        path = host_file.path
        key = (path, name)
        while True:
            with self._lock:
                if key in self._intermediates:
                    return self._intermediates[key]
                if getattr(self._local, "at_hand", False):
                    raise NotAtHand(name)
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = Event()
                    break
            running.wait()  # then found, or the other build failed and this one tries
        try:
            target = None
            if kept and self.keep_intermediates:
                from stepscope.tools import kept as kept_values

                target = kept_values.entry(path, host_file.host, name, self.cache_dir)
                found = kept_values.read(target) if target is not None else None
                if found is not None:
                    value, reads = found
                    with self._lock:
                        self._intermediates.setdefault((path, partial.INTERMEDIATE), reads)
                        self._intermediates[key] = value
                    return value
            value = build(self.profile(run, host))
            with self._lock:
                self._intermediates[key] = value
            if target is not None:
                kept_values.keep(target, value, self.partial_reads(path))
            return value
        finally:
            with self._lock:
                del self._running[key]
            running.set()

    def in_background(self, work: Callable[[], object]) -> None:
        """Starts ``work`` (intermediates a tool will ask for next) on a second thread when the
        store may use two (``threads``); NumPy releases the GIL in its array work, so on two
        cores the two builds overlap. A failure there is left to the caller's own request."""
        if self.threads < 2:
            return

        def run() -> None:
            try:
                work()
            except Exception:
                logger.debug("background analysis failed", exc_info=True)

        Thread(target=run, name="stepscope-analysis", daemon=True).start()


@record(frozen=False)
class ToolContext:
    """The run, the host(s) and options a tool is built for, and the store it reads from."""

    run: Run
    host: str  # a host name or ALL_HOSTS
    store: ProfileStore = field(default_factory=ProfileStore)
    options: dict[str, str] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        """The selected host names (for ALL_HOSTS: all but the ones whose analysis failed)."""
        if self.host != ALL_HOSTS:
            return [self.run.host(self.host).host]
        failed = self.failed
        return [h for h in self.run.host_names if h not in failed]

    @property
    def failed(self) -> dict[str, str]:
        """ALL_HOSTS: host name -> the one-line error of each host that could not be analyzed."""
        if self.host != ALL_HOSTS or not self.store.host_errors:
            return {}
        errors = self.store.host_errors
        return {h.host: errors[h.path] for h in self.run.hosts if h.path in errors}

    @property
    def moved(self) -> dict[str, str]:
        """ALL_HOSTS: host name -> the workers that could not open its file and where it was
        analyzed instead (`stepscope.executor.dask`)."""
        moves = self.store.host_moves
        return {h.host: moves[h.path] for h in self.run.hosts if h.path in moves}

    @property
    def partial_reads(self) -> dict[str, tuple[str, ...]]:
        """Host name -> the warnings saying its profile is not all that was recorded (a
        truncated file, repaired JSON, dropped events), for the selected hosts that have any."""
        hosts = self.run.hosts if self.host == ALL_HOSTS else [self.run.host(self.host)]
        found = {h.host: self.store.partial_reads(h.path) for h in hosts}
        return {host: reads for host, reads in found.items() if reads}

    def profiles(self) -> list[Profile]:
        return [self.store.profile(self.run, h) for h in self.hosts]

    def intermediate(self, host: str, key: Key[T], build: Callable[[Profile], T]) -> T:
        """``build(profile)`` of ``host``, computed once per host file and ``key``."""
        return self.store.intermediate(self.run, host, key.name, build, key.kept)

    def option(self, name: str, default: str = "") -> str:
        return self.options.get(name, default)
