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
nothing while no session records). transformers is never imported here: a program that has
not imported ``transformers.generation.utils`` when recording starts is not hooked.
"""

from __future__ import annotations

import sys

from stepscope.capture import annotations as _annotations
from stepscope.vocab.serving import HF_GENERATE_EVENT, HF_GENERATE_MODULE

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from typing import Any


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
    """Wrap each loaded generation class's own ``generate`` (idempotent); how many."""
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
    """The original methods back, where ours is still the one there."""
    for cls in _classes():
        current = cls.__dict__.get("generate")
        if current is not None and getattr(current, "_stepscope", False):
            try:
                cls.generate = current.__wrapped__  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                continue
