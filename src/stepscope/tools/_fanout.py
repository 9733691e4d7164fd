"""ALL_HOSTS tools as reductions of per-host summaries computed by workers.

For a tool asked for ALL_HOSTS of a run with several hosts, each host is one task
(`host_summary`): the worker opens the host's profile, runs the tool on that host alone, and
returns the per-host intermediates the tool computed (step database, op metrics, kernel and
memory summaries, findings...): small values, never the profile. The driver seeds its store
with them, so the tool's own ALL_HOSTS build then reduces them without opening any profile.
Summaries are kept in the store (`stepscope.store`, kind ``summaries``: data files that
cannot run code when loaded, unlike pickles) by the file's content hash, host, tools and
options: a rerun only recomputes the hosts whose bytes changed. A host that fails (corrupt,
missing, too large) is reported in ``store.host_errors`` and left out; the others are
analyzed.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from stepscope.errors import StepscopeError
from stepscope.executor import Executor, HostTask, InlineExecutor, TaskFn, content_hash
from stepscope.log import module_logger
from stepscope.model import ALL_HOSTS, Profile, Run, cache
from stepscope.model.runs import HostFile
from stepscope.records import record
from stepscope.store import location
from stepscope.store import values as stored
from stepscope.tools import output
from stepscope.tools.context import ALL_HOSTS_SHARE, ProfileStore, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolResult, ToolSpec, get_tool

log = module_logger(__name__)

# bump when what a summary holds changes (3: stored without pickle; 4: partial reads)
SUMMARY_SCHEMA = 4
SUMMARY_KIND = "summaries"


@record
class SummaryArgs:
    """What a host's summary task computes, and where it may cache it."""

    tools: tuple[str, ...]  # computed together: each host's profile is opened once
    options: tuple[tuple[str, str], ...]
    cache_dir: str  # "": the worker's own ($STEPSCOPE_CACHE_DIR, else its user cache)
    use_cache: bool  # False: no summary cache (--no-cache)
    build: bool = True  # False: only what the tool's availability check needs


@record
class HostSummary:
    """A host's intermediates, computed or read from the cache."""

    values: dict[str, Any] = field(default_factory=dict)  # intermediate name -> value
    cached: bool = False


class _NoProfile(pickle.Pickler):
    """Refuses to pickle a Profile: a summary must never carry the profile back."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Profile):
            raise pickle.PicklingError("holds a Profile")
        return NotImplemented


def _shippable(value: Any) -> bool:
    try:
        _NoProfile(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        log.debug("intermediate not shipped: %s", exc)
        return False
    return True


def _summary_path(cache_dir: str, digest: str, host: str, args: SummaryArgs) -> Path:
    # The host name is part of the key: summaries name their host (findings, memory rows),
    # so two ranks with identical bytes still get their own entries.
    key = location.key(
        SUMMARY_KIND,
        SUMMARY_SCHEMA,
        location.code_stamp(),
        digest,
        host,
        args.tools,
        args.options,
        args.build,
    )
    return location.entry(SUMMARY_KIND, key, cache_dir, suffix=".npz")


def _read_summary(path: Path) -> HostSummary | None:
    found = stored.read_value(path)
    if found is None or not isinstance(found, dict):
        return None
    return HostSummary(found, cached=True)


def host_summary(task: HostTask) -> HostSummary:
    """Runs in a worker: one host's intermediates for one tool (from the cache when the file's
    bytes were seen before)."""
    args: SummaryArgs = task.args
    host = task.host
    cache_path = None
    if args.use_cache:
        try:
            digest = content_hash(host.path)
        except FileNotFoundError:
            raise StepscopeError(f"{host.path}: file not found (was it moved?)") from None
        except OSError as exc:
            raise StepscopeError(f"{host.path}: cannot read ({exc.strerror or exc})") from None
        cache_path = _summary_path(args.cache_dir, digest, host.host, args)
        found = _read_summary(cache_path)
        if found is not None:
            return found
    cache_dir = Path(args.cache_dir) if args.cache_dir else None
    # A converted profile already in the cache is read from it; a new one is not written
    # there: a pod's hosts would fill the disk with copies that only one-host pages need
    # (they write it when a host is opened).
    converted = args.use_cache and (cache.entry_dir(host.path, cache_dir) / "header.json").exists()
    # No kept intermediates: the summary below keeps this host's, under the file's content.
    store = ProfileStore(
        max_profiles=1, use_cache=converted, cache_dir=cache_dir, keep_intermediates=False
    )
    options = {**dict(args.options), ALL_HOSTS_SHARE: "1"}
    ctx = ToolContext(Run(host.host, host.path, (host,)), host.host, store, options)
    for name in args.tools:
        spec = get_tool(name)
        # Availability checks are intermediates too; the build runs even when this host
        # alone has nothing to show (the pod viewer of one single-GPU host), because the
        # ALL_HOSTS build reduces the same per-host intermediates.
        available = bool(spec.available(ctx))
        if args.build:
            try:
                spec.build(ctx)
            except StepscopeError:
                if available:
                    raise
    values = {
        name: value for (_path, name), value in store.intermediates().items() if _shippable(value)
    }
    summary = HostSummary(values)
    if cache_path is not None:
        stored.write_value(cache_path, summary.values)
    return summary


def _auto_executor(hosts: list[HostFile]) -> Executor:
    from stepscope.executor.choose import POOL_MIN_BYTES, make_executor  # the pools, here

    if sum(h.size_bytes for h in hosts) < POOL_MIN_BYTES:
        return InlineExecutor()
    return make_executor()


def _registered(spec: ToolSpec) -> bool:
    try:
        return get_tool(spec.name) is spec
    except StepscopeError:
        return False


def prepare(ctx: ToolContext, *specs: ToolSpec, build: bool = True) -> None:
    """Fans the per-host work of ``specs`` for an ALL_HOSTS context out to the store's
    executor (one task per host for all of them) and seeds the store with the summaries
    (``build=False``: only what the tools' ``available`` reads). Raises when every host
    failed."""
    run, store = ctx.run, ctx.store
    # Workers find tools by name: a tool made up in place runs in this process.
    names = tuple(s.name for s in specs if s.multi_host and s.fan_out and _registered(s))
    if ctx.host != ALL_HOSTS or len(run.hosts) < 2 or not names:
        return
    options = tuple(sorted(ctx.options.items()))
    keys = names if build else tuple(f"{n}:available" for n in names)

    def done(path: str) -> bool:
        return all(
            store.has_summary(path, k, options) or store.has_summary(path, n, options)
            for k, n in zip(keys, names, strict=True)
        )

    # A host that failed stays failed for the life of the store (a server makes a new store
    # when a file changes): a later task that never opens the file (an availability check)
    # proves nothing about it.
    todo = [h for h in run.hosts if not done(h.path) and h.path not in store.host_errors]
    if todo:
        executor = store.executor or _auto_executor(todo)
        here = str(location.root(store.cache_dir))
        args = SummaryArgs(names, options, executor.worker_cache(here), store.use_cache, build)
        for host, summary in map_hosts(store, todo, host_summary, args, executor=executor):
            for key in keys:
                store.seed(host.path, key, options, summary.values)
    check_some_left(ctx)


def map_hosts(
    store: ProfileStore,
    hosts: list[HostFile],
    fn: TaskFn,
    args: Any,
    portable: bool = True,
    executor: Executor | None = None,
) -> Iterator[tuple[HostFile, Any]]:
    """``fn(HostTask(host, args))`` for every host on ``executor`` (else the store's, else one
    chosen by the files' size, closed after), with per-host progress; yields (host, value) as
    they complete. A host whose task failed is recorded in ``store.host_errors`` instead.
    ``portable=False``: the task needs the file at its own path (see `HostTask`)."""
    executor = executor or store.executor or _auto_executor(hosts)
    try:
        tasks = [HostTask(h, args, portable) for h in hosts]
        for i, outcome in executor.map(fn, tasks, store.host_progress):
            if outcome.moved:
                store.moved(hosts[i].path, outcome.moved)
            if outcome.ok:
                yield hosts[i], outcome.value
            else:
                store.fail(hosts[i].path, outcome.error)
    finally:
        if executor is not store.executor:
            executor.close()


def check_some_left(ctx: ToolContext) -> None:
    """Raises the one-line error of a run whose every host failed."""
    run, failed = ctx.run, ctx.failed
    if len(failed) == len(run.hosts):
        first = next(iter(failed.values()))
        raise StepscopeError(
            f"run {run.name!r}: all {len(run.hosts)} hosts failed (first: {first})"
        )


def host_errors_json(ctx: ToolContext) -> list[dict[str, str]]:
    """The failed hosts of an ALL_HOSTS context, for the ``host_errors`` field of results."""
    return [{"host": h, "error": e} for h, e in ctx.failed.items()]


def partial_reads_json(ctx: ToolContext) -> list[dict[str, Any]]:
    """The hosts read in part, for the ``partial_reads`` field of results."""
    return [{"host": h, "warnings": list(w)} for h, w in ctx.partial_reads.items()]


@record
class HostError:
    """A host left out of a tool's result, and why."""

    host: str = out("a host left out of the result")
    error: str = out("why, in one line")


@record
class PartialRead:
    """A host whose profile was read only in part, and what is missing."""

    host: str = out("a host whose profile is not all that was recorded")
    warnings: tuple[str, ...] = out(
        "what is missing or was changed to read it: a truncated file, repaired JSON, events "
        "skipped as damaged or dropped at max_events (docs/security.md)"
    )


@record
class WithHostErrors:
    """A tool's result with the hosts that could not be analyzed (``host_errors`` in JSON)
    and those read only in part (``partial_reads``); each key only when it has entries."""

    result: ToolResult = out("the tool's own fields", inline=True)
    host_errors: tuple[HostError, ...] | None = out(
        "the hosts that could not be analyzed", omit_none=True, default=None
    )
    partial_reads: tuple[PartialRead, ...] | None = out(
        "the hosts whose answer comes from part of their recording", omit_none=True, default=None
    )

    def to_csv(self) -> str:
        return output.to_csv(self.result)  # the table is the tool's; failures go to stderr


def build_tool(ctx: ToolContext, spec: ToolSpec) -> ToolResult:
    """``spec``'s result for ``ctx``: per-host work fanned out first (ALL_HOSTS), failed hosts
    and hosts read in part listed in the result."""
    prepare(ctx, spec)
    return with_host_errors(ctx, spec.build(ctx))


def with_host_errors(ctx: ToolContext, result: ToolResult) -> ToolResult:
    """``result`` with the context's failed hosts and hosts read in part, when there are any
    (`WithHostErrors`: ``host_errors`` and ``partial_reads`` in JSON)."""
    failed, partial = ctx.failed, ctx.partial_reads
    if not failed and not partial:
        return result
    return WithHostErrors(
        result,
        tuple(HostError(h, e) for h, e in failed.items()) or None,
        tuple(PartialRead(h, tuple(w)) for h, w in partial.items()) or None,
    )
