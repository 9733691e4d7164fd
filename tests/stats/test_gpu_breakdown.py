"""The breakdown on real GPU profiles (Kineto JSON and a JAX XSpace)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import EventType, build_op_metrics, build_step_db, classify_events
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.events import device_work_lines
from stepscope.stats.gpu.device import utilization
from stepscope.stats.gpu.kernels import build_kernel_db
from tests.support.analysis import fixture_profile

TRAINING = (
    "kineto/a100_nccl_rank0.json.gz",
    "kineto/mi300x_resnet_training_rank0.json.gz",
    "kineto/v100_resnet50_training_2021schema.json.gz",
)


@pytest.mark.parametrize("relative", TRAINING)
def test_training_profiles_have_device_steps(relative: str) -> None:
    db = build_step_db(fixture_profile(relative))
    assert db.source == "profiler_step" and db.has_device and db.n_steps >= 3
    cats = db.category_ns()
    assert cats["device_compute"].sum() > 0
    assert np.array_equal(sum(cats.values()), db.dur_ns)
    starts, ends = db.start_ns, db.start_ns + db.dur_ns
    assert np.all(starts[1:] >= ends[:-1])  # steps never overlap


def test_a_step_keeps_its_fetch_before_its_device_work() -> None:
    """ResNet-50 on a V100 (2021 schema): each ProfilerStep opens with a 69 ms fetch from a
    DataLoader without workers, then runs its kernels, the last ones past the marker's end.
    The step runs from its marker's start to its last kernel's end (decision 1056): timed by
    its device work alone it was 118 of its 176 ms, the fetch in no step and 0% input."""
    profile = fixture_profile("kineto/v100_resnet50_training_2021schema.json.gz")
    db = build_step_db(profile)
    marker_ms = (profile.end_at(db.event) - profile.start_ns[db.event]) / 1e6
    assert marker_ms.round(3).tolist() == [176.078, 173.992, 176.918, 181.259, 176.468, 164.261]
    # each step from its marker's start (or the end of the step before, whose kernels ran on)
    # to its last kernel's end
    assert (db.dur_ns / 1e6).round(3).tolist() == [
        187.948,
        175.153,
        179.733,
        174.564,
        182.172,
        165.983,
    ]
    assert db.start_ns[0] == profile.start_ns[db.event[0]]
    # the steps cover the run: first marker's start to the last kernel's end, 1065.5 ms
    assert (db.start_ns[-1] + db.dur_ns[-1] - db.start_ns[0]) / 1e6 == pytest.approx(1065.5, 0.01)
    assert db.dur_ns.sum() == db.start_ns[-1] + db.dur_ns[-1] - db.start_ns[0]
    # each step waits ~58 ms for its batch: a third of its time
    input_share = db.category_ns()["input"].sum() / db.dur_ns.sum()
    assert 0.30 < input_share < 0.36


def test_the_devices_backlog_is_in_no_step_nor_in_the_collectives_finding() -> None:
    """ResNet DDP on an MI300X: its GPU runs 30 ms behind the CPU when the capture begins,
    finishing the step before the capture (968 device events with no launch in the trace, 3
    of its all-reduces); the kernels launched in each ProfilerStep then run 18.98, 18.98 and
    18.55 ms back to back (a throwaway reader of the raw JSON). The backlog is no step's
    (decision 1072): the first step read 49.06 ms and "82.6% of the step time" in
    collectives, with the backlog's all-reduces. The finding's share with nothing else
    running is the headline's "Bound by collectives" (decision 1073)."""
    profile = fixture_profile("kineto/mi300x_resnet_training_rank0.json.gz")
    db = build_step_db(profile)
    assert (db.dur_ns / 1e6).round(2).tolist() == [18.98, 18.98, 18.55]
    marker = profile.start_ns[db.event[0]]
    assert (db.start_ns[0] - marker) / 1e6 == pytest.approx(30.08, abs=0.01)  # backlog's end
    data = HostData("mi300x", profile, db, build_kernel_db(profile))
    found = {f.id: f for f in diagnose_host(data, {})}
    f = found["collectives"]
    assert sum(e.count for e in f.events) == 12  # 4 calls a step; the backlog's 5 in none
    assert f.metrics["collective_ms"] == pytest.approx(47.20, abs=0.01)
    collectives = db.limit_ns()["collectives"].sum() / db.dur_ns.sum()
    assert f.metrics["exposed_pct"] == pytest.approx(100 * collectives, abs=0.05)
    assert (
        "(15.73 ms per step, 83.5% of the step time, overlapped with compute or not); the steps "
        "are bound by them, with nothing else running, 35.09 ms (11.70 ms per step, 62.1% of "
        "the step time)."
    ) in f.summary


def test_collectives_and_copies_are_their_own_categories() -> None:
    nccl = build_step_db(fixture_profile("kineto/a100_nccl_rank0.json.gz")).category_ns()
    assert nccl["device_collectives"].sum() > 0
    mi300x = build_step_db(fixture_profile("kineto/mi300x_resnet_training_rank0.json.gz"))
    assert mi300x.category_ns()["device_to_device"].sum() > 0  # MEMCPYDToD
    copies = {
        "kineto/v100_resnet50_training_2021schema.json.gz": (EventType.HOST_TO_DEVICE,),
        "kineto/h100_timesformer_inference.json.gz": (
            EventType.HOST_TO_DEVICE,
            EventType.DEVICE_TO_HOST,
        ),
        "kineto/mi300x_resnet_training_rank0.json.gz": (EventType.DEVICE_TO_DEVICE,),
    }
    for relative, kinds in copies.items():
        types = classify_events(fixture_profile(relative))
        assert all((types == kind).any() for kind in kinds), relative
    timesformer = build_step_db(fixture_profile("kineto/h100_timesformer_inference.json.gz"))
    cats = timesformer.category_ns()
    assert cats["input"].sum() > 0 and cats["output"].sum() > 0  # H2D is input, D2H output


def test_gpu_utilization_is_merged_kernel_time_over_the_steps() -> None:
    profile = fixture_profile("kineto/v100_resnet50_training_2021schema.json.gz")
    db = build_step_db(profile)
    window = (int(db.start_ns[0]), int(db.start_ns[-1] + db.dur_ns[-1]))
    got = utilization(profile, window)
    ((_plane, percent),) = got.items()
    # reference: walk the kernels in time order, merging overlaps
    types = classify_events(profile)
    kernels = device_work_lines(profile)[profile.line] & np.isin(
        types,
        [EventType.DEVICE_COMPUTE_16, EventType.DEVICE_COMPUTE_32, EventType.DEVICE_COLLECTIVES],
    )
    spans = sorted(
        zip(profile.start_ns[kernels].tolist(), profile.end_ns[kernels].tolist(), strict=True)
    )
    busy, reach = 0, window[0]
    for lo, hi in spans:
        lo, hi = max(lo, reach), min(hi, window[1])
        if hi > lo:
            busy += hi - lo
            reach = hi
    assert percent == pytest.approx(100 * busy / (window[1] - window[0]), rel=1e-9)
    assert 0 < percent <= 100


def test_op_metrics_separate_host_and_device() -> None:
    metrics = build_op_metrics(fixture_profile("kineto/a100_nccl_rank0.json.gz"))
    assert len(metrics.host) and len(metrics.device)
    assert all(
        n.startswith(
            (
                "aten::",
                "c10d::",
                "nccl:",
                "autograd::",
                "Optimizer",
                "enumerate",
                "DistributedDataParallel",
                "torch",
                "record_param_comms",
                "##",
            )
        )
        or "#" in n
        or "::" in n
        or n
        for n in metrics.host.names
    )
    assert "Collective" in set(metrics.device.types)
    assert not set(metrics.host.names) & {n for n in metrics.device.names if "Kernel" in n}


def test_jax_xspace_steps_are_inferred() -> None:
    db = build_step_db(fixture_profile("xspace/gpu_jax_fused_attention.xplane.pb"))
    assert db.source == "inferred" and db.n_steps >= 3
    assert db.category_ns()["device_compute"].sum() > 0.5 * db.dur_ns.sum()
