"""What the Python stack sampler saw in the warm-up steps, in the warm-up's sentence
(decision 483): a cause by XProf's category ("mostly all others") says where the first
step's time went, not what ran there. Synthetic profiles built in code."""

from __future__ import annotations

from pathlib import Path

from stepscope.model import open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS
from tests.support.fetch_loop import LOOP, TRAIN, sampled_main

STEPS = 12
ITER = f"{LOOP};__iter__ (dataloader.py:500);_get_iterator (dataloader.py:438)"
START = f"{ITER};__init__ (dataloader.py:1176);start (process.py:121)"


def _loop(workers: bool = True, start_samples: int = 6) -> XSpaceBuilder:
    """Marked steps of a 10 ms model op (the first and last left out, XProf's rule); step
    1, the first kept, first spends 60 ms untraced in the
    DataLoader's iter() (the sampler sees it ``start_samples`` times), as a loader starting
    its worker processes does; ``workers``: their batches were captured."""
    builder, main, samples = sampled_main()
    if workers:
        line = builder.plane("/host:CPU").line(100, "DataLoader worker 0 (pid 100)")
        for k in range(STEPS):
            line.event("Iterator::DataLoader(Slow)::Worker", k * 20 * MS, 5 * MS)
    t = 0
    for k in range(STEPS):
        extra = 60 if k == 1 else 0
        main.event("train", t * MS, (extra + 10) * MS, {"step_num": k, "_r": 1})
        if extra:
            stats = {"stack": START, "samples": start_samples}
            samples.event("start (process.py:121)", t * MS, extra * MS, stats)
        main.event("aten::mm", (t + extra) * MS, 10 * MS)
        samples.event("forward", (t + extra) * MS, 10 * MS, {"stack": TRAIN, "samples": 2})
        t += extra + 10
    return builder


def _statement(builder: XSpaceBuilder, tmp_path: Path) -> str:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(builder.build(), run_dir / "py.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    page = output.to_json(get_tool("overview_page").build(ctx))
    return str(page["steady_state"]["statement"])


def test_the_warmup_says_the_loader_started_its_workers(tmp_path: Path) -> None:
    """It said "mostly all others" and nothing of the DataLoader."""
    said = _statement(_loop(), tmp_path)
    assert said.startswith("Warm-up: step 1 took 70.00 ms")
    assert (
        "mostly all others; the stack sampler saw there, more than once warm, the DataLoader "
        "starting its worker processes (start (process.py), 6 of its 8 samples there); "
        "once warm"
    ) in said


def test_without_captured_workers_it_is_the_loaders_iterator(tmp_path: Path) -> None:
    said = _statement(_loop(workers=False), tmp_path)
    assert "the DataLoader making its iterator (iter()) (start (process.py), 6 of" in said


def test_one_sample_names_nothing_nor_what_every_step_runs(tmp_path: Path) -> None:
    """One sample in the loader's iter(); the model's op, in 2 of the step's 3 samples,
    holds as large a share of the later steps' samples: neither is named."""
    said = _statement(_loop(start_samples=1), tmp_path)
    assert "mostly all others; once warm" in said
