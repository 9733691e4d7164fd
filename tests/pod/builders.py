"""Synthetic multi-host runs for the pod-scale tests, written to a temporary directory."""

from __future__ import annotations

import shutil
from pathlib import Path

from stepscope.xspace.synthetic import synthetic_xspace_bytes

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def cpu_pod(root: Path, hosts: int, events: int = 3000, corrupt: tuple[int, ...] = ()) -> Path:
    """A TensorFlow-layout run of ``hosts`` synthetic CPU hosts; the hosts in ``corrupt`` get
    bytes that are not an XSpace. Returns the run directory."""
    run = root / "plugins" / "profile" / "pod"
    run.mkdir(parents=True)
    for i in range(hosts):
        path = run / f"host{i:03d}.xplane.pb"
        if i in corrupt:
            path.write_bytes(b"\x0a\xff\xff\xff not an xspace" * 8)
        else:
            path.write_bytes(synthetic_xspace_bytes(events, ops_per_step=300, seed=i))
    return run


GPU_RANKS = ("kineto/a100_nccl_rank0.json.gz", "kineto/v100_training_with_memory.json.gz")


def gpu_pod(root: Path) -> Path:
    """Two real PyTorch GPU traces (collectives, memory events) as the ranks of one run."""
    root.mkdir(parents=True, exist_ok=True)
    for rank, relative in enumerate(GPU_RANKS):
        shutil.copy(FIXTURES / relative, root / f"rank{rank}.pt.trace.json.gz")
    return root
