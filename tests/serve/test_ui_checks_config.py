"""The web UI's static checks (ESLint, tsc with checkJs; run by scripts/test.sh) cover every file.

tsc only type-checks what jsconfig.json includes, and a file without `// @ts-check` would lose
its checks in an editor that does not read the jsconfig, so both are kept true here.
"""

import json
from pathlib import Path

import stepscope.serve

REPO = Path(__file__).resolve().parents[2]
STATIC = Path(stepscope.serve.__file__).parent / "static"


def _ui_modules() -> list[Path]:
    return sorted(STATIC.rglob("*.js"))


def test_every_ui_module_opts_into_type_checking() -> None:
    modules = _ui_modules()
    assert modules
    missing = [
        str(p.relative_to(STATIC))
        for p in modules
        if not p.read_text().startswith("// @ts-check\n")
    ]
    assert missing == [], f"add '// @ts-check' as the first line of: {missing}"


def test_checks_cover_the_static_folder_and_pin_their_tools() -> None:
    config = json.loads((REPO / "jsconfig.json").read_text())
    assert config["compilerOptions"]["checkJs"] is True
    assert config["compilerOptions"]["strictNullChecks"] is True
    assert "src/stepscope/serve/static/**/*.js" in config["include"]
    package = json.loads((REPO / "package.json").read_text())
    for name, version in package["devDependencies"].items():
        assert version[0].isdigit(), f"{name} must be pinned exactly, not {version!r}"
    assert "src/stepscope/serve/static" in package["scripts"]["lint"]


def test_fully_typed_modules_are_checked_without_implicit_any() -> None:
    """jsconfig.strict.json lists the modules typed completely (noImplicitAny); test.sh runs it,
    so a parameter added there without a JSDoc type fails CI."""
    strict = json.loads((REPO / "jsconfig.strict.json").read_text())
    assert strict["extends"] == "./jsconfig.json"
    assert strict["compilerOptions"]["noImplicitAny"] is True
    assert "src/stepscope/serve/static/util.js" in strict["include"]
    assert "tsc --noEmit -p jsconfig.strict.json" in (REPO / "scripts" / "test.sh").read_text()
