"""A profile's first build keeps freed memory in a `stepscope serve` process only (decision
1018): there, blocks up to 32 MiB rest in the heap (decision 335), so a 10M-event trace
index's 40-80 MB temporaries were each a fresh mapping the kernel zeroed; inside
`malloc.building` they are reused, and after it the process rests at its own thresholds
again. In any other process (the library in a user's program) `building` changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from stepscope.executor import malloc
from tests.support.mallinfo import MALLINFO2

pytestmark = [pytest.mark.integration, pytest.mark.untimed]

CHURN = (
    MALLINFO2
    + r"""
import json, sys
import numpy as np
from stepscope.executor import malloc

def churn():  # an index build's pattern: 64 MB temporaries made, written and freed
    for _ in range(4):
        a = np.empty(8 << 20)
        a.fill(1.0)
        del a

def mapped_mb():  # a live 64 MB array: its own mapping (hblkhd) or from the heap (0)
    a = np.empty(8 << 20)
    a.fill(1.0)
    found = mallinfo2().hblkhd / (1 << 20)
    del a
    return found

if sys.argv[1] == "serve":
    from stepscope.cli import malloc as cli_malloc
    assert cli_malloc.serve_settings()
found = {"before": mapped_mb()}
with malloc.building():
    churn()
    found["inside"] = mapped_mb()
    found["heap_inside"] = mallinfo2().arena / (1 << 20)
found["after"] = mapped_mb()
found["heap_after"] = mallinfo2().arena / (1 << 20)
print(json.dumps(found))
"""
)


def _run(mode: str) -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX"):
        env.pop(name, None)
    env.pop("GLIBC_TUNABLES", None)
    env.pop(malloc.ENV_VAR, None)
    done = subprocess.run(
        [sys.executable, "-c", CHURN, mode], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(malloc.functions() is None, reason="needs glibc's mallopt and malloc_trim")
def test_a_serve_process_keeps_freed_memory_while_it_builds_only() -> None:
    serve = _run("serve")
    # resting at serve's 32 MiB: a 64 MB array is its own mapping, before and after
    assert serve["before"] >= 64 and serve["after"] >= 64
    # building: from the heap, which keeps what the churn freed; given back after
    assert serve["inside"] < 64 and serve["heap_inside"] >= 64
    assert serve["heap_after"] < 64


@pytest.mark.skipif(malloc.functions() is None, reason="needs glibc's mallopt and malloc_trim")
def test_building_changes_nothing_in_a_users_process() -> None:
    plain = _run("library")
    assert plain["inside"] >= 64 and plain["heap_inside"] < 64
