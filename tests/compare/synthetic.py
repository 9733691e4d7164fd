"""Run summaries made in code: per-step samples with known noise and known changes."""

from __future__ import annotations

import numpy as np

from stepscope.stats.compare import NamedRows, RunSummary
from stepscope.stats.events import CATEGORY_NAMES

MS = 1_000_000


def rows(names: list[str], self_ns: list[int], counts: list[int] | None = None) -> NamedRows:
    n = len(names)
    return NamedRows.aggregate(
        tuple(names),
        ("op",) * n,
        np.array(counts or [1] * n, np.int64),
        np.array(self_ns, np.int64),
        np.array(self_ns, np.int64),
    )


def summary(
    rng: np.random.Generator,
    steps: int = 50,
    noise: float = 0.05,
    input_ms: float = 2.0,
    compute_ms: float = 7.0,
    other_ms: float = 1.0,
    extra_input_ms: float = 0.0,
    extra_compute_ms: float = 0.0,
    run: str = "synthetic",
    memory_peak_bytes: int | None = 1_000_000_000,
) -> RunSummary:
    """A run of ``steps`` steps of about 10 ms; each step is scaled by 1 + noise * N(0, 1)
    (so the step time has ``noise`` relative spread), plus the extra time in its category."""
    factor = 1.0 + noise * rng.standard_normal(steps)
    cats = {c: np.zeros(steps, np.int64) for c in CATEGORY_NAMES}
    cats["input"] = np.round((input_ms * factor + extra_input_ms) * MS).astype(np.int64)
    cats["device_compute"] = np.round((compute_ms * factor + extra_compute_ms) * MS).astype(
        np.int64
    )
    cats["other"] = np.round(other_ms * factor * MS).astype(np.int64)
    dur = sum(cats.values())
    start = np.concatenate([[0], np.cumsum(dur)[:-1]]).astype(np.int64)
    stage_ms = input_ms + extra_input_ms
    return RunSummary(
        run=run,
        host="host0",
        framework="tensorflow",
        step_source="marker",
        step_description=f"{steps} synthetic steps",
        step_num=np.arange(steps, dtype=np.int64),
        step_names=tuple(f"train {k}" for k in range(steps)),
        step_start_ns=start,
        step_dur_ns=dur,
        category_ns=cats,
        host_ops=rows(
            ["Iterator::Root::Batch::Map", "model/dense/MatMul"],
            [int(stage_ms * steps * MS), int(0.5 * steps * MS)],
        ),
        device_ops=rows(
            ["fusion.3", "convolution.7"],
            [
                int((compute_ms * 0.6 + extra_compute_ms) * steps * MS),
                int(compute_ms * 0.4 * steps * MS),
            ],
        ),
        kernels=NamedRows.empty(),
        input_stages=rows(["Iterator::Root::Batch::Map"], [int(stage_ms * steps * MS)]),
        memory_peak_bytes=memory_peak_bytes,
        tensor_core_percent=None,
        hosts=("host0",),
        profile_steps=steps,
    )


def with_warmup(s: RunSummary, *first_ms: float) -> RunSummary:
    """``s`` whose first steps are warm-up steps of ``first_ms`` (their time compiling), as
    `build_run_summary` marks them."""
    from dataclasses import replace

    from stepscope.stats.warmup import warmup_count

    k = len(first_ms)
    cats = {c: v.copy() for c, v in s.category_ns.items()}
    for c in cats:
        cats[c][:k] = 0
    cats["compilation"][:k] = np.round(np.array(first_ms) * MS).astype(np.int64)
    dur = sum(cats.values())
    warmup = warmup_count(dur, mid_run=False)
    assert warmup == k, f"{first_ms} ms are no warm-up beside these steps"
    return replace(s, step_dur_ns=dur, category_ns=cats, warmup_steps=warmup)
