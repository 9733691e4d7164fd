"""What a GPU kernel's name says about its math: matrix units (TensorCores / Matrix Cores) and
precision. One table each; the first rule that matches decides. Documented rule by rule, with
the reason, in docs/tools/kernel_stats.md; a test lists every GPU fixture kernel's verdict.

Why names: neither CUPTI nor rocprofiler records which instructions a kernel ran, so every profiler
(XProf, Nsight's summaries, HTA) reads the library's naming conventions. XProf's own list
(``xprof/utils/kernel_stats_utils.cc``) stops at Volta/Turing/Ampere cuBLAS and cuDNN names; the
rules below add what today's libraries emit: CUTLASS ``tensorop``/``wmma``, Hopper
``gmma``/``wgmma``, Blackwell ``tcgen05``/``sm100`` cubins, cuBLASLt ``nvjet``, flash-attention,
XLA/Inductor Triton GEMMs, and AMD's MFMA kernels (Tensile/hipBLASLt ``_MI<m>x<n>``, Composable
Kernel ``xdl``, MIOpen ``gtcx``).
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache

from stepscope.records import record


@record
class NamePattern:
    """A regular expression over kernel names, case-insensitive or not. An ASCII name is searched
    lowercased by the pattern with its letters lowercased, case-sensitive: the same matches
    (for ASCII text IGNORECASE compares lowercase forms; escapes are kept as written), 3-8x
    faster on 200-character kernel names, where re's IGNORECASE alternations test each
    position slowly. Other names take the IGNORECASE pattern."""

    text: str
    ignore_case: bool = False

    @cached_property
    def _exact(self) -> re.Pattern[str]:
        return re.compile(self.text, re.IGNORECASE if self.ignore_case else 0)

    @cached_property
    def _lowered(self) -> re.Pattern[str]:
        return re.compile(_lower_letters(self.text))

    def search(self, name: str) -> bool:
        if self.ignore_case and name.isascii():
            return self._lowered.search(name.lower()) is not None
        return self._exact.search(name) is not None


def _lower_letters(text: str) -> str:
    """The pattern text with its letters lowercased, escapes (``\\b``, ``\\W``, ...) as they are."""
    if re.search(r"\\[xuUN0-7]", text):
        raise ValueError(f"kernel rule {text!r}: character codes are not lowercased")
    return re.sub(r"\\.|[A-Z]+", lambda m: m[0] if m[0][0] == "\\" else m[0].lower(), text)


@record
class MatrixRule:
    """A kernel name pattern and whether such kernels run on matrix units."""

    id: str
    pattern: NamePattern
    on_matrix_units: bool
    reason: str


@record
class PrecisionRule:
    """A kernel name pattern and the precision such kernels compute in."""

    id: str
    pattern: NamePattern
    precision: str  # one of PRECISIONS
    reason: str


PRECISIONS = ("fp4", "fp8", "int8", "16bit", "32bit", "64bit")
# What XProf calls "16-bit" compute: everything narrower than fp32.
REDUCED_PRECISIONS = frozenset({"fp4", "fp8", "int8", "16bit"})


def _rx(text: str, ignore_case: bool = False) -> NamePattern:
    return NamePattern(text, ignore_case)


_I = True  # ignore case

# Order matters: exclusions come before the families they would otherwise match.
MATRIX_RULES: tuple[MatrixRule, ...] = (
    MatrixRule(
        "layout_conversion",
        _rx(
            r"nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw|batched_transpose|^transpose_|"
            r"TransposeKernel|_convert\b|^wrapped_convert|ConvertQGrad|convert_dq",
            _I,
        ),
        False,
        "layout and dtype conversions (cuDNN/MIOpen NCHW<->NHWC, transposes, converts) move "
        "data around a matmul; they never run matrix instructions",
    ),
    MatrixRule(
        "flash_attention_aux",
        _rx(r"OGradDotO|dot_do_o|flash_bwd_clear|softmax_lse", _I),
        False,
        "flash-attention's helper kernels (rowsum(dO*O), clearing dQ accumulators) are "
        "elementwise/reductions next to the attention matmuls",
    ),
    MatrixRule(
        "xprof_markers",
        _rx(
            r"16816|c1688|conv1x1|conv2d_c1_k1|dgrad_1x1_stride_2x2|direct_group|"
            r"first_layer_wgrad_kernel|h1688|h884|hmma|i16832|i8816|s884|s1688"
        ),
        True,
        "XProf's list: cuBLAS/cuDNN Volta-Ampere names carrying the MMA shape (h884 = HMMA "
        "8x8x4, s1688/16816 = 16x8x8/16x8x16, i8816 = IMMA int8)",
    ),
    MatrixRule(
        "nvidia_xmma",
        _rx(r"xmma_\w*(gemm|conv|fprop|dgrad|wgrad)"),
        True,
        "cuBLAS/cuDNN 'xmma' kernels (sm80_/sm90_xmma_gemm, xmma_implicit_gemm, xmma_wgrad) "
        "are NVIDIA's tensor-core MMA templates",
    ),
    MatrixRule(
        "cutlass_tensorop",
        _rx(r"tensorop|wmma|OpClassTensorOp|MmaTensorOp"),
        True,
        "CUTLASS names its tensor-core kernels 'tensorop' (mma.sync) or 'wmma'; mangled "
        "CUTLASS templates carry OpClassTensorOp",
    ),
    MatrixRule(
        "hopper_blackwell_mma",
        _rx(r"wgmma|gmma|tcgen05|umma|warpgroup|_sm100[af]?\b|sm100[af]?_|Sm100a?Kernel", _I),
        True,
        "Hopper warpgroup MMA (wgmma/gmma) and Blackwell tcgen05/UMMA kernels (TRT-LLM and "
        "FlashInfer cubins end in _sm100f) exist only to drive the tensor cores",
    ),
    MatrixRule(
        "cublaslt_nvjet",
        _rx(r"^nvjet_"),
        True,
        "cuBLASLt's nvjet kernels (Hopper and later) are its tensor-core GEMMs",
    ),
    MatrixRule(
        "flash_attention",
        _rx(r"flash_fwd|flash_bwd|fmha|FlashAttn|flash_attn|sdpa|fused_attn_\w*kernel", _I),
        True,
        "flash-attention / fused multi-head attention kernels (Dao's flash_fwd/flash_bwd, "
        "xformers and TRT-LLM fmha, CK FmhaFwd/FmhaBwdDQDKDV, cuDNN SDPA) compute QK^T and PV "
        "with tensor-core MMAs",
    ),
    MatrixRule(
        "triton_gemm",
        _rx(r"^gemm_fusion|^triton_gemm|^triton_tem_fused_\w*(mm|conv)|^fusion_dot", _I),
        True,
        "XLA's Triton GEMM fusions (gemm_fusion_dot*) and Inductor's matmul templates "
        "(triton_tem_fused_mm) lower tl.dot to tensor-core / MFMA instructions",
    ),
    MatrixRule(
        "amd_mfma",
        _rx(r"mfma|_MI\d+x\d+x\d+|xdl|igemm_\w*gtcx", _I),
        True,
        "AMD CDNA Matrix Cores: MFMA instructions by name, Tensile/hipBLASLt 'Cijk_..._MI16x16x1' "
        "(MatrixInstruction shape), Composable Kernel 'xdl'/'xdlops', MIOpen igemm 'gtcx'",
    ),
    MatrixRule(
        "bf16_gemm_library",
        _rx(r"^(ampere|turing|volta|sm\d+)_(bf16|fp16|h|i8)\w*gemm|^(bmm|gemm)_\w*_t\d+x\d+x\d+"),
        True,
        "cuBLAS 16-bit/int8 GEMMs (ampere_bf16_..., sm90_fp16_...) and TRT-LLM batched GEMM "
        "cubins (bmm_<types>_t128x16x256...) run on tensor cores",
    ),
)

# Precision of a kernel's math, by the data types its name shows. Mixed-input kernels are
# classed by the type the MMA runs at: Blackwell's f8f6f4 MMA with fp8 activations and fp4
# weights runs at the fp8 rate; bf16 activations with fp4 weights are dequantized to bf16.
PRECISION_RULES: tuple[PrecisionRule, ...] = (
    PrecisionRule(
        "trtllm_bmm_16bit",
        _rx(r"^bmm_(Bfloat16|Fp16)"),
        "16bit",
        "TRT-LLM bmm_<activation type>_...: bf16/fp16 activations, weights dequantized",
    ),
    PrecisionRule(
        "trtllm_bmm_fp8",
        _rx(r"^bmm_(Mx)?E4m3|^bmm_(Mx)?E5m2"),
        "fp8",
        "TRT-LLM bmm with fp8 activations (E4m3/E5m2, MX block scaled)",
    ),
    PrecisionRule(
        "fp4",
        _rx(r"E2m1|nvfp4|mxfp4|\bfp4\b|_fp4_|Float4", _I),
        "fp4",
        "4-bit floats: E2M1 (NVFP4/MXFP4)",
    ),
    PrecisionRule(
        "fp8",
        _rx(r"E4m3|E5m2|fp8|Float8|f8f6f4|\bf8\b", _I),
        "fp8",
        "8-bit floats: E4M3/E5M2 (FP8, Hopper and later)",
    ),
    PrecisionRule(
        "int8",
        _rx(r"i8816|i16832|imma|IMMA|[Ii]nt8|INT8|\bi8\b|_i8_|s8s8|u8s8"),
        "int8",
        "8-bit integer MMAs (IMMA: i8816, i16832) and int8 kernels",
    ),
    PrecisionRule(
        "16bit",
        _rx(
            r"half|fp16|bf16|bfloat16|BFloat16|f16|h884|h1688|hgemm|_HHS_|_BBS_|_HB_|_BH_"
            r"|__nv_bfloat16|c10::Half",
            _I,
        ),
        "16bit",
        "fp16/bf16 by name (templates <c10::BFloat16>, cuBLAS h884/h1688, Tensile HHS/BBS)",
    ),
    PrecisionRule(
        "64bit",
        _rx(r"\bdouble\b|fp64|FP64|\bf64\b|_f64_|dgemm|Dgemm|_DDS_"),
        "64bit",
        "double precision",
    ),
)


@lru_cache(maxsize=65536)
def matrix_rule_of(kernel_name: str) -> MatrixRule | None:
    """The rule that decides this kernel's matrix-unit use, or None (no rule: not on them)."""
    for rule in MATRIX_RULES:
        if rule.pattern.search(kernel_name):
            return rule
    return None


def kernel_on_matrix_units(kernel_name: str) -> bool:
    rule = matrix_rule_of(kernel_name)
    return rule is not None and rule.on_matrix_units


@lru_cache(maxsize=65536)
def kernel_precision(kernel_name: str) -> str:
    """'fp4', 'fp8', 'int8', '16bit', '32bit' or '64bit' (32-bit when the name shows none)."""
    for rule in PRECISION_RULES:
        if rule.pattern.search(kernel_name):
            return rule.precision
    return "32bit"
