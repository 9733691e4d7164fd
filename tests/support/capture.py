"""Helpers for capture tests: load what a session saved, list its events."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.capture.save import ANNOTATION_STAT, SAMPLES_LINE
from stepscope.model import Profile, load_profile
from stepscope.vocab.profiler import THREAD_CPU_LINE

# the stack sampler's own lines: its stacks, and each sampled thread's CPU readings between
# two of its ticks (a session spanning two ticks, 80 ms at the default 25 Hz, has one)
_SAMPLER_LINES = (SAMPLES_LINE, THREAD_CPU_LINE)


def load_run(run_dir: Path | None) -> Profile:
    """The single host profile of a run directory."""
    assert run_dir is not None
    return load_profile(host_file(run_dir))


def deferred_files(stem: str) -> list[str]:
    """The files of host ``stem`` (``vm``, ``vm.rank0``) of a run saved by a capture with the
    PyTorch bridge: its trace kept to be merged at read (decision 910)."""
    return [f"{stem}.deferred.{suffix}" for suffix in ("meta", "pb", "trace")]


def host_file(run_dir: Path | str) -> Path:
    """The single host file of a run directory: an ``.xplane.pb``, or a deferred PyTorch
    save's ``.deferred.pb`` (decision 910; `load_profile` and `load_xspace` read it merged)."""
    files = sorted([*Path(run_dir).glob("*.xplane.pb"), *Path(run_dir).glob("*.deferred.pb")])
    assert len(files) == 1, files
    return files[0]


def main_thread_track(profile: Profile, name: str, id_bit: int) -> np.ndarray:
    """The event indices of the main thread's ``name`` line ("Python samples", "Thread CPU"),
    its layout checked: named for the thread, shown with it, its id the thread's with bit
    ``id_bit`` set."""
    main = threading.main_thread()
    [thread] = [ln for ln in profile.lines if ln.id == main.native_id]
    [line] = [ln for ln in profile.lines if ln.name == name]
    assert line.display_name == f"{name}: {thread.label}"
    assert line.display_id == thread.id and line.id == (1 << id_bit) + thread.id
    sl = profile.events_of_line(line)
    return np.arange(sl.start, sl.stop)


def events(profile: Profile) -> list[dict[str, Any]]:
    """Every event as a dict: name, line (thread) name and id, start, dur, stats (the event's
    own and its metadata's, less the annotation marker every `trace` name carries). The stack
    sampler's lines ("Python samples", "Thread CPU") are left out (see `samples`,
    `main_thread_track`)."""
    out = []
    for i in range(profile.n_events):
        line = profile.lines[int(profile.line[i])]
        if line.name in _SAMPLER_LINES:
            continue
        out.append(
            {
                "name": profile.event_name(i),
                "line": line.name,
                "tid": line.id,
                "start_ns": int(profile.start_ns[i]),
                "dur_ns": int(profile.dur_ns[i]),
                "end_ns": int(profile.end_ns[i]),
                "stats": {k: v for k, v in profile.event_stats(i).items() if k != ANNOTATION_STAT},
            }
        )
    return out


def named(profile: Profile, name: str) -> list[dict[str, Any]]:
    return [e for e in events(profile) if e["name"] == name]


def run_script(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter from the repository root; the JSON object it
    prints last."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
