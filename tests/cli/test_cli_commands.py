"""The explicit command list covers every command module, and `--help` imports no tool."""

from __future__ import annotations

import pkgutil

import pytest

import stepscope.cli.commands as commands
from stepscope.cli.main import COMMANDS
from tests.support.scripts import fresh_python

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


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


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", ".", "--port", "-5"], "'-5' is not a port"),
        (["serve", ".", "--port", "70000"], "'70000' is not a port"),
        (["demo", "--serve", "--port", "65536"], "'65536' is not a port"),
        (["report", ".", "--top", "-3"], "'-3' is not a count"),
        (["info", ".", "--top", "0"], "'0' is not a count"),
    ],
)
def test_a_port_or_a_count_out_of_range_is_one_usage_line(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stepscope serve LOGDIR --port -5` ended in a traceback ("OverflowError: bind(): port
    must be 0-65535"), `demo --serve` too; `report --top -3` and `info --top -2` left out
    the last rows, as a Python slice does. Each is now argparse's usage error (status 2)."""
    from stepscope.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
