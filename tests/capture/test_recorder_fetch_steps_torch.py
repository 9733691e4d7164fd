"""A real torch DataLoader loop, unmarked, under the flight recorder: its steps are the
training loader's fetches (decision 815), its worker processes and an evaluation every 10
steps included. No timing is read: the steps' numbers, bounds and fetches are."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest

from stepscope.capture.recorder.fetch_steps import STAGE_NAME
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS
from tests.support.capture import load_run, named
from tests.support.scripts import run_script

pytestmark = [
    pytest.mark.integration,
    pytest.mark.untimed,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

# torch is imported after the recorder starts: the hook waits for its DataLoader module
SCRIPT = """
import json, sys
import stepscope.recorder as rec

recorder = rec.start(sys.argv[1], keep_steps=200,
                     triggers=rec.Triggers(slow_step_factor=0, hang_s=0))
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
train = DataLoader(TensorDataset(torch.randn(24 * 8, 8), torch.randn(24 * 8, 1)),
                   batch_size=8, num_workers=2)
val = DataLoader(TensorDataset(torch.randn(3 * 8, 8), torch.randn(3 * 8, 1)), batch_size=8)
net = nn.Linear(8, 1)
opt = torch.optim.SGD(net.parameters(), 0.01)
evals = 0
for epoch in range(2):
    for i, (x, y) in enumerate(train):
        opt.zero_grad(); nn.functional.mse_loss(net(x), y).backward(); opt.step()
        if i % 10 == 9:  # an evaluation inside the step, gradients off
            with torch.no_grad():
                evals += sum(1 for _ in val)
    with torch.no_grad():  # and one after each pass
        evals += sum(1 for _ in val)
saved = str(rec.save("the end").result(120))
status = recorder.status()
hook = recorder.fetch_steps
rec.stop()
cls = torch.utils.data.dataloader._BaseDataLoaderIter
print(json.dumps({"saved": saved, "errors": hook.errors, "steps": hook.steps, "evals": evals,
                  "unhooked": not hasattr(cls.__next__, "_stepscope_steps")}))
"""


def test_an_unmarked_dataloader_loop_s_steps_are_its_training_fetches(tmp_path: Path) -> None:
    out = run_script(SCRIPT, str(tmp_path))
    assert out["errors"] == 0 and out["unhooked"]
    assert out["evals"] == 2 * (2 + 1) * 3
    profile = load_run(Path(out["saved"]))
    steps = named(profile, "train")
    assert [s["stats"]["step_num"] for s in steps] == list(range(48))  # 2 passes of 24
    assert out["steps"] == 48
    # contiguous within a pass: each ends where the next batch's fetch begins
    for a, b in itertools.pairwise(steps):
        if b["stats"]["step_num"] != 24:
            assert a["end_ns"] == b["start_ns"]
    # the training loader's fetches only, its pass's end included; the evaluations' fetches
    # are the work of the step (or of the time between passes) they ran in
    fetches = named(profile, GET_NEXT_KERNELS[0])
    assert len(fetches) == 48 + 2
    assert len(named(profile, STAGE_NAME)) == 50
    step_starts = {s["start_ns"] for s in steps}
    assert all(f["start_ns"] in step_starts for f in fetches[:24])
