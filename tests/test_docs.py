"""The documentation stays true to the code: README.md's tool list is generated from the tool
registry (scripts/gen_readme.py), and comments cite what they rely on, not a document outside
the repository."""

from __future__ import annotations

import runpy

from tests.support.fixtures import REPO

GEN = runpy.run_path(str(REPO / "scripts" / "gen_readme.py"))


def test_readme_lists_every_registered_tool() -> None:
    text = (REPO / "README.md").read_text()
    assert GEN["rewritten"](text) == text, "run: python scripts/gen_readme.py"
    from stepscope.tools.registry import all_tools

    for spec in all_tools():
        assert f"[`{spec.name}`](docs/tools/{spec.name}.md)" in text
        assert (REPO / "docs" / "tools" / f"{spec.name}.md").is_file()


def test_no_citation_of_a_document_outside_the_repository() -> None:
    """Comments once cited sections of a seed document that is not in the repository."""
    needle = "REFERENCE " + "\N{SECTION SIGN}"
    cited = [
        f"{path.relative_to(REPO)}:{n}"
        for top in ("src", "tests", "docs", "scripts", "benchmarks")
        for path in sorted((REPO / top).rglob("*"))
        if path.suffix in (".py", ".md", ".js", ".c", ".h")
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if needle in line
    ]
    assert cited == []
