"""One loader for the C accelerators (`stepscope.accelerators`, issue #29): build stamps, the
one switch, one warning for a stale or missing build, `stepscope --version`."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from stepscope import accelerators
from tests.support.native import require

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader as a new process finds it: nothing imported or warned yet."""
    monkeypatch.setattr(accelerators, "_loaded", {})
    monkeypatch.setattr(accelerators, "_digests", {}, raising=False)
    monkeypatch.setattr(accelerators, "_warned", False)
    monkeypatch.setenv(accelerators.ENV_VAR, "0")


def test_each_built_extension_carries_the_hash_of_its_sources() -> None:
    require()
    for name in accelerators.EXTENSIONS:
        module = accelerators._load(name)[1]
        assert module is not None
        assert accelerators.source_hash(name) == module.BUILD_HASH, name


@pytest.mark.parametrize(
    ("value", "off"),
    [
        ("", set()),
        ("0", set()),
        ("1", set(accelerators.EXTENSIONS)),
        ("all", set(accelerators.EXTENSIONS)),
        ("_kscan", {"_kscan"}),
        (" _kscan , _fastwire", {"_kscan", "_fastwire"}),
    ],
)
def test_the_switch_covers_every_extension(
    value: str, off: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(accelerators.ENV_VAR, value)
    assert {n for n in accelerators.EXTENSIONS if accelerators.switched_off(n)} == off
    for name in off:
        assert accelerators.get(name) is None
        assert accelerators.state(name) == "off"


def test_a_stale_or_missing_build_is_not_used_and_said_once(
    fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib

    real = importlib.import_module

    def fake(name: str) -> object:
        if name.endswith("._kscan"):
            return types.SimpleNamespace(BUILD_HASH="0123456789abcdef")  # older sources
        if name.endswith("._fastwire"):
            raise ImportError("not built")
        return real(name)

    monkeypatch.setattr(importlib, "import_module", fake)
    with caplog.at_level("WARNING", logger="stepscope"):
        assert accelerators.get("_kscan") is None
        assert accelerators.get("_fastwire") is None
        assert accelerators.get("_kscan") is None
    assert accelerators.state("_kscan") == "stale"
    assert accelerators.state("_fastwire") == "missing"
    lines = [r.getMessage() for r in caplog.records if "C accelerators" in r.getMessage()]
    assert len(lines) == 1  # one line for the process, naming every one and the command
    assert "_kscan (stale)" in lines[0] and "_fastwire (missing)" in lines[0]
    assert accelerators.rebuild_command() in lines[0] and "\n" not in lines[0]


def test_switched_off_extensions_are_neither_imported_nor_warned_about(
    fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib

    def refuse(name: str) -> object:
        raise AssertionError(f"imported {name}")

    monkeypatch.setattr(importlib, "import_module", refuse)
    monkeypatch.setenv(accelerators.ENV_VAR, "1")
    with caplog.at_level("WARNING", logger="stepscope"):
        for name in accelerators.EXTENSIONS:
            assert accelerators.get(name) is None
    assert not caplog.records


def test_version_lists_each_accelerator_and_its_state(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stepscope.cli.main import main

    monkeypatch.setenv(accelerators.ENV_VAR, "_kscan")
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("stepscope ")
    for name in accelerators.EXTENSIONS:
        line = next(x for x in out.splitlines() if x.split()[:1] == [name])
        state = line.split()[1]
        assert state == accelerators.state(name)
    assert re.search(r"_kscan\s+off .*STEPSCOPE_PURE_PYTHON", out)


def test_setup_builds_the_table_and_nothing_else() -> None:
    """setup.py reads `EXTENSIONS` (one table); every C source of the package is in it."""
    sources = {str(p.relative_to(ROOT / "src" / "stepscope")) for p in ROOT.glob("src/**/*.c")}
    listed = {s for ext in accelerators.EXTENSIONS.values() for s in ext.sources}
    assert sources == listed
    headers = {str(p.relative_to(ROOT / "src" / "stepscope")) for p in ROOT.glob("src/**/*.h")}
    assert headers <= {d for ext in accelerators.EXTENSIONS.values() for d in ext.depends}


def test_only_the_loader_imports_an_extension() -> None:
    """No module imports an extension by name (a test module would then fail to import
    without C) or tests it for attributes (a stamped build has them all)."""
    names = "|".join(accelerators.EXTENSIONS)
    pattern = re.compile(rf"import ({names})\b|\.({names})\b import|hasattr\(\w*({names})")
    offenders = []
    for folder in ("src", "tests", "benchmarks", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "accelerators.py":
                continue
            text = path.read_text()
            if pattern.search(text):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_fingerprint_follows_the_states_without_loading_any(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kept intermediates are keyed by it (decision 201): loading _kscan imports the Kineto
    # reader, _pytracer the capture package, in a command that needs neither
    import importlib

    def refuse(name: str) -> object:
        raise AssertionError(f"imported {name}")

    monkeypatch.setattr(importlib, "import_module", refuse)
    monkeypatch.delenv(accelerators.ENV_VAR, raising=False)
    seen = {accelerators.fingerprint()}
    assert accelerators.fingerprint() in seen  # the same in every process
    for value in ("_kscan", "_fastwire,_pytracer", "1"):
        monkeypatch.setenv(accelerators.ENV_VAR, value)
        seen.add(accelerators.fingerprint())
    assert len(seen) == 4


def test_the_sources_are_read_once_per_process(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 299: every kept intermediate's key asks for the fingerprint; the sources
    behind it are read and digested once, as an extension is loaded once."""
    import builtins

    reads: list[str] = []

    def counting_open(path: str, *args: object, **kwargs: object) -> object:
        reads.append(str(path))
        return builtins.open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(accelerators, "open", counting_open, raising=False)
    monkeypatch.delenv(accelerators.ENV_VAR, raising=False)
    first = accelerators.fingerprint()
    once = sorted(reads)  # each extension's sources and headers (shared headers too)
    assert once
    assert accelerators.fingerprint() == first
    assert sorted(reads) == once  # no source read again
