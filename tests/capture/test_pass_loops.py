"""A plain PyTorch loop over a DataLoader for several passes (epochs), with only
``stepscope.start()`` / ``stop()`` around it, timing its own steps in the same run: the
inferred steps are the loop's iterations, not its passes (decisions 410-412)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.stats import build_step_db
from tests.support.capture import load_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

LOOP = """
import json, sys, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
import stepscope

class Items(Dataset):
    def __len__(self):
        return 12 * 16
    def __getitem__(self, i):
        end = time.perf_counter() + 0.0003  # CPU work per item, as decoding is
        while time.perf_counter() < end:
            pass
        return torch.full((64,), float(i)), i % 10

torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Items(), batch_size=16, shuffle=True, num_workers=2,
                    persistent_workers=sys.argv[2] == "persistent")
stepscope.start(sys.argv[1])
times = []
for epoch in range(int(sys.argv[3])):
    batches = iter(loader)
    while True:  # the loop's own clock: from asking for the batch to the update's end
        t0 = time.perf_counter_ns()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        times.append(time.perf_counter_ns() - t0)
print(json.dumps({"run": str(stepscope.stop()), "step_ns": times}))
"""


def _steps(tmp_path: Path, workers: str, epochs: int) -> tuple[Any, dict[str, Any]]:
    measured = run_script(LOOP, str(tmp_path), workers, str(epochs))
    return build_step_db(load_run(Path(measured["run"]))), measured


@pytest.mark.parametrize("workers", ["persistent", "per-pass"])
def test_a_loop_over_two_passes_has_the_steps_of_both(workers: str, tmp_path: Path) -> None:
    """Persistent workers, 2 passes of 12 steps: the sampler's ops (called at the start and
    at each pass's start) were the coarsest rhythm, 3 steps for 24 (decision 410)."""
    pytest.importorskip("torch")
    db, measured = _steps(tmp_path, workers, 2)
    assert len(measured["step_ns"]) == 24
    assert "DataLoader" in db.description, db.description
    # the end of the first pass (the fetch raising StopIteration, the next iterator) is no
    # step: it was a 25th (decision 413)
    assert len(db.dur_ns) == 24, (len(db.dur_ns), db.description)
    # the same run measured twice: the median step agrees within a share of itself (step 0
    # also holds the iterator's making, the workers' start, before the script's clock)
    median_ns = float(np.median(measured["step_ns"]))
    assert float(np.median(db.dur_ns)) == pytest.approx(median_ns, rel=0.2), db.description
