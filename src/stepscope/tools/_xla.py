"""What op_profile, hlo_stats and roofline_model share: the device peaks as output fields and
the per-host op costs at one host or ALL_HOSTS (every host's programs, each row knowing its
host)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from stepscope.records import record
from stepscope.stats.gpu.device_caps import DeviceCaps
from stepscope.stats.xla.xla_metrics import HloMetrics
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolUsageError

T = TypeVar("T")


@record
class DeviceOut:
    device: str = out("the device: its name, or vendor, compute capability and core count")
    peak_gflops_per_s: float = out("peak dense 16-bit matrix FLOP rate", "GFLOP/s", 3)
    peak_memory_gb_per_s: float = out("peak memory bandwidth: the memory roof", "GB/s", 3)
    ridge_point_flops_per_byte: float = out(
        "peak FLOP rate / peak bandwidth: intensities at or above it are compute-bound",
        "FLOP/byte",
        3,
    )
    source: str = out(
        "where the peaks come from: `profile`, `table: <name>`, "
        "`profile + table: <name> bandwidth` or `unknown` (see op_profile.md)"
    )
    profile_memory_gb_per_s: float = out(
        "the profile's own bandwidth figure, 0 when it has none", "GB/s", 3
    )
    vendor: str = out("`nvidia`, `amd`, or `''` without a GPU")
    math_libraries: str = out(
        "the vendor's GEMM/convolution libraries, whose XLA custom calls `library_gflops` "
        "estimates: `cuBLAS/cuDNN` (NVIDIA), `rocBLAS/hipBLASLt/MIOpen` (AMD), `''` without a GPU"
    )


def device_out(caps: DeviceCaps) -> DeviceOut:
    return DeviceOut(
        device=caps.device,
        peak_gflops_per_s=caps.peak_flops_per_s / 1e9,
        peak_memory_gb_per_s=caps.peak_bytes_per_s / 1e9,
        ridge_point_flops_per_byte=caps.ridge_point,
        source=caps.source,
        profile_memory_gb_per_s=caps.profile_bytes_per_s / 1e9,
        vendor=caps.vendor,
        math_libraries=caps.math_libraries,
    )


def host_costs(ctx: ToolContext, hlo_only: bool = False) -> tuple[tuple[str, HloMetrics], ...]:
    """(host, op costs) of every host the request names, hosts without ops left out (the
    first host stays when none has any). ``hlo_only``: XLA programs only, no PyTorch
    estimates."""
    costs = analysis.hlo_metrics if hlo_only else analysis.op_costs
    found = tuple((host, costs(ctx, host)) for host in ctx.hosts)
    return tuple((host, metrics) for host, metrics in found if metrics.rows) or found[:1]


def caps_of(ctx: ToolContext, hosts: tuple[str, ...]) -> DeviceCaps:
    """The peaks of the first of ``hosts`` whose device has them (a job's GPUs are alike)."""
    caps = [analysis.device_caps(ctx, host) for host in hosts]
    return next((c for c in caps if c.peak_flops_per_s or c.peak_bytes_per_s), caps[0])


def cost_source(costs: tuple[tuple[str, HloMetrics], ...]) -> str:
    return costs[0][1].source if costs else ""


def pick_program(programs: Sequence[tuple[str, int, T]], wanted: str) -> T:
    """The program the ``module`` option names (name, id or ``name(id)``) among (name, id,
    item); a one-line error listing the choices when it names none, or several (one name
    compiled more than once)."""
    found = [p for p in programs if wanted in (p[0], str(p[1]), f"{p[0]}({p[1]})")]
    if len(found) == 1:
        return found[0][2]
    listed = sorted(found or programs, key=lambda p: (p[0], p[1]))
    choices = ", ".join(f"{name}({pid})" for name, pid, _ in listed)
    if found:
        raise ToolUsageError(
            f"option module={wanted[:60]!r} names {len(found)} programs; pick one of {choices}"
        )
    raise ToolUsageError(f"option module={wanted[:60]!r}: no such program; programs: {choices}")
