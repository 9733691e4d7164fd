"""The findings of steps whose thread waits for a CPU core, with what to change: one host's
(decision 700) and a job's whose every rank waits (decision 687: the whole job, not one rank,
`stats.stragglers_cores`).

A thread runnable but off its core is in no traced event's name: its ops simply take longer,
so the step-time breakdown calls the wait compute (or whatever op it fell in) and the advice
would be to make the model faster. The stack sampler reads the thread's time on a core and
runnable (`stats.host.thread_cpu`), which tells the wait apart."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.diagnostics.base import Finding, HostData, severity
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.stats.stragglers_cores import CORE_WAIT, CORES_FIX, cores_wait
from stepscope.stats.stragglers_types import Rank

HIGH_WAIT = 0.5  # runnable, not running, half the steps' time: high
SLOW_WAITED = 0.5  # slow steps' runnable time beyond the others', this share of their loss
SLOW_WAITED_FIX = (
    "Those steps waited for a CPU core: find what else ran then (another process, the "
    "DataLoader's workers, a thread of the program's own: top, pidstat -t 1) and give the "
    "training process its cores (fewer threads or workers beside it, other jobs elsewhere)."
)
HOST_FIX = (
    "Give the process at most as many busy threads as the machine has cores "
    "(torch.set_num_threads or OMP_NUM_THREADS, fewer DataLoader workers, tf.config.threading "
    "for TensorFlow) and stop other processes that compete for its cores (top, pidstat -t 1); "
    "then profile again: the step's parts are read without the wait."
)


def steps_waited(cpu: ThreadCpu, steps: StepDb) -> tuple[float, float, float] | None:
    """(runnable share, on-a-core share, runnable ns) of one host's steps' thread (``cpu``:
    its readings) when it was runnable but waiting for a core `CORE_WAIT` of its steps' time
    at least (decision 700); else None. The finding and the headline's words read it."""
    if not steps.n_steps:
        return None
    found = cpu.shares(steps.start_ns, steps.start_ns + steps.dur_ns)
    return found if found is not None and found[0] >= CORE_WAIT else None


def waiting_first(headline: str, runnable: float) -> str:
    """One host's headline with its steps' thread's wait for a core (``runnable``: its share
    of the steps' time, `steps_waited`) said before its parts, which all include the wait:
    the overview's, `stepscope summary`'s and the Compare page's (decision 1063)."""
    return (
        f"Waiting for a CPU core: the steps' thread was runnable but off its core "
        f"{100 * runnable:.0f}% of the step time (the stack sampler's readings), and every "
        f"part below includes that wait. {headline}"
    )


def host_cores_wait(data: HostData, options: dict[str, str]) -> Finding | None:
    """One host's steps' thread runnable but waiting for a core `CORE_WAIT` of its steps'
    time at least (decision 700)."""
    steps = data.steps
    found = steps_waited(data.steps_cpu, steps)
    if found is None:
        return None
    runnable, on_cpu, runnable_ns = found
    step_ms = float(np.median(steps.dur_ns)) / 1e6
    return Finding(
        id="cores_wait",
        title="The steps' thread waits for a CPU core",
        severity=severity(runnable, 0.0, HIGH_WAIT) or "medium",
        host=data.host,
        summary=(
            f"The steps' thread was runnable but waiting for a core {runnable:.0%} of the "
            f"steps' time and on a core {on_cpu:.0%} (the stack sampler's CPU readings): this "
            "process's threads and the machine's other processes want more cores than it has, "
            f"so the steps (median {step_ms:.2f} ms) are mostly this wait, and the compute and "
            "the other parts of the step-time breakdown include it."
        ),
        fix=HOST_FIX,
        time_ns=int(runnable_ns),
        metrics={"runnable_pct": 100 * runnable, "on_cpu_pct": 100 * on_cpu},
    )


def job_cores_wait(ranks: Sequence[Rank], options: dict[str, str]) -> Finding | None:
    """Every rank's steps' thread runnable but waiting for a core much of its steps."""
    usable = [r for r in ranks if r.steps.n_steps]
    if len(usable) < 2:
        return None
    pairing = pair_host_steps(
        [HostSteps(r.host, r.steps.step_num, r.steps.start_ns, r.steps.dur_ns) for r in usable]
    )
    step_ns = float(np.median(np.concatenate([r.steps.dur_ns for r in usable])))
    found = cores_wait(usable, pairing, step_ns)
    if found is None:
        return None
    least = float(found.runnable.min())
    return Finding(
        id="job_cores_wait",
        title="Every rank waits for a CPU core",
        severity=severity(least, 0.0, HIGH_WAIT) or "medium",
        host="",
        summary=f"{found.text}.",
        fix=CORES_FIX,
        time_ns=found.runnable_ns,
        metrics={
            "min_runnable_pct": 100 * least,
            "max_runnable_pct": 100 * float(found.runnable.max()),
            "min_on_cpu_pct": 100 * float(found.on_cpu.min()),
            "max_on_cpu_pct": 100 * float(found.on_cpu.max()),
        },
    )


def slow_steps_waited(data: HostData, slow: np.ndarray, normal: np.ndarray, lost_ns: int) -> str:
    """Why the steps ``slow`` (step rows) took ``lost_ns`` longer than the steps ``normal``,
    when the steps' thread's readings say it was waiting for a core (its runnable time beyond
    the other steps' median covers `SLOW_WAITED` of the loss), as words; "" otherwise."""
    steps, cpu = data.steps, data.steps_cpu
    if not cpu.read or not len(slow) or not len(normal) or lost_ns <= 0:
        return ""
    lo = steps.start_ns
    hi = lo + steps.dur_ns
    covered, _, runnable = cpu.within(lo, hi)
    # A slow step the sampler hardly read (its process stopped; the first step, begun before
    # the sampler's first reading) waited for nothing known: only the read ones' waits count,
    # against the loss of all (decision 732)
    read = slow[covered[slow] > 0.5 * (hi - lo)[slow]]
    if not len(read):
        return ""
    extra = float(np.maximum(runnable[read] - np.median(runnable[normal]), 0).sum())
    if extra < SLOW_WAITED * lost_ns:
        return ""
    said = min(extra, float(lost_ns))
    return (
        f"{said / 1e6:.2f} ms of that ({said / lost_ns:.0%}) their thread was waiting for a "
        "CPU core, beyond the other steps' median wait (the stack sampler's readings): other "
        "threads or processes held the cores then"
    )
