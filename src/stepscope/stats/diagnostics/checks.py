"""The one list of diagnostic checks: id, what it looks at, and the function that runs it.

A host check reads one host's `HostData`; a run check reads every host (stragglers). The
order here is the order checks run in and the order the diagnostics tool lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stepscope.records import record
from stepscope.stats.diagnostics import (
    cores,
    device,
    host,
    host_steps,
    multi,
    periodic_steps,
    streams,
)
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.stragglers_types import Rank

Options = dict[str, str]


@record
class Check:
    """A diagnostic check: what it looks at and its per-host or per-run function."""

    id: str  # the id of the findings it returns
    description: str  # what it looks at, for people
    on_host: Callable[[HostData, Options], Finding | None] | None = None
    # Run checks read only each host's step database and collective calls, so an ALL_HOSTS
    # run reduces per-host summaries (computed by workers) without opening a profile.
    on_run: Callable[[Sequence[Rank], Options], Finding | None] | None = None


CHECKS: tuple[Check, ...] = (
    Check(
        "cores_wait",
        "the steps' thread runnable but waiting for a CPU core (the sampler's readings)",
        on_host=cores.host_cores_wait,
    ),
    Check("input_bound", "steps waiting for input", on_host=host_steps.input_bound),
    Check(
        "dispatch_bound",
        "steps spent dispatching many small ops one at a time (eager ops, un-jitted code)",
        on_host=host_steps.dispatch_bound,
    ),
    Check(
        "untraced_host_work",
        "step time no traced op covers and no computation explains, located and by Python function",
        on_host=host_steps.untraced_host_work,
    ),
    Check(
        "slow_steps",
        "steps much slower than the median step, and where their extra time goes",
        on_host=host_steps.slow_steps,
    ),
    Check(
        "periodic_steps",
        "steps doing extra work every N steps (a checkpoint, an evaluation), and in what",
        on_host=periodic_steps.periodic_steps,
    ),
    Check("step_gaps", "time between consecutive steps", on_host=host.step_gaps),
    Check(
        "kernel_launch_bound",
        "steps of many kernels shorter than their launch, GPU idle",
        on_host=device.kernel_launch_bound,
    ),
    Check(
        "ops_on_host",
        "framework ops that run on the CPU while a GPU is there",
        on_host=host.ops_on_host,
    ),
    Check(
        "excessive_copies",
        "host-to-device, device-to-host and device-to-device copies",
        on_host=device.excessive_copies,
    ),
    Check(
        "low_tensor_core_use",
        "matmuls/convolutions not on TensorCores, FP32 where 16-bit would do",
        on_host=device.low_tensor_core_use,
    ),
    Check(
        "collectives",
        "NCCL time against message bytes / link bandwidth",
        on_host=multi.collectives,
    ),
    Check(
        "stream_contention",
        "copies serialized with compute on one stream",
        on_host=streams.stream_contention,
    ),
    Check(
        "host_device_sync",
        "the host blocking on the device inside steps",
        on_host=streams.host_device_sync,
    ),
    Check(
        "launch_thread_contention",
        "kernel launch calls waiting for a CPU core",
        on_host=host.launch_thread_contention,
    ),
    Check(
        "device_skew",
        "GPUs of a host starting late or idling while another works",
        on_host=multi.device_skew_within_host,
    ),
    Check(
        "host_skew",
        "the rank the others wait for: last to arrive at their collectives",
        on_run=multi.skew_across_hosts,
    ),
    Check(
        "job_cores_wait",
        "every rank's steps' thread runnable but waiting for a CPU core (the sampler's readings)",
        on_run=cores.job_cores_wait,
    ),
)
