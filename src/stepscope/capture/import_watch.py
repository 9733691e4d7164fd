"""A call after each module of one package is imported, while a session records.

stepscope's capture hooks a framework's classes (`generate_hook`) without importing the
framework: a class is wrapped if its module is loaded when recording starts. A script that
calls `stepscope.start` at its top and imports transformers later (or whose first
``pipeline(...)`` loads the model's module) had nothing wrapped. `watch` puts a finder first
on ``sys.meta_path`` that answers only for the package's own modules: it asks the finders
after it for the module's spec, as the import would, and wraps the spec's loader so that once
the module has run, the loader is the module's own again and ``after(module)`` is called. Any
other import pays one call that compares a prefix (a few hundred nanoseconds, beside the tens
of microseconds or more that finding and running a module takes; decision 615). `unwatch`
removes the finder at `stop`.
"""

from __future__ import annotations

import contextlib
import sys

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any


class _Loader:
    """The module's own loader, then ``after``; anything else asked is the loader's."""

    def __init__(self, loader: Any, after: Callable[[ModuleType], object]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            # nothing of ours stays on the module (reload, inspect, importlib.resources)
            module.__loader__ = self._loader
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
        with contextlib.suppress(Exception):  # a hook must never break the program's import
            self._after(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class Watcher:
    """The finder: ``after(module)`` once each module named ``package`` or under it runs."""

    def __init__(self, package: str, after: Callable[[ModuleType], object]) -> None:
        self.package = package
        self._prefix = package + "."
        self.after = after

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith(self._prefix) and fullname != self.package:
            return None  # every other import: this comparison only
        for finder in list(sys.meta_path):
            if finder is self or isinstance(finder, Watcher):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if loader is not None and hasattr(loader, "exec_module"):
                spec.loader = _Loader(loader, self.after)
            return spec
        return None


def watch(package: str, after: Callable[[ModuleType], object]) -> Watcher:
    """A finder, first on ``sys.meta_path``, calling ``after`` for the package's modules."""
    watcher = Watcher(package, after)
    sys.meta_path.insert(0, watcher)
    return watcher


def unwatch(watcher: Watcher) -> None:
    """Off ``sys.meta_path`` (gone already: nothing to do)."""
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(watcher)
