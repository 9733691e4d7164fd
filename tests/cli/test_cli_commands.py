"""The explicit command list covers every command module, and `--help` imports no tool."""

from __future__ import annotations

import pkgutil

import pytest

import stepscope.cli.commands as commands
from stepscope.cli.main import COMMANDS
from tests.support.scripts import fresh_python


def test_every_command_module_is_listed() -> None:
    assert set(COMMANDS) == {m.name for m in pkgutil.iter_modules(commands.__path__)}


@pytest.mark.integration  # a fresh interpreter
def test_help_builds_the_parser_without_heavy_imports() -> None:
    code = (
        "import sys; from stepscope.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('numpy', 'stepscope.tools.registry', 'stepscope.model') "
        "if m in sys.modules))"
    )
    assert fresh_python(code) == "[]"


@pytest.mark.integration  # a fresh interpreter
def test_import_stepscope_stays_cheap() -> None:
    """A training script pays for `import stepscope` at every start: no NumPy, typing,
    logging or pathlib (each costs as much as the rest of the import)."""
    code = (
        "import sys, stepscope; "
        "print(sorted(m for m in ('numpy', 'typing', 'logging', 'pathlib') if m in sys.modules))"
    )
    assert fresh_python(code) == "[]"
