"""Test modules share helpers through tests/support only: no test imports another test module
or a conftest (each would run or re-register the other's tests and fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
_BAD = re.compile(r"^\s*(from|import)\s+(tests\.\S*\.(test_\w+|conftest)|conftest)\b", re.M)


def test_no_test_module_imports_another_or_a_conftest() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}: {match.group(0).strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        for match in _BAD.finditer(path.read_text())
    ]
    assert offenders == []
