"""A PyTorch loop whose DataLoader has worker processes, measuring its own truth.

    python -m tests.support.loader_job LOGDIR --context fork|spawn [--item-ms 5] [--steps 12]

The loop calls ``stepscope.start(LOGDIR)``, iterates ``for step, batch in
stepscope.steps(loader)`` with ``num_workers=2`` and writes ``truth.json`` beside the run:
per step the time the loop waited for its batch as a training script times it
(time.perf_counter in the same run): from the previous step's end, the first from the line
before the ``for`` (so it holds the loader's ``iter()``, its workers' start; decision 635).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch


class Slow(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, item_s: float) -> None:
        self.item_s = item_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.item_s)
        return torch.full((16,), float(i))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("logdir")
    p.add_argument("--context", default="fork")
    p.add_argument("--item-ms", type=float, default=5.0)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    args = p.parse_args(argv)
    import stepscope

    loader = torch.utils.data.DataLoader(
        Slow(args.item_ms / 1e3),
        batch_size=args.batch,
        num_workers=2,
        multiprocessing_context=args.context,
    )
    stepscope.start(args.logdir)
    fetch_s: list[float] = []
    t0 = time.perf_counter()
    for step, batch in stepscope.steps(loader):
        fetch_s.append(time.perf_counter() - t0)
        assert batch.shape == (args.batch, 16)
        if step + 1 == args.steps:
            break
        t0 = time.perf_counter()  # the step's end: the next one's fetch begins
    run = stepscope.stop()
    Path(args.logdir, "truth.json").write_text(json.dumps({"fetch_s": fetch_s, "run": str(run)}))


if __name__ == "__main__":
    main()
