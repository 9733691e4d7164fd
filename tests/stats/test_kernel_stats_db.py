"""GPU kernel stats intermediate: details parsing, TensorCore rules, op attribution, grouping."""

from __future__ import annotations

import pytest

from stepscope.stats.gpu.kernels import build_kernel_db, merge_kernel_dbs, parse_kernel_details
from stepscope.stats.gpu.tensor_core import is_op_tensor_core_eligible, kernel_uses_tensor_core
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import GPU_FIXTURES, build, fixture_profile, kernel_details


def test_parse_nvidia_and_amd_details() -> None:
    d = parse_kernel_details(
        "regs:64 static_shared:1024 dynamic_shared:2048 grid:80,2,1 block:256,1,1 occ_pct:37.5"
    )
    assert (d.registers_per_thread, d.static_shmem_bytes, d.dynamic_shmem_bytes) == (64, 1024, 2048)
    assert d.grid == (80, 2, 1) and d.block == (256, 1, 1) and d.occupancy_pct == 37.5
    amd = parse_kernel_details(
        " grid:16,16,2 block:256,1,1 private_mem:168 group_mem:30240 occ_pct:0"
    )
    assert amd.static_shmem_bytes == 30240 and amd.grid == (16, 16, 2)
    assert amd.occupancy_pct is None  # 0 means not measured
    assert parse_kernel_details("garbage grid:x").grid == (0, 0, 0)


@pytest.mark.parametrize(
    ("name", "uses"),
    [
        ("volta_h884gemm_64x64_ldg8_nn", True),
        ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", True),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", True),
        ("turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_nn", True),
        ("void cudnn::xmma_implicit_gemm_kernel<...>", True),
        ("volta_sgemm_128x64_nn", False),
        ("void at::native::vectorized_elementwise_kernel<4>", False),
        ("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", True),  # cuBLASLt sm90+ tensor-core GEMM
    ],
)
def test_kernel_tensor_core_markers(name: str, uses: bool) -> None:
    assert kernel_uses_tensor_core(name) is uses


@pytest.mark.parametrize(
    ("op", "eligible"),
    [
        ("model/conv2d/Conv2D", True),
        ("model/conv2d/Conv2D:Conv2D", True),
        ("grad/Conv2DBackpropFilter", True),
        ("grad/Conv2DBackpropInput", True),
        ("net/Conv3D", True),
        ("net/depthwise/DepthwiseConv2dNativeBackpropInput", True),
        ("model/dense/MatMul", True),
        ("model/dense/MatMul:MatMul", True),
        ("model/dense/MatMul_1", False),
        ("fused/_FusedMatMul", True),
        ("rnn/CudnnRNN", True),
        ("xla/XlaDot", True),
        ("attention/BatchMatMulV2", True),
        ("model/relu/Relu", False),
        ("aten::mm", True),
        ("aten::addmm", True),
        ("aten::cudnn_convolution", True),
        ("aten::add_", False),
        ("jit(f)/jvp(bsd,de->bse)/dot_general", True),
        ("jit(f)/transpose", False),
        ("", False),
    ],
)
def test_op_tensor_core_eligibility(op: str, eligible: bool) -> None:
    assert is_op_tensor_core_eligible(op) is eligible


def test_einsum_needs_two_inputs() -> None:
    assert is_op_tensor_core_eligible("model/einsum/Einsum:Einsum", equation="ab,bc->ac")
    assert not is_op_tensor_core_eligible("model/einsum/Einsum:Einsum", equation="abc->acb")
    assert not is_op_tensor_core_eligible("model/einsum/Einsum:Einsum")


def _gpu_space() -> XSpaceBuilder:
    b = XSpaceBuilder("gpu-host")
    host = b.plane("/host:CPU").line(1, "python")
    host.event("model/dense/MatMul:MatMul", 0, 100)
    host.event("cudaLaunchKernel", 10, 5, {"correlation_id": 1})
    host.event("cudaLaunchKernel", 30, 5, {"correlation_id": 2})
    host.event("model/relu:Relu", 200, 100)
    host.event("cudaLaunchKernel", 210, 5, {"correlation_id": 3})
    gpu = b.plane("/device:GPU:0")
    gpu.stats["core_count"] = 80
    stream = gpu.line(7, "Stream #7")
    tc = kernel_details(regs=96, shared=4096, grid="40,1,1", block="256,1,1", occ=25)
    stream.event("volta_h884gemm_64x64_nn", 50, 40, {"correlation_id": 1, "kernel_details": tc})
    stream.event("volta_h884gemm_64x64_nn", 100, 20, {"correlation_id": 2, "kernel_details": tc})
    stream.event(
        "elementwise_kernel", 220, 10, {"correlation_id": 3, "kernel_details": kernel_details()}
    )
    # An explicit tf_op wins over the launch; same kernel under another op is another row.
    stream.event(
        "volta_h884gemm_64x64_nn",
        300,
        30,
        {"correlation_id": 99, "kernel_details": tc, "tf_op": "head/MatMul:MatMul"},
    )
    stream.event("MEMCPYHToD", 400, 50, {"correlation_id": 4, "memcpy_details": "num_bytes:100"})
    return b


def test_rows_per_kernel_op_pair() -> None:
    db = build_kernel_db(build(_gpu_space()))
    assert db.kernel_count == 4 and db.device_count == 1 and db.total_ns == 100
    rows = {(r.kernel_name, r.op_name): r for r in db.rows}
    assert set(rows) == {
        ("volta_h884gemm_64x64_nn", "model/dense/MatMul:MatMul"),
        ("volta_h884gemm_64x64_nn", "head/MatMul:MatMul"),
        ("elementwise_kernel", "model/relu:Relu"),
    }
    gemm = rows["volta_h884gemm_64x64_nn", "model/dense/MatMul:MatMul"]
    assert (gemm.occurrences, gemm.total_ns, gemm.min_ns, gemm.max_ns) == (2, 60, 20, 40)
    assert gemm.details.registers_per_thread == 96 and gemm.details.grid == (40, 1, 1)
    assert gemm.uses_tensor_core and gemm.op_tensor_core_eligible
    assert gemm.occupancy_pct == pytest.approx(25)
    relu = rows["elementwise_kernel", "model/relu:Relu"]
    assert not relu.uses_tensor_core and not relu.op_tensor_core_eligible
    assert [r.total_ns for r in db.rows] == sorted((r.total_ns for r in db.rows), reverse=True)


def test_merge_hosts_by_name_and_top_rows() -> None:
    one = build_kernel_db(build(_gpu_space()))
    merged = merge_kernel_dbs([one, one])
    assert merged.kernel_count == 8 and len(merged.rows) == len(one.rows)
    assert merged.rows[0].occurrences == 2 * one.rows[0].occurrences
    top = build_kernel_db(build(_gpu_space()), max_rows=1)
    assert len(top.rows) == 1 and top.truncated_rows == 2


def test_no_device_no_kernels() -> None:
    b = XSpaceBuilder("cpu")
    b.plane("/host:CPU").line(1, "main").event("work", 0, 10)
    db = build_kernel_db(build(b))
    assert db.kernel_count == 0 and db.rows == ()


@pytest.mark.parametrize("relative", GPU_FIXTURES)
def test_every_gpu_fixture_has_kernel_stats(relative: str) -> None:
    db = build_kernel_db(fixture_profile(relative))
    assert db.kernel_count > 0 and db.rows
    assert sum(r.occurrences for r in db.rows) == db.kernel_count
    assert sum(r.total_ns for r in db.rows) == db.total_ns
    pairs = [(r.kernel_name, r.op_name) for r in db.rows]
    assert len(pairs) == len(set(pairs))
    # Almost every kernel is attributed to an op (launch correlation or its own stats).
    attributed = sum(r.occurrences for r in db.rows if r.op_name)
    assert attributed >= 0.7 * db.kernel_count
    for row in db.rows:
        assert row.uses_tensor_core == kernel_uses_tensor_core(row.kernel_name)
        # XProf: an op whose kernel runs on TensorCores is eligible whatever its name.
        assert row.op_tensor_core_eligible == (
            row.uses_tensor_core or is_op_tensor_core_eligible(row.op_name)
        )


def test_tensor_core_kernels_on_h100_fixtures() -> None:
    for relative in (
        "kineto/h100_bert_small_inference.json.gz",
        "kineto/h100_timesformer_inference.json.gz",
    ):
        db = build_kernel_db(fixture_profile(relative))
        tc = [r for r in db.rows if r.uses_tensor_core]
        assert tc, relative
        # cuBLAS/cutlass tensor-op GEMMs run for matmul-like ops.
        assert all(r.op_name.startswith("aten::") for r in tc)
        assert any(r.op_tensor_core_eligible for r in tc)


def test_v100_fp32_gemms_are_eligible_but_use_no_tensor_cores() -> None:
    db = build_kernel_db(fixture_profile("kineto/v100_training_with_memory.json.gz"))
    sgemm = [r for r in db.rows if "sgemm" in r.kernel_name]
    assert sgemm and all(r.op_tensor_core_eligible and not r.uses_tensor_core for r in sgemm)
    assert {r.op_name for r in sgemm} <= {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def test_jax_fixture_ops_from_kernel_stats() -> None:
    db = build_kernel_db(fixture_profile("xspace/gpu_jax_fused_attention.xplane.pb"))
    # XProf's 19 rows: loop_reduce_fusion.2 and .3 (no framework op) merge under an empty name
    assert db.kernel_count == 150 and len(db.rows) == 19
    gemm = next(r for r in db.rows if r.kernel_name == "gemm_fusion_dot.kd")
    assert gemm.op_name == "jit(loss_fn)/jvp(bsd,de->bse)/dot_general"
    assert gemm.op_tensor_core_eligible and gemm.details.grid == (3072, 1, 1)
    assert all(r.op_name != "XlaModule:" for r in db.rows)
