"""The package's own Python source, read and parsed once per test session.

Several rule tests walk every module's syntax tree (framework names only in `vocab`, no
printing outside the CLI, interfaces only through `Analysis`); parsing the ~330 modules
costs about a second of CPU, which each of them would otherwise pay again.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import NamedTuple

SRC = Path(__file__).resolve().parents[2] / "src" / "stepscope"


class Module(NamedTuple):
    path: Path
    where: Path  # relative to the package's folder
    text: str
    tree: ast.Module


@functools.cache
def modules() -> tuple[Module, ...]:
    """Every ``*.py`` under ``src/stepscope``, sorted by path. Callers must not change the
    trees (they are shared)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        found.append(Module(path, path.relative_to(SRC), text, ast.parse(text, str(path))))
    return tuple(found)
