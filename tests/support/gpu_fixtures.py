"""Shared by the kernel stats / memory profile / tf.data / pod viewer / diagnostics tests:
real fixtures parsed once per test session, and small synthetic trace builders."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from stepscope.model import Profile, open_file, profile_from_xspace
from stepscope.xspace.builder import XSpaceBuilder

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"

GPU_FIXTURES = (
    "kineto/h100_bert_small_inference.json.gz",
    "kineto/h100_timesformer_inference.json.gz",
    "kineto/b200_vllm_fp8_rank0.json.gz",
    "kineto/a100_nccl_rank0.json.gz",
    "kineto/a100_triton_tiny.json.gz",
    "kineto/v100_training_with_memory.json.gz",
    "kineto/v100_resnet50_training_2021schema.json.gz",
    "kineto/mi300x_resnet_training_rank0.json.gz",
    "xspace/gpu_jax_fused_attention.xplane.pb",
)


@cache
def fixture_profile(relative: str) -> Profile:
    """A fixture file parsed once per session (no on-disk cache: tests leave no files)."""
    return open_file(str(FIXTURES / relative), use_cache=False)


@cache
def tf_profile(name: str) -> Profile:
    """The .xplane.pb of a TensorFlow fixture folder (ctl, ctl_opt, keras_marked...)."""
    path = next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))
    return open_file(str(path), use_cache=False)


def build(builder: XSpaceBuilder) -> Profile:
    return profile_from_xspace(
        builder.build(), hostname=builder.hostnames[0] if builder.hostnames else ""
    )


def kernel_details(
    regs: int = 32, shared: int = 0, grid: str = "1,1,1", block: str = "128,1,1", occ: float = 50
) -> str:
    return (
        f"regs:{regs} static_shared:{shared} dynamic_shared:0 grid:{grid} block:{block} "
        f"occ_pct:{occ}"
    )


class GpuTrace:
    """A synthetic GPU training trace: step markers, launches on a host thread, kernels on
    streams (correlated), copies and collectives. All times in ns."""

    def __init__(
        self, host: str = "worker0", device_name: str = "NVIDIA A100-SXM4-40GB", cap: int = 8
    ) -> None:
        self.builder = XSpaceBuilder(host)
        self.host_plane = self.builder.plane("/host:CPU")
        self.main = self.host_plane.line(1, "python")
        self.device_name = device_name
        self.cap = cap
        self.corr = 0

    def gpu(self, ordinal: int = 0):
        plane = self.builder.plane(f"/device:GPU:{ordinal}")
        plane.stats.update(
            {"device_name": self.device_name, "compute_cap_major": self.cap, "core_count": 108}
        )
        return plane

    def thread(self, tid: int, name: str):
        return self.host_plane.line(tid, name)

    def step(self, num: int, start: int, dur: int) -> None:
        self.main.event("train", start, dur, {"step_num": num, "_r": 1})

    def op(self, name: str, start: int, dur: int, line=None) -> None:
        (self.main if line is None else line).event(name, start, dur)

    def launch(
        self,
        at: int,
        name: str,
        start: int,
        dur: int,
        *,
        stream: int = 7,
        gpu: int = 0,
        launch_dur: int = 5_000,
        api: str = "cudaLaunchKernel",
        line=None,
        stats: dict | None = None,
    ) -> None:
        self.corr += 1
        (self.main if line is None else line).event(
            api, at, launch_dur, {"correlation_id": self.corr}
        )
        device_stats = {"correlation_id": self.corr, **(stats or {})}
        if not name.startswith("MEMCPY"):
            device_stats.setdefault("kernel_details", kernel_details())
        self.gpu(gpu).line(stream, f"Stream #{stream}").event(name, start, dur, device_stats)

    def profile(self) -> Profile:
        return build(self.builder)
