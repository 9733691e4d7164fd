"""A worker task keeps glibc's freed memory while it runs and gives it back after (decision
131): in a process started as Dask starts its workers (MALLOC_TRIM_THRESHOLD_=65536), large
temporaries made and freed inside `keep_freed_memory` are reused instead of faulted in again,
and after the block the process's own setting holds again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from stepscope.executor import malloc

pytestmark = [pytest.mark.integration, pytest.mark.untimed]

CHURN = r"""
import ctypes, json
import numpy as np
from stepscope.executor.malloc import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2

def heap_mb():  # the main heap's size: memory malloc keeps instead of mapping per block
    return mallinfo2().arena / (1 << 20)

def churn():  # an analysis's pattern: full-size temporaries made, written and freed
    for _ in range(5):
        a = np.empty(2 << 20)  # 16 MB
        a.fill(1.0)
        del a

churn()
found = {"before": heap_mb()}
with keep_freed_memory():
    churn()
    found["inside"] = heap_mb()
found["after_block"] = heap_mb()
churn()
found["after"] = heap_mb()
print(json.dumps(found))
"""


def _heap_mb(env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHURN], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(malloc.functions() is None, reason="needs glibc's mallopt and malloc_trim")
def test_freed_memory_is_kept_inside_the_block_only() -> None:
    env = {**os.environ, malloc.DASK_TRIM_ENV: "65536", "OPENBLAS_NUM_THREADS": "1"}
    env.pop(malloc.ENV_VAR, None)
    found = _heap_mb(env)
    # Dask's setting: each 16 MB temporary is its own mapping, unmapped when freed
    assert found["before"] < 16 and found["after"] < 16
    # in the block: kept in the heap for the next one; given back when the block ends
    assert found["inside"] >= 16
    assert found["after_block"] < 16
    off = _heap_mb({**env, malloc.ENV_VAR: "dask"})  # STEPSCOPE_WORKER_MALLOC=dask
    assert off["inside"] < 16
