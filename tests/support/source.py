"""The package's own Python source, read and parsed once per test session.

Several rule tests walk every module's syntax tree (framework names only in `vocab`, no
printing outside the CLI, interfaces only through `Analysis`); parsing the ~330 modules
costs about a second of CPU, which each of them would otherwise pay again, and each walk of
all their nodes (`ast.walk`, 0.4 s) is made once too: `Module.nodes` (decision 695).
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
    nodes: tuple[ast.AST, ...]  # every node of the tree, in `ast.walk`'s order


@functools.cache
def modules() -> tuple[Module, ...]:
    """Every ``*.py`` under ``src/stepscope``, sorted by path. Callers must not change the
    trees (they are shared)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text, str(path))
        found.append(Module(path, path.relative_to(SRC), text, tree, tuple(ast.walk(tree))))
    return tuple(found)
