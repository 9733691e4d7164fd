"""The documentation stays true to the code: comments cite what they rely on, not a document
outside the repository."""

from __future__ import annotations

from tests.support.fixtures import REPO


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
