"""Where the shared fixtures are, and the files of the TensorFlow ones."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"


def tf_xplane(name: str) -> Path:
    """The .xplane.pb of a TensorFlow fixture folder (ctl, ctl_opt, keras, keras_marked, remote)."""
    return next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))


def ctl_run_dir(root: Path) -> Path:
    """A one-host run (host "h") under ``root``: a copy of the ctl fixture's XSpace."""
    run_dir = root / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl"), run_dir / "h.xplane.pb")
    return run_dir


# Whole-trace sweeps (every tool, two import paths compared event by event) take seconds per
# megabyte of Kineto JSON; on the fixtures above this size they run in the integration tier,
# while the small fixtures keep every path covered by the default run.
HEAVY_FIXTURE_BYTES = 500_000


def is_heavy(path: Path) -> bool:
    # A missing fixture is not heavy: the test itself then fails naming the file.
    return path.is_file() and path.stat().st_size > HEAVY_FIXTURE_BYTES


def by_size(paths: Sequence[Path]) -> list[Any]:
    """pytest params, one per fixture file (id: its name); heavy files marked integration."""
    return [
        pytest.param(
            path,
            id=path.name,
            marks=[pytest.mark.integration] if is_heavy(path) else [],
        )
        for path in paths
    ]
