"""Library code never prints: messages go through the ``stepscope`` logger and progress
through callbacks, so users can silence them; only the CLI (and the logger's own handler)
writes to the terminal."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tests.support import source

RENDERERS = {"cli", "log.py"}  # the CLI draws progress; log.py is the logger's handler


def _is_print(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and func.id == "print"


def _is_std_write(func: ast.expr) -> bool:
    """``sys.stdout.write`` or ``sys.stderr.write``."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "write"
        and isinstance(func.value, ast.Attribute)
        and func.value.attr in ("stdout", "stderr")
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "sys"
    )


def _writes(nodes: Iterable[ast.AST]) -> list[int]:
    return [
        node.lineno
        for node in nodes
        if isinstance(node, ast.Call) and (_is_print(node.func) or _is_std_write(node.func))
    ]


def test_no_library_module_prints() -> None:
    offenders = [
        f"{module.where}:{line}"
        for module in source.modules()
        if module.where.parts[0] not in RENDERERS
        for line in _writes(module.nodes)
    ]
    assert offenders == []
