"""The kernel rule table (matrix units, precision) on every GPU fixture kernel name, and the
shares users read: H100 BERT, B200 FP8, MI300X, and XProf's numbers on the JAX GPU fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.stats.gpu.device import precision_ns
from stepscope.stats.gpu.kernels import build_kernel_db, kernel_events
from stepscope.stats.kernel_rules import (
    MATRIX_RULES,
    PRECISION_RULES,
    PRECISIONS,
    kernel_precision,
    matrix_rule_of,
)
from tests.support.gpu_fixtures import FIXTURES, GPU_FIXTURES, fixture_profile

TABLE = Path(__file__).parent / "data" / "gpu_kernel_classes.tsv"
JAX_GPU = "xspace/gpu_jax_fused_attention.xplane.pb"


def _expected() -> dict[str, dict[str, tuple[str, str, str]]]:
    out: dict[str, dict[str, tuple[str, str, str]]] = {}
    for line in TABLE.read_text().splitlines():
        if line.startswith("#"):
            continue
        fixture, matrix, rule, precision, name = line.split("\t")
        out.setdefault(fixture, {})[name] = (matrix, rule, precision)
    return out


EXPECTED = _expected()


@pytest.mark.parametrize("relative", GPU_FIXTURES)
def test_every_fixture_kernel_is_listed_with_its_class(relative: str) -> None:
    profile = fixture_profile(relative)
    names = {profile.strings[int(i)] for i in profile.name[kernel_events(profile)]}
    table = EXPECTED[relative]
    assert names == set(table), "the table must list exactly the fixture's kernels"
    for name in sorted(names):
        rule = matrix_rule_of(name)
        got = (
            "yes" if rule is not None and rule.on_matrix_units else "no",
            rule.id if rule is not None else "-",
            kernel_precision(name),
        )
        assert got == table[name], name


def test_rule_ids_are_unique_and_precisions_known() -> None:
    assert len({r.id for r in MATRIX_RULES}) == len(MATRIX_RULES)
    assert len({r.id for r in PRECISION_RULES}) == len(PRECISION_RULES)
    assert {r.precision for r in PRECISION_RULES} <= set(PRECISIONS)
    assert all(r.reason for r in (*MATRIX_RULES, *PRECISION_RULES))


@pytest.mark.parametrize(
    ("name", "on", "precision"),
    [
        ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", True, "16bit"),
        ("turing_i8816gemm_int8_128x128", True, "int8"),
        ("sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n_tilesize128x128x64", True, "fp8"),
        (
            "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<sm90_gmma_f16>>",
            True,
            "16bit",
        ),
        ("kernel_cutlass_tcgen05_mma_bf16_sm100", True, "16bit"),
        ("bmm_E2m1_E2m1_Fp32_t128x128x256_sm100f", True, "fp4"),
        (
            "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_traits<128, cutlass::half_t>>",
            True,
            "16bit",
        ),
        (
            "flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, cutlass::half_t>>",
            False,
            "16bit",
        ),
        ("triton_tem_fused_addmm_0", True, "32bit"),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN", True, "16bit"),
        ("Cijk_Ailk_Bljk_SB_MT64x64x16_SE_K1", False, "32bit"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<double>>",
            False,
            "64bit",
        ),
        ("transpose_NCHW2CNHW_V2_2D_WG_off64", False, "32bit"),
        ("void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true>", False, "16bit"),
    ],
)
def test_rules_on_names_outside_the_fixtures(name: str, on: bool, precision: str) -> None:
    rule = matrix_rule_of(name)
    assert (rule is not None and rule.on_matrix_units) is on
    assert kernel_precision(name) == precision


def _tc_share(relative: str) -> tuple[float, float]:
    db = build_kernel_db(fixture_profile(relative))
    tc = sum(r.total_ns for r in db.rows if r.uses_tensor_core)
    eligible = sum(r.total_ns for r in db.rows if r.op_tensor_core_eligible)
    return 100 * tc / db.total_ns, 100 * eligible / db.total_ns


def test_h100_bert_tensor_core_share() -> None:
    tc, _ = _tc_share("kineto/h100_bert_small_inference.json.gz")
    assert 70 <= tc <= 80


def test_b200_fp8_kernels_on_tensor_cores_with_an_fp8_share() -> None:
    relative = "kineto/b200_vllm_fp8_rank0.json.gz"
    db = build_kernel_db(fixture_profile(relative))
    fp8 = [r for r in db.rows if r.kernel_name.startswith(("bmm_MxE4m3", "fmhaSm100a"))]
    assert fp8 and all(r.uses_tensor_core for r in fp8)
    assert all(r.uses_tensor_core for r in db.rows if r.kernel_name.startswith("nvjet"))
    shares = precision_ns(fixture_profile(relative))
    total = sum(shares.values())
    assert shares["fp8"] / total > 0.3  # the FP8 MoE GEMMs and attention
    assert shares["16bit"] / total > 0.3  # bf16-activation GEMMs, norms, all-reduce-free math


def test_mi300x_matrix_core_kernels_are_counted() -> None:
    db = build_kernel_db(fixture_profile("kineto/mi300x_resnet_training_rank0.json.gz"))
    mfma = [r for r in db.rows if r.uses_tensor_core]
    kinds = {r.kernel_name[:5] for r in mfma}
    assert {"Cijk_", "igemm", "_ZN2c"} <= kinds  # hipBLASLt/Tensile, MIOpen, Composable Kernel
    assert not any(r.uses_tensor_core for r in db.rows if "transpose" in r.kernel_name)


def _xprof_kernel_stats() -> list[dict[str, object]]:
    path = FIXTURES / "xspace" / "gpu_jax_fused_attention_xprof_reference" / "kernel_stats.json"
    table = json.loads(path.read_text())
    ids = [c["id"] for c in table["cols"]]
    return [dict(zip(ids, [c.get("v") for c in row["c"]], strict=True)) for row in table["rows"]]


def test_jax_gpu_tensor_core_share_matches_xprof() -> None:
    rows = _xprof_kernel_stats()
    total = sum(_us(r) for r in rows)
    want = 100 * sum(_us(r) for r in rows if r["is_kernel_using_tensor_core"]) / total
    tc, _ = _tc_share(JAX_GPU)
    assert abs(tc - want) <= 1.0, (tc, want)


def _us(row: dict[str, object]) -> float:
    value = row["total_duration_us"]
    assert isinstance(value, float | int)
    return float(value)


def test_jax_gpu_eligible_share_and_op_names_match_xprof() -> None:
    rows = _xprof_kernel_stats()
    total = sum(_us(r) for r in rows)
    want = 100 * sum(_us(r) for r in rows if r["is_op_tensor_core_eligible"]) / total
    _, eligible = _tc_share(JAX_GPU)
    assert abs(eligible - want) <= 1.0, (eligible, want)


def test_jax_gpu_kernel_stats_rows_equal_xprof() -> None:
    """Every row of XProf's kernel_stats: op names from the HLO metadata ('' for
    instructions XLA made up, whose kernels then merge), occurrences, time and flags."""
    xprof = {(str(r["kernel_name"]), str(r["op_name"])): r for r in _xprof_kernel_stats()}
    db = build_kernel_db(fixture_profile(JAX_GPU))
    ours = {(r.kernel_name, r.op_name): r for r in db.rows}
    assert len(db.rows) == len(ours) == len(xprof) == 19
    assert set(ours) == set(xprof)
    for key, want in xprof.items():
        got = ours[key]
        assert got.occurrences == int(str(want["occurrences"]).split(".")[0]), key
        assert abs(got.total_ns / 1e3 - _us(want)) <= 0.001 * _us(want) + 0.01, key
        assert got.uses_tensor_core == want["is_kernel_using_tensor_core"], key
        assert got.op_tensor_core_eligible == want["is_op_tensor_core_eligible"], key
    # the merged unnamed row still says which HLO instructions it holds
    merged = ours[("loop_reduce_fusion_3.kd", "")]
    assert merged.hlo_ops == ("loop_reduce_fusion.2", "loop_reduce_fusion.3")
    assert not any(r.op_name.startswith("XlaModule") for r in db.rows)


def test_jax_gpu_device_op_stats_named_from_hlo_like_xprof() -> None:
    from stepscope.stats.op_metrics import build_op_metrics

    path = FIXTURES / "xspace" / "gpu_jax_fused_attention_xprof_reference"
    table = json.loads((path / "framework_op_stats.json").read_text())
    table = table[0] if isinstance(table, list) else table
    ids = [c["id"] for c in table["cols"]]
    want = {}
    for row in table["rows"]:
        v = dict(zip(ids, [c.get("v") for c in row["c"]], strict=True))
        if v["host_or_device"] == "Device" and v["operation"] != "IDLE":
            want[str(v["operation"])] = float(v["total_self_time"])
    device = build_op_metrics(fixture_profile(JAX_GPU)).device
    got = {n: s / 1000 for n, s in zip(device.names, device.self_ns.tolist(), strict=True)}
    assert set(got) == set(want)
    for name, self_us in want.items():
        assert abs(got[name] - self_us) <= 0.01 * self_us + 0.01, name


def test_lowered_search_matches_ignorecase_search() -> None:
    """`NamePattern.search` (ASCII names lowercased against the lowercased pattern) answers as
    re's IGNORECASE search of the rule's text, on every fixture kernel name in several cases
    and on names with non-ASCII letters (which take the IGNORECASE pattern)."""
    import re

    names = {line.split("\t")[-1] for line in TABLE.read_text().splitlines() if line[:1] != "#"}
    extra = {"BF16_GEMM", "Nchw2Nhwc", "FLASH_FWD_x", "sm100A_kernel", "İnt8_ſm100a", "double"}
    variants = {v for n in names | extra for v in (n, n.upper(), n.lower(), n.swapcase())}
    rules = [r.pattern for r in (*MATRIX_RULES, *PRECISION_RULES)]
    assert any(p.ignore_case for p in rules) and any(not p.ignore_case for p in rules)
    for pattern in rules:
        reference = re.compile(pattern.text, re.IGNORECASE if pattern.ignore_case else 0)
        for name in sorted(variants):
            assert pattern.search(name) == (reference.search(name) is not None), (pattern, name)


def test_case_insensitive_patterns_keep_their_escapes() -> None:
    from stepscope.stats.kernel_rules import NamePattern

    pattern = NamePattern(r"GEMM\D", ignore_case=True)  # \D: a non-digit, not \d
    assert pattern.search("sm90_gemmX_tn") and pattern.search("SM90_GEMM_tn")
    assert not pattern.search("sm90_gemm1_tn")
    assert pattern.search("gemm_ü") and not pattern.search("gemm1ü")  # not ASCII: re's way
    assert not NamePattern("GEMM").search("gemm")  # case-sensitive unless asked
    with pytest.raises(ValueError, match="character codes are not lowercased"):
        NamePattern(r"\x41", ignore_case=True).search("a")


@pytest.mark.parametrize("code", [r"\x41", r"\u0041", r"\U00000041", r"\N{DIGIT ONE}", r"\101"])
def test_every_character_code_is_refused_in_a_case_insensitive_pattern(code: str) -> None:
    """A character code names a letter the lowercasing cannot see (\\x41 is "A"): each form
    re knows -- \\x, \\u, \\U, \\N{...}, octal -- is refused, not silently left upper case."""
    from stepscope.stats.kernel_rules import NamePattern

    with pytest.raises(ValueError, match="character codes are not lowercased"):
        NamePattern("gemm" + code, ignore_case=True).search("gemma")
    assert NamePattern("gemm" + code).search("gemm") is False  # case-sensitive: no lowering
