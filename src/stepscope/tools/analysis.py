"""`stepscope.Analysis`: a run opened once and asked for any tool's result.

    import stepscope

    run = stepscope.Analysis("logs/plugins/profile/2026_01_01_12_00_00")
    overview = run.tool("overview_page")          # the tool's declared result (a dataclass)
    print(overview.steps[0].duration_ns)
    data = run.json("op_stats", include_idle="true")   # the JSON `stepscope tool` prints
    for host, profile in run.profiles():          # every host's event columns
        print(host, profile.n_events)

The CLI, the server and the documentation's examples all go through this class: opening the
run, the store of converted profiles and cached intermediates, the choice of host (the only
one, else ALL_HOSTS), option checking, and the fan-out of per-host work for ALL_HOSTS
(`stepscope.tools._fanout`, on the executor given or one chosen by the run's size) are
written here once. One `Analysis` reuses what it computed: asking for a second tool of the
same host reuses the profile and the intermediates (step database, op metrics...) the first
one built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepscope.errors import StepscopeError
from stepscope.model import Run, open_run
from stepscope.tools import _fanout, output
from stepscope.tools._fanout import with_host_errors
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import ToolResult, ToolSpec, get_tool

__all__ = ["Analysis", "with_host_errors"]

if TYPE_CHECKING:
    from stepscope.executor import Executor, ProgressFn
    from stepscope.model import Profile
    from stepscope.stats.compare import RunSummary
    from stepscope.stats.steps.breakdown import StepDb


def lacking(spec: ToolSpec, ctx: ToolContext) -> str:
    """Why a run without what ``spec`` shows has nothing for it: what the profile lacks and
    how to record it (`ToolSpec.needs`, for this run when it is a function), said alike by
    every interface."""
    needs = spec.needs(ctx) if callable(spec.needs) else spec.needs
    needs = needs or f"{spec.title}: {spec.description[0].lower()}{spec.description[1:]}"
    return f"the profile lacks what it needs ({needs})"


class Analysis:
    """One run (a run directory, a log directory holding one run, a profile file, or a `Run`)
    and everything computed from it so far.

    ``use_cache``: read and write converted profiles and per-host summaries in the cache
    (`stepscope cache`); ``executor``: where the per-host work of ALL_HOSTS runs (default: in
    this process for small runs, else a process pool; `stepscope.executor.make_executor`
    gives one on a Dask cluster), owned by the caller; ``store``: share converted profiles
    and intermediates with other analyses (a server's runs); ``progress`` /
    ``host_progress``: where conversion and per-host progress is reported;
    ``max_profiles``: how many hosts' converted profiles stay in memory (1 for a pass that
    reads each host once, as `stepscope info` does over a run of many hosts).
    """

    def __init__(
        self,
        run: str | os.PathLike[str] | Run,
        *,
        use_cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        executor: Executor | None = None,
        store: ProfileStore | None = None,
        progress: Callable[[str], None] | None = None,
        host_progress: ProgressFn | None = None,
        max_profiles: int = 8,
    ) -> None:
        self.run = run if isinstance(run, Run) else open_run(os.fspath(run))
        self.store = store or ProfileStore(
            max_profiles=max_profiles,
            use_cache=use_cache,
            cache_dir=Path(cache_dir) if cache_dir is not None else None,
            progress=progress,
            executor=executor,
            host_progress=host_progress,
        )

    def __repr__(self) -> str:
        return f"Analysis({self.run.name!r}, hosts={self.hosts!r})"

    @property
    def hosts(self) -> list[str]:
        """The run's host names (one per profile file)."""
        return self.run.host_names

    def context(
        self,
        tool: str | ToolSpec,
        host: str | None = None,
        options: Mapping[str, object] | None = None,
        *,
        also: tuple[str | ToolSpec, ...] = (),
        check_available: bool = True,
    ) -> ToolContext:
        """What ``tool`` is built from: the host resolved (``None``: the only host, else
        ALL_HOSTS), the options checked and defaulted, and for ALL_HOSTS every host's work
        done (for ``tool`` and the tools in ``also``, each host's profile opened once).
        `ToolUsageError` for a bad option or host; `StepscopeError` when the tool has nothing
        to show for this run (``check_available=False`` skips that check)."""
        spec = _spec(tool)
        ctx = self._bare_context(spec, host, options)
        _fanout.prepare(ctx, spec, *map(_spec, also))
        if check_available and not spec.available(ctx):
            raise StepscopeError(
                f"tool {spec.name} has nothing to show for {self.run.name}: {lacking(spec, ctx)}"
            )
        return ctx

    def tool(self, name: str | ToolSpec, host: str | None = None, **options: object) -> Any:
        """The tool's result for ``host`` (``None``: the only host, else ALL_HOSTS), as the
        tool declares it (its docs/tools page lists the fields). Hosts that could not be
        analyzed are left out and listed by `failed`."""
        return self.result(name, host, options)

    def json(self, name: str | ToolSpec, host: str | None = None, **options: object) -> Any:
        """The tool's JSON data, as `stepscope tool RUN NAME --json` prints it (with
        ``host_errors`` and ``partial_reads`` when hosts were left out or read in part)."""
        return output.to_json(self.result(name, host, options, with_host_errors=True))

    def csv(self, name: str | ToolSpec, host: str | None = None, **options: object) -> str:
        """The tool's CSV table (tools whose formats include "csv")."""
        spec = _spec(name)
        if "csv" not in spec.formats:
            raise StepscopeError(
                f"tool {spec.name} has no CSV output (formats: {', '.join(spec.formats)})"
            )
        return output.to_csv(self.result(spec, host, options, with_host_errors=True))

    def result(
        self,
        tool: str | ToolSpec,
        host: str | None = None,
        options: Mapping[str, object] | None = None,
        *,
        with_host_errors: bool = False,
        check_available: bool = True,
    ) -> ToolResult:
        """`tool` with the options as a mapping. ``with_host_errors``: the result with the
        hosts that could not be analyzed and those read only in part, when there are any
        (``host_errors``, ``partial_reads`` in JSON), as the CLI and the server write it;
        ``check_available=False``: build even when the tool has nothing to show (its result
        then says so)."""
        spec = _spec(tool)
        ctx = self.context(spec, host, options, check_available=check_available)
        result = spec.build(ctx)
        return _fanout.with_host_errors(ctx, result) if with_host_errors else result

    def available(self, name: str | ToolSpec, host: str | None = None) -> bool:
        """Whether the tool has something to show for ``host`` (the UI's tool list); for
        ALL_HOSTS only what the check reads is computed on each host, not the tool."""
        spec = _spec(name)
        ctx = self._bare_context(spec, host, None)
        _fanout.prepare(ctx, spec, build=False)
        return bool(spec.available(ctx))

    def lacking(self, name: str | ToolSpec, host: str | None = None) -> str:
        """What ``host``'s profile lacks for the tool and how to record it (`lacking`)."""
        spec = _spec(name)
        return lacking(spec, self._bare_context(spec, host, None))

    def endpoint(
        self,
        tool: str | ToolSpec,
        name: str,
        host: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> tuple[bytes, str]:
        """The answer of one of ``tool``'s extra routes (`ToolEndpoint`: the trace viewer's
        windows, steps, search...) for ``host``, as (body, content type); ``params`` are the
        route's own. ValueError for a bad parameter."""
        spec = _spec(tool)
        found = [e for e in spec.endpoints if e.name == name]
        if not found:
            names = ", ".join(e.name for e in spec.endpoints) or "none"
            raise StepscopeError(f"tool {spec.name} has no endpoint {name!r} (endpoints: {names})")
        # A route schedules its own per-host work and reads its parameters, not tool options.
        ctx = ToolContext(self.run, spec.resolve_host(self.run, host), self.store, {})
        return found[0].handle(ctx, dict(params or {}))

    def _bare_context(
        self, spec: ToolSpec, host: str | None, options: Mapping[str, object] | None
    ) -> ToolContext:
        given = {name: _text(value) for name, value in (options or {}).items()}
        return ToolContext(
            self.run, spec.resolve_host(self.run, host), self.store, spec.parse_options(given)
        )

    def failed(self) -> dict[str, str]:
        """Host name -> the one-line error of each host whose analysis failed so far."""
        errors = self.store.host_errors
        return {h.host: errors[h.path] for h in self.run.hosts if h.path in errors}

    def summary(
        self, host: str | None = None, step_source: str = "auto", label: str | None = None
    ) -> RunSummary:
        """The run's `RunSummary` (steps, ops, kernels, memory) for `stepscope summary`,
        `stepscope diff` and the Compare page, from the same intermediates the tools use
        (``host``: one host, ALL_HOSTS, or ``None``: the only host, else ALL_HOSTS)."""
        from stepscope.tools._compare import run_summary

        ctx = ToolContext(
            self.run, _pick_host(self.run, host), self.store, {"step_source": step_source}
        )
        return run_summary(ctx, label)

    def partial_reads(self, host: str | None = None) -> dict[str, tuple[str, ...]]:
        """Host name -> the warnings saying its profile is not all that was recorded, for the
        hosts of ``host`` (as `summary` picks them) opened so far (`ToolContext.partial_reads`):
        what an answer built from them must say."""
        return ToolContext(self.run, _pick_host(self.run, host), self.store, {}).partial_reads

    def profile(self, host: str | None = None) -> Profile:
        """One host's columnar events (`stepscope.model.Profile`; ``None``: the only host)."""
        return self.store.profile(self.run, self._one_host(host))

    def _one_host(self, host: str | None) -> str:
        if host is None:
            if len(self.run.hosts) != 1:
                raise StepscopeError(
                    f"run {self.run.name!r} has {len(self.run.hosts)} hosts; name one of "
                    f"{', '.join(self.hosts)}"
                )
            host = self.hosts[0]
        return self.run.host(host).host

    def steps(self, host: str | None = None, step_source: str = "auto") -> StepDb:
        """One host's step database (``None``: the only host): every step's number, start,
        duration and time by category, the same one every tool of this host reads."""
        from stepscope.tools import _analysis

        name = self._one_host(host)
        return _analysis.step_db(self.host_context(name, step_source=step_source), name)

    def host_context(self, host: str, **options: str) -> ToolContext:
        """One host's `ToolContext`: what code beside the tools (the SQL tables of
        `stepscope.sql`) builds the shared intermediates from (`ToolContext.intermediate`:
        step database, op metrics, kernels...), so a query and the tools of one `Analysis`
        compute each of them once between them. ``options``: tool options that key
        intermediates (``step_source``, default "auto" as the tools)."""
        return ToolContext(self.run, self.run.host(host).host, self.store, dict(options))

    def profiles(self) -> Iterator[tuple[str, Profile]]:
        """(host name, columnar events) of every host, one at a time: the store keeps a few
        profiles in memory, so a run of many hosts is read host by host. A host that cannot
        be read is left out and listed by `failed`, as the tools leave it out."""
        for host in self.run.hosts:
            if host.path in self.store.host_errors:
                continue
            try:
                profile = self.store.profile(self.run, host.host)
            except StepscopeError as exc:
                self.store.fail(host.path, str(exc))
                continue
            yield host.host, profile


def _pick_host(run: Run, host: str | None) -> str:
    from stepscope.logdir import ALL_HOSTS

    if host is None:
        return run.hosts[0].host if len(run.hosts) == 1 else ALL_HOSTS
    return host if host == ALL_HOSTS else run.host(host).host


def _spec(tool: str | ToolSpec) -> ToolSpec:
    return tool if isinstance(tool, ToolSpec) else get_tool(tool)


def _text(value: object) -> str:
    """An option value as the CLI and the server pass it (``True`` -> "true", ``3`` -> "3")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
