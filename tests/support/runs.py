"""Runs made by tests: a folder of unrelated fixture traces taken as one run."""

from __future__ import annotations

import os
from pathlib import Path

from stepscope.model import Run, discover_runs


def whole_folder(path: str | os.PathLike[str]) -> Run:
    """Every trace of ``path`` as one run, whenever each was recorded. Tests build pods from
    fixture traces recorded months apart, which discovery splits into a run per recording
    (decision 186); a run directory of one recording is returned as discovery names it."""
    folder = Path(path)
    runs = [r for r in discover_runs(str(folder)) if Path(r.path).resolve() == folder.resolve()]
    if len(runs) == 1:
        return runs[0]
    hosts = tuple(sorted((h for r in runs for h in r.hosts), key=lambda h: h.host))
    return Run(folder.name, str(folder), hosts)
