"""A stand-in for the transformers package, written to disk so that it is imported as a
package is (through ``sys.meta_path``), not set into ``sys.modules``: the capture's hook of a
package imported after recording starts (decision 615) is tested with it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_FILES = {
    "transformers/__init__.py": "",
    "transformers/generation/__init__.py": "",
    # the base class: a traced 'forward' per token, as the model's forward passes
    "transformers/generation/utils.py": """
import stepscope


class GenerationMixin:
    def generate(self, tokens=2):
        for _ in range(tokens):
            with stepscope.trace("forward"):
                pass
        return tokens
""",
    "transformers/models/__init__.py": "",
    # a model's module, loaded on first use: one model overrides generate, calling the base
    "transformers/models/speech.py": """
import stepscope
from transformers.generation.utils import GenerationMixin


class Gpt(GenerationMixin):
    pass


class Whisper(GenerationMixin):
    def generate(self, tokens=2):
        with stepscope.trace("encode"):
            pass
        return super().generate(tokens)
""",
    "transformers/pipelines/__init__.py": "",
    # a pipeline: its call tokenizes, generates and decodes; given an iterator of inputs, it
    # returns an iterator whose work runs as the caller iterates (as transformers' does)
    "transformers/pipelines/base.py": """
import stepscope
from transformers.models.speech import Gpt


class Pipeline:
    def __init__(self):
        self.model = Gpt()

    def __call__(self, inputs, tokens=2):
        if not isinstance(inputs, str):
            return (self.run_single(one, tokens) for one in inputs)
        return self.run_single(inputs, tokens)

    def run_single(self, inputs, tokens):
        with stepscope.trace("tokenize"):
            pass
        out = self.model.generate(tokens)
        with stepscope.trace("decode"):
            pass
        return out


class TextGenerationPipeline(Pipeline):
    def __call__(self, inputs, tokens=2):
        return super().__call__(inputs, tokens)
""",
}


def _ours(name: str) -> bool:
    return name == "transformers" or name.startswith("transformers.")


@contextmanager
def fake_transformers(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package written under ``root`` and importable; any transformers already imported
    is out of ``sys.modules`` meanwhile, and put back after."""
    for rel, text in _FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for name in [n for n in sys.modules if _ours(n)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(root))
    try:
        yield root
    finally:
        for name in [n for n in sys.modules if _ours(n)]:
            if str(root) in str(getattr(sys.modules[name], "__file__", "") or ""):
                del sys.modules[name]
