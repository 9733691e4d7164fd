"""Device peaks: from the profile's plane stats, else the table of known devices by name."""

from __future__ import annotations

from stepscope.stats.gpu.device_caps import device_caps
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import build, fixture_profile


def test_peaks_from_the_profile_stats() -> None:
    caps = device_caps(fixture_profile("xspace/gpu_jax_fused_attention.xplane.pb"))
    # gfx950: 4096 FLOP/clock/CU x 256 CUs x 2.4 GHz; the profile's 4096 GB/s is half the
    # MI350X/MI355X datasheet's HBM3E bandwidth (XLA on ROCm assumes double data rate)
    assert caps.source == "profile + table: MI350X/MI355X bandwidth"
    assert caps.peak_flops_per_s == 4096 * 256 * 2.4e9
    assert caps.profile_bytes_per_s == 4.096e12
    assert caps.peak_bytes_per_s == 8.0e12
    assert round(caps.ridge_point, 1) == 314.6


def test_kineto_traces_use_the_known_device_table() -> None:
    caps = device_caps(fixture_profile("kineto/h100_bert_small_inference.json.gz"))
    assert caps.source == "table: H100" and caps.peak_flops_per_s == 989e12
    caps = device_caps(fixture_profile("kineto/mi300x_resnet_training_rank0.json.gz"))
    assert caps.source == "table: MI300X" and caps.peak_bytes_per_s == 5.3e12


def test_unknown_device_has_no_peaks() -> None:
    builder = XSpaceBuilder(hostname="h")
    builder.plane("/host:CPU").line(1, "python").event("x", 0, 10)
    gpu = builder.plane("/device:GPU:0")
    gpu.stats.update({"device_name": "Mystery Accelerator 9000"})
    gpu.line(1, "Stream #1").event("k", 0, 10, stats={"kernel_details": "regs:1"})
    caps = device_caps(build(builder))
    assert caps.source == "unknown" and caps.ridge_point == 0.0
