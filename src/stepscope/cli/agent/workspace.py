"""What an agent may reach: the runs under one log directory, named as `stepscope runs` names
them, and answers cut to a size an agent can read.

A request names a run by its name under the log directory given at start (``tf/ctl/2026_..``),
never by a path: a name that is not one of the runs found there is refused, so no request
reaches a file outside the log directory (decision 165). Runs are opened through
`stepscope.Analysis`, a few kept open (their profiles and intermediates cached), and their
SQL tables through `stepscope.sql.Database`.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    from stepscope.model import Run
    from stepscope.sql import Database
    from stepscope.tools.analysis import Analysis

MAX_CHARS = 40_000  # characters of one answer (about 10k tokens)
MAX_OPEN_RUNS = 4
LIST_CAPS = (200, 50, 20, 10, 5, 2)  # items kept per list, tried in turn until it fits


class Workspace:
    """The runs under ``logdir`` (found again when a name is not known: a run saved since)."""

    def __init__(self, logdir: str | os.PathLike[str], *, use_cache: bool = True) -> None:
        self.logdir = os.path.realpath(os.fspath(logdir))
        if not os.path.isdir(self.logdir):
            # a mistyped path is not there at all: "not a directory" sent the user looking
            # at a file
            what = "not a directory" if os.path.exists(self.logdir) else "no such directory"
            raise StepscopeError(f"{logdir}: {what}; give the log directory to serve")
        self.use_cache = use_cache
        self._runs: dict[str, Run] = {}
        self._open: OrderedDict[str, Analysis] = OrderedDict()
        self._databases: dict[tuple[str, str | None], Database] = {}

    def runs(self) -> dict[str, Run]:
        """Run name -> run, found afresh."""
        from stepscope.model import discover_runs

        found = {r.name: r for r in discover_runs(self.logdir)}
        self._runs = {name: run for name, run in found.items() if _inside(self.logdir, run.path)}
        return self._runs

    def run(self, name: str) -> Run:
        """The run named ``name``; refused unless it is one of the log directory's runs."""
        if not isinstance(name, str) or not name:
            raise StepscopeError("give a run name, as list_runs names them")
        found = self._runs.get(name) or self.runs().get(name)
        if found is None:
            known = ", ".join(sorted(self._runs)[:20]) or "none"
            raise StepscopeError(
                f"no run {name!r} under the log directory (runs: {known}); runs are named "
                "as list_runs names them, never by a path"
            )
        return found

    def analysis(self, name: str) -> Analysis:
        from stepscope.tools.analysis import Analysis

        found = self._open.get(name)
        if found is None:
            found = self._open[name] = Analysis(self.run(name), use_cache=self.use_cache)
            while len(self._open) > MAX_OPEN_RUNS:
                closed, _ = self._open.popitem(last=False)
                for key in [k for k in self._databases if k[0] == closed]:
                    self._databases.pop(key).close()
        self._open.move_to_end(name)
        return found

    def database(self, name: str, host: str | None, limits: Any) -> Database:
        from stepscope.sql import Database

        key = (name, host)
        found = self._databases.get(key)
        if found is None:
            found = self._databases[key] = Database(self.analysis(name), host, limits=limits)
        return found

    def relative(self, path: str) -> str:
        """``path`` relative to the log directory (answers never show other paths)."""
        return os.path.relpath(path, self.logdir)

    def close(self) -> None:
        for db in self._databases.values():
            db.close()
        self._databases.clear()
        self._open.clear()


def _inside(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _capped(data: Any, cap: int) -> Any:
    if isinstance(data, dict):
        return {k: _capped(v, cap) for k, v in data.items()}
    if isinstance(data, list | tuple):
        items = [_capped(v, cap) for v in data[:cap]]
        if len(data) > cap:
            items.append(f"... {len(data) - cap} more items left out (ask for fewer)")
        return items
    if isinstance(data, str) and len(data) > MAX_CHARS // 4:
        return data[: MAX_CHARS // 4] + f"... ({len(data) - MAX_CHARS // 4} characters left out)"
    return data


def bounded(data: Any, max_chars: int = MAX_CHARS) -> str:
    """``data`` as JSON text of at most ``max_chars`` characters: long lists are cut (each
    cut says how many items it left out) until it fits."""
    text = json.dumps(data, default=str, separators=(",", ":"))
    if len(text) <= max_chars:
        return text
    for cap in LIST_CAPS:
        text = json.dumps(_capped(data, cap), default=str, separators=(",", ":"))
        if len(text) <= max_chars:
            return text
    return text[: max_chars - 60] + f'..."(answer cut at {max_chars} characters)"'


def bounded_text(text: str, max_chars: int = MAX_CHARS) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n... ({len(text) - max_chars} characters left out)"
