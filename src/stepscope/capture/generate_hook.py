"""Each Hugging Face ``generate()`` call, timed while a session records (decision 560).

A loop of ``model.generate(...)`` under `stepscope.start` / `stop` is a serving loop whose
step is the call (decision 540), but nothing in its profile said where a call began or
ended: the PyTorch bridge records torch's ops (no Python frames: ``with_stack`` is off) and
the stack sampler, at 25 Hz, sees a 40 ms call once or not at all. The steps were then
inferred from the ops' repeats and ``generate``'s own set-up before its first forward pass
(special tokens, the cache, position ids: 8.5 ms of a 54 ms call on a tiny GPT-2) read as the
batch being built, "input". So while a session records, `install` wraps
``GenerationMixin.generate`` and each loaded subclass's own ``generate`` (a model that
overrides it, calling ``super().generate`` or not): each call is an annotation
`vocab.serving.HF_GENERATE_EVENT` with the model's class as stat ``model``, outside the
decorators transformers puts on the method (so it spans what the user's call spans); a call
nested in another (an override calling the base) is part of the outer one. `uninstall` puts
the methods back at `stop` (unless something wrapped them since: then ours stays, recording
nothing while no session records). transformers is never imported here: a program that
imports it after recording starts (``stepscope.start()`` at the script's top), or whose
model's module loads later (``AutoModel``, ``pipeline(...)`` load it on first use), has each
of transformers' modules hooked as it loads (`import_watch`, decision 615).
"""

from __future__ import annotations

import sys

from stepscope.capture import annotations as _annotations
from stepscope.capture import import_watch
from stepscope.vocab.serving import HF_GENERATE_EVENT, HF_GENERATE_MODULE, HF_PACKAGE

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

# transformers' modules imported while recording are hooked as they load (one at a time)
_watcher: import_watch.Watcher | None = None


def _classes() -> list[type]:
    """``GenerationMixin`` and every subclass loaded now, each once."""
    module = sys.modules.get(HF_GENERATE_MODULE)
    base = getattr(module, "GenerationMixin", None) if module is not None else None
    if not isinstance(base, type):
        return []
    seen: dict[type, None] = {}
    pending = [base]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen[cls] = None
        try:
            pending.extend(cls.__subclasses__())
        except TypeError:  # a metaclass whose __subclasses__ needs an instance
            continue
    return list(seen)


def _wrap(original: Any) -> Any:
    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _annotations.trace(HF_GENERATE_EVENT, model=type(self).__name__):
            return original(self, *args, **kwargs)

    generate.__wrapped__ = original  # type: ignore[attr-defined]
    generate.__doc__ = getattr(original, "__doc__", None)
    generate.__name__ = "generate"
    generate.__qualname__ = getattr(original, "__qualname__", "generate")
    generate._stepscope = True  # type: ignore[attr-defined]
    return generate


def install() -> int:
    """Wrap each loaded generation class's own ``generate`` (idempotent), and those of the
    modules of transformers imported from now until `uninstall`; how many are wrapped now."""
    global _watcher
    if _watcher is None:
        _watcher = import_watch.watch(HF_PACKAGE, _on_import)
    return _wrap_loaded()


def _on_import(module: ModuleType) -> None:
    """A module of transformers has just run: the classes it defined are hooked too. Most of
    its modules (tokenizers, configurations, utilities) define no generation class and cost a
    look at their names; a model's module is walked (decision 615)."""
    names = vars(module)
    if module.__name__ == HF_GENERATE_MODULE or any(
        isinstance(v, type) and "generate" in v.__dict__ for v in names.values()
    ):
        _wrap_loaded()


def _wrap_loaded() -> int:
    wrapped = 0
    for cls in _classes():
        current = cls.__dict__.get("generate")
        if not callable(current) or getattr(current, "_stepscope", False):
            continue
        try:
            cls.generate = _wrap(current)  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # a class that refuses new attributes
            continue
        wrapped += 1
    return wrapped


def uninstall() -> None:
    """The original methods back, where ours is still the one there; no more import hook."""
    global _watcher
    if _watcher is not None:
        import_watch.unwatch(_watcher)
        _watcher = None
    for cls in _classes():
        current = cls.__dict__.get("generate")
        if current is not None and getattr(current, "_stepscope", False):
            try:
                cls.generate = current.__wrapped__  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                continue
