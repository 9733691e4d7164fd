"""What one server keeps between requests: the log directory's runs, profiles, tool results.

Runs are rediscovered when `/api/runs` is asked and the last listing is older than
``rediscover_s`` (walking a log directory is cheap but not free), and whenever a request names a
run the last listing lacks, so new runs show up without a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from stepscope.errors import NotFoundError
from stepscope.executor import Executor
from stepscope.model import ALL_HOSTS, Run, discover_runs, fs
from stepscope.model.runs import missing_path
from stepscope.serve import security
from stepscope.serve.tool_cache import ToolCache
from stepscope.tools.analysis import Analysis
from stepscope.tools.context import ProfileStore
from stepscope.tools.registry import ToolSpec, all_tools


class ServerState:
    def __init__(
        self,
        logdir: str | Path,
        *,
        use_cache: bool = True,
        cache_dir: str | Path | None = None,
        tools: Callable[[], Sequence[ToolSpec]] = all_tools,
        rediscover_s: float = 1.0,
        max_profiles: int = 8,
        executor: Executor | None = None,
    ) -> None:
        self.logdir = fs.normalize(str(logdir))
        if not fs.isdir(self.logdir) and not fs.isfile(self.logdir):
            raise missing_path(str(logdir))
        self.use_cache = use_cache
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.max_profiles = max_profiles
        self.executor = executor  # ALL_HOSTS per-host work (None: chosen by the run's size)
        self.tools = tools
        self.rediscover_s = rediscover_s
        self.store = self._new_store()
        self.tool_cache = ToolCache()
        self._runs: list[Run] = []
        self._listed_at = -1e9
        self._signatures: dict[str, str] = {}
        self._lock = threading.Lock()

    def _new_store(self) -> ProfileStore:
        return ProfileStore(
            max_profiles=self.max_profiles,
            use_cache=self.use_cache,
            cache_dir=self.cache_dir,
            executor=self.executor,
        )

    def runs(self, max_age_s: float | None = None) -> list[Run]:
        """The runs, rediscovered if the last listing is older than ``max_age_s``."""
        age_limit = self.rediscover_s if max_age_s is None else max_age_s
        with self._lock:
            if time.monotonic() - self._listed_at <= age_limit:
                return self._runs
        found = security.confined_runs(self.logdir, discover_runs(self.logdir))
        with self._lock:
            self._runs, self._listed_at = found, time.monotonic()
        return found

    def run(self, name: str) -> Run:
        security.check_name("run", name)
        try:
            return security.find_run(self.runs(max_age_s=float("inf")), name)
        except NotFoundError:
            # Maybe a run that appeared since the last listing: look again.
            return security.find_run(self.runs(max_age_s=0.0), name)

    def tool(self, name: str) -> ToolSpec:
        return security.find_tool(self.tools(), name)

    def default_host(self, run: Run, multi_host: bool = True) -> str:
        return ALL_HOSTS if len(run.hosts) > 1 and multi_host else run.hosts[0].host

    def fingerprint(self, run: Run, host: str) -> str:
        """Changes whenever a file behind (run, host) changes; a changed file also drops the
        memoized profiles, which are keyed by path alone."""
        files = run.hosts if host == ALL_HOSTS else (run.host(host),)
        parts = []
        for host_file in files:
            try:
                signature = fs.signature(host_file.path)
            except FileNotFoundError:
                self._listed_at = -1e9
                raise NotFoundError(f"run {run.name!r}: {host_file.host} was removed") from None
            with self._lock:
                known = self._signatures.setdefault(host_file.path, signature)
                if known != signature:
                    self._signatures[host_file.path] = signature
                    self.store = self._new_store()
            parts.append(f"{host_file.path}={signature}")
        return "|".join(parts)

    def analysis(self, run: Run) -> Analysis:
        """The run as `stepscope.Analysis` sees it, sharing this server's store."""
        return Analysis(run, store=self.store)
