"""What a tool is given: the run, the selected host(s), options, and cached intermediates."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Any, TypeVar

from stepscope.model import ALL_HOSTS, Profile, Run, open_host

T = TypeVar("T")


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
    ) -> None:
        self.max_profiles = max_profiles
        self.use_cache = use_cache
        self.cache_dir = cache_dir
        self.progress = progress
        self._profiles: OrderedDict[str, Profile] = OrderedDict()
        self._intermediates: dict[tuple[str, str], Any] = {}
        self._lock = Lock()

    def profile(self, run: Run, host: str) -> Profile:
        host_file = run.host(host)
        key = host_file.path
        with self._lock:
            found = self._profiles.get(key)
            if found is not None:
                self._profiles.move_to_end(key)
                return found
        profile = open_host(
            host_file, use_cache=self.use_cache, cache_dir=self.cache_dir, progress=self.progress
        )
        with self._lock:
            self._profiles[key] = profile
            while len(self._profiles) > self.max_profiles:
                evicted, _ = self._profiles.popitem(last=False)
                self._intermediates = {
                    k: v for k, v in self._intermediates.items() if k[0] != evicted
                }
        return profile

    def intermediate(self, run: Run, host: str, name: str, build: Callable[[Profile], T]) -> T:
        """``build(profile)`` computed once per (host file, name)."""
        key = (run.host(host).path, name)
        with self._lock:
            if key in self._intermediates:
                return self._intermediates[key]
        value = build(self.profile(run, host))
        with self._lock:
            self._intermediates[key] = value
        return value


@dataclass
class ToolContext:
    run: Run
    host: str  # a host name or ALL_HOSTS
    store: ProfileStore = field(default_factory=ProfileStore)
    options: dict[str, str] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        """The selected host names (all of them for ALL_HOSTS)."""
        return self.run.host_names if self.host == ALL_HOSTS else [self.run.host(self.host).host]

    def profiles(self) -> list[Profile]:
        return [self.store.profile(self.run, h) for h in self.hosts]

    def intermediate(self, host: str, name: str, build: Callable[[Profile], T]) -> T:
        return self.store.intermediate(self.run, host, name, build)

    def option(self, name: str, default: str = "") -> str:
        return self.options.get(name, default)
