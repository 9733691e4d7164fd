"""The package's own Python source, read and parsed once per test session.

Several rule tests walk every module's syntax tree (framework names only in `vocab`, no
printing outside the CLI, interfaces only through `Analysis`); parsing the ~330 modules
costs about a second of CPU, which each of them would otherwise pay again, and each walk of
all their nodes (`ast.walk`, 0.4 s) is made once too: `Module.nodes` (decision 695).
"""

from __future__ import annotations

import ast
import functools
import gc
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
    # The trees are ~630,000 objects the collector tracks, kept to the session's end: made
    # with it off (its passes over them as they were made were a third of the parse), then
    # frozen, out of what each later full collection walks (0.44 s a collection; the
    # default tier makes a dozen). Decision 715.
    enabled = gc.isenabled()
    gc.disable()
    try:
        found = []
        for path in sorted(SRC.rglob("*.py")):
            text = path.read_text()
            tree = ast.parse(text, str(path))
            found.append(Module(path, path.relative_to(SRC), text, tree, tuple(ast.walk(tree))))
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return tuple(found)
