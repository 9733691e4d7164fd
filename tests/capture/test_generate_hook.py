"""Each Hugging Face ``generate()`` call marked while a session records (decision 560): the
steps of a ``generate()`` loop under `stepscope.start` / `stop` are its calls. No transformers
here (a fake ``transformers.generation.utils``): the real loop is /tmp/infer13's, measured in
the decision."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import generate_hook
from stepscope.stats.steps.markers import find_step_markers
from tests.support.capture import events, load_run, named
from tests.support.fake_transformers import fake_transformers, pipeline_run

# device_tracer_level=0: no framework bridge (a torch imported by another test stays off)
OPTIONS = stepscope.ProfilerOptions(device_tracer_level=0, python_sampler_hz=0)


@pytest.fixture
def mixin(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """A fake ``GenerationMixin`` whose ``generate`` runs a traced 'forward' per token."""

    class GenerationMixin:
        def generate(self, tokens: int = 2) -> int:
            """The fake's docstring."""
            for _ in range(tokens):
                with stepscope.trace("forward"):
                    pass
            return tokens

    module = types.ModuleType("transformers.generation.utils")
    module.GenerationMixin = GenerationMixin  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers.generation.utils", module)
    try:
        yield GenerationMixin
    finally:
        generate_hook.uninstall()


def test_each_generate_call_is_a_step_of_its_own(mixin: Any, tmp_path: Path) -> None:
    class Gpt(mixin):  # type: ignore[misc,valid-type]
        pass

    class Whisper(mixin):  # type: ignore[misc,valid-type]
        def generate(self, tokens: int = 2) -> int:  # an override calling the base
            with stepscope.trace("encode"):
                pass
            return int(super().generate(tokens))

    original, override = mixin.__dict__["generate"], Whisper.__dict__["generate"]
    stepscope.start(tmp_path, OPTIONS)
    assert mixin.generate.__doc__ == "The fake's docstring."
    results = [Gpt().generate(3), Gpt().generate(1), Whisper().generate(2)]
    run = stepscope.stop()
    assert results == [3, 1, 2]
    # the methods are the program's own again
    assert mixin.__dict__["generate"] is original and Whisper.__dict__["generate"] is override
    profile = load_run(run)
    calls = named(profile, "GenerationMixin.generate")
    # the override's call and the base's inside it: two events, one step
    assert [c["stats"]["model"] for c in calls] == ["Gpt", "Gpt", "Whisper", "Whisper"]
    steps = find_step_markers(profile)
    assert steps.source == "serving" and len(steps) == 3
    forwards = named(profile, "forward")
    encode = named(profile, "encode")[0]
    assert steps.start_ns[2] <= encode["start_ns"] and encode["end_ns"] <= steps.end_ns[2]
    spans = zip(steps.start_ns.tolist(), steps.end_ns.tolist(), strict=True)
    assert [sum(b <= f["start_ns"] < e for f in forwards) for b, e in spans] == [3, 1, 2]
    assert not steps.staged  # a call is handed its batch: nothing before its forward is input


def test_nothing_is_wrapped_without_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "transformers.generation.utils", raising=False)
    assert generate_hook.install() == 0  # transformers never imported here: no error


def test_a_capture_without_annotations_wraps_nothing(mixin: Any, tmp_path: Path) -> None:
    original = mixin.__dict__["generate"]
    stepscope.start(tmp_path, OPTIONS.replace(host_tracer_level=0))
    assert mixin.__dict__["generate"] is original  # host_tracer_level=0 records no annotation
    stepscope.stop()


def test_a_call_made_while_nothing_records_is_not_recorded(mixin: Any, tmp_path: Path) -> None:
    generate_hook.install()
    assert generate_hook.install() == 0  # idempotent: one wrapper
    assert mixin.__dict__["generate"].__wrapped__.__qualname__.endswith("generate")
    assert mixin().generate(1) == 1  # wrapped, no session: the original's answer, no event
    generate_hook.uninstall()
    assert not getattr(mixin.__dict__["generate"], "_stepscope", False)


def test_transformers_imported_after_start_is_hooked_as_it_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script calling `stepscope.start` at its top imports transformers after it, and a
    model's module loads on first use (decision 615): each is hooked as it loads."""
    import importlib

    from stepscope.capture import import_watch

    with fake_transformers(tmp_path / "pkgs", monkeypatch):
        stepscope.start(tmp_path / "logdir", OPTIONS)
        try:
            speech = importlib.import_module("transformers.models.speech")
            results = [speech.Gpt().generate(3), speech.Whisper().generate(2)]
            import json  # another import meanwhile: untouched  # noqa: F401

            # nothing of the hook stays on the module
            assert type(speech.__loader__).__name__ == "SourceFileLoader"
            assert speech.__spec__.loader is speech.__loader__
        finally:
            run = stepscope.stop()
        base = sys.modules["transformers.generation.utils"].GenerationMixin
        assert not getattr(base.__dict__["generate"], "_stepscope", False)  # put back
        assert not getattr(speech.Whisper.__dict__["generate"], "_stepscope", False)
    assert not any(isinstance(f, import_watch.Watcher) for f in sys.meta_path)
    assert results == [3, 2]
    profile = load_run(run)
    calls = named(profile, "GenerationMixin.generate")
    assert [c["stats"]["model"] for c in calls] == ["Gpt", "Whisper", "Whisper"]
    steps = find_step_markers(profile)
    assert steps.source == "serving" and len(steps) == 2
    encode = named(profile, "encode")[0]  # the override's own work is in its step
    assert steps.start_ns[1] <= encode["start_ns"] and encode["end_ns"] <= steps.end_ns[1]


def test_a_broken_module_of_the_package_still_raises_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    with fake_transformers(tmp_path / "pkgs", monkeypatch) as root:
        (root / "transformers/models/broken.py").write_text("raise ValueError('from the module')\n")
        stepscope.start(tmp_path / "logdir", OPTIONS)
        try:
            with pytest.raises(ValueError, match="from the module"):
                importlib.import_module("transformers.models.broken")
        finally:
            stepscope.stop()


def test_a_pipeline_call_is_the_step_with_its_tokenizing_and_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``pipeline(...)`` object's call is the request its user times (decision 616): its
    tokenizing and decoding around ``generate()`` are in the step, the generate() in it is
    part of it, a list's items too. Given a generator (or a dataset) it returns an iterator
    whose work runs as it is iterated: each model batch it hands out is a step, its items'
    tokenizing, generate() and decoding in it (decision 650)."""
    run, results = pipeline_run(tmp_path, monkeypatch)
    assert results == [3, 1, 1, 1, 2, 2, 1, 1, 1]
    profile = load_run(run)
    calls = named(profile, "Pipeline.__call__")
    # the subclass's call and the base's inside it, per eager call; none for the lazy ones
    assert [c["stats"]["pipeline"] for c in calls] == ["TextGenerationPipeline"] * 6
    batches = named(profile, "Pipeline batch")
    assert [b["stats"]["items"] for b in batches] == [1, 1, 2, 1]
    assert {b["stats"]["pipeline"] for b in batches} == {"TextGenerationPipeline"}
    steps = find_step_markers(profile)
    assert steps.source == "serving" and len(steps) == 7
    assert "3 Hugging Face pipeline() calls" in steps.description
    assert "4 Hugging Face streamed pipeline() batches" in steps.description
    spans = list(zip(steps.start_ns.tolist(), steps.end_ns.tolist(), strict=True))
    for name, want in (("tokenize", [1, 1, 2, 1, 1, 2, 1]), ("decode", [1, 1, 2, 1, 1, 2, 1])):
        inside = [sum(b <= e["start_ns"] < end for e in named(profile, name)) for b, end in spans]
        assert inside == want, name
    forwards = named(profile, "forward")
    per_step = [sum(b <= f["start_ns"] < e for f in forwards) for b, e in spans]
    assert per_step == [3, 1, 2, 2, 2, 1, 1]
    # every event of the stand-in's work is in a step
    assert len(forwards) == 3 + 1 + 2 + 2 + 2 + 1 + 1


def test_each_request_is_a_step_root_for_xprof_numbered_as_stepscope_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outermost request on its thread carries ``_r`` and ``step_num`` (TensorFlow's step
    marker convention: XProf groups steps from such roots only); what nests in it carries
    neither, and stepscope reads the same steps as without them (decision 651)."""
    run, _ = pipeline_run(tmp_path, monkeypatch)
    profile = load_run(run)
    roots = [e for e in events(profile) if "_r" in (e["stats"] or {})]
    assert [(e["name"], e["stats"]["step_num"]) for e in roots] == [
        ("Pipeline.__call__", 0),
        ("Pipeline.__call__", 1),
        ("Pipeline.__call__", 2),
        ("Pipeline batch", 3),
        ("Pipeline batch", 4),
        ("Pipeline batch", 5),
        ("Pipeline batch", 6),
    ]
    steps = find_step_markers(profile)
    assert [r["start_ns"] for r in roots] == steps.start_ns.tolist()
    assert [r["end_ns"] for r in roots] == steps.end_ns.tolist()
    assert not any("_r" in (c["stats"] or {}) for c in named(profile, "GenerationMixin.generate"))
