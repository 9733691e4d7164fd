"""What the store costs a command that keeps nothing (decision 314)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES
from tests.support.scripts import imported_by_first_overview


@pytest.mark.integration
def test_an_uncached_overview_imports_no_zipfile(tmp_path: Path) -> None:
    """`store.values` (imported by the tools) names zipfile only where it reads a stored
    entry: an analysing command that reads none does not pay its 5-8 ms import."""
    trace = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
    assert not imported_by_first_overview(trace, "zipfile", tmp_path, "-q")
