"""A stand-in for the transformers package, written to disk so that it is imported as a
package is (through ``sys.meta_path``), not set into ``sys.modules``: the capture's hook of a
package imported after recording starts (decision 615) is tested with it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import stepscope

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
    # transformers' iterator: ``infer`` applied to each item of ``loader``; with a batch size,
    # ``loader`` yields batches and each next() hands out one item of the batch inferred last
    "transformers/pipelines/pt_utils.py": """
class PipelineIterator:
    def __init__(self, loader, infer, loader_batch_size=None):
        self.loader, self.infer, self.loader_batch_size = loader, infer, loader_batch_size
        self._batch = []

    def __iter__(self):
        self.iterator = iter(self.loader)
        return self

    def __next__(self):
        if self._batch:
            return self._batch.pop(0)
        processed = self.infer(next(self.iterator))
        if self.loader_batch_size is None:
            return processed
        self._batch = list(processed)
        return self._batch.pop(0)
""",
    # a pipeline: its call tokenizes, generates and decodes; given a list, it runs them over
    # it (its DataLoader, batched) inside the call; given a generator, it returns the iterator
    # at once, whose work runs as the caller iterates (as transformers' does)
    "transformers/pipelines/base.py": """
import stepscope
from transformers.models.speech import Gpt
from transformers.pipelines.pt_utils import PipelineIterator


def _batches(items, size):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Pipeline:
    def __init__(self):
        self.model = Gpt()

    def __call__(self, inputs, tokens=2, batch_size=1):
        if isinstance(inputs, str):
            return self.run_single(inputs, tokens)
        dataset = PipelineIterator(inputs, self.preprocess)
        loader = _batches(iter(dataset), batch_size) if batch_size > 1 else dataset
        model = PipelineIterator(
            loader, lambda b: self.forward(b, tokens), batch_size if batch_size > 1 else None
        )
        final = PipelineIterator(model, self.postprocess)
        return list(final) if isinstance(inputs, list) else final

    def run_single(self, inputs, tokens):
        return self.postprocess(self.forward(self.preprocess(inputs), tokens))

    def preprocess(self, one):
        with stepscope.trace("tokenize"):
            return one

    def forward(self, batch, tokens):
        out = self.model.generate(tokens)
        return [out] * len(batch) if isinstance(batch, list) else out

    def postprocess(self, out):
        with stepscope.trace("decode"):
            return out


class TextGenerationPipeline(Pipeline):
    def __call__(self, inputs, tokens=2, batch_size=1):
        return super().__call__(inputs, tokens, batch_size)
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


def pipeline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[int]]:
    """Two eager calls of the stand-in pipeline, one given a list, one streamed item by item
    (a generator) and one streamed in model batches of 2 (7 steps): the run and the results.
    No framework bridge, no stack sampler: the stand-in's annotations only."""
    with fake_transformers(tmp_path / "pkgs", monkeypatch):
        base = importlib.import_module("transformers.pipelines.base")
        pipe = base.TextGenerationPipeline()
        stepscope.start(
            tmp_path / "logdir",
            stepscope.ProfilerOptions(device_tracer_level=0, python_sampler_hz=0),
        )
        try:
            results = [pipe("a", 3), pipe("b", 1), *pipe(["c", "d"], 1)]
            results += list(pipe((p for p in ["e", "f"]), 2))
            results += list(pipe((p for p in ["g", "h", "i"]), 1, batch_size=2))
        finally:
            run = stepscope.stop()
        assert not getattr(base.Pipeline.__dict__["__call__"], "_stepscope", False)
        pt_utils = sys.modules["transformers.pipelines.pt_utils"]
        assert not getattr(pt_utils.PipelineIterator.__dict__["__next__"], "_stepscope", False)
        assert not getattr(base.Pipeline.__dict__["forward"], "_stepscope", False)
    assert run is not None
    return run, results
