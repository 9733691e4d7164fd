"""Peak compute and memory bandwidth of a GPU: the roofs of op_profile and roofline_model.

Peak FLOP/s = matrix-unit 16-bit dense FLOPs per clock per SM/CU (by architecture, below) x
SM/CU count x clock, when the profile records count and clock (XSpace from TensorFlow/JAX:
``core_count``, ``clock_rate`` in kHz); memory bandwidth from ``memory_bandwidth`` (bytes/s).
When the profile lacks them (Kineto traces record no clock or bandwidth), the datasheet
figures of known devices by name are used; the result says which (``source``).

XLA on ROCm records half the HBM bandwidth of AMD Instinct parts (its formula assumes double
data rate; HBM3/HBM3E move four transfers per memory clock): a gfx950 with 256 CUs records
4096 GB/s where the MI350X/MI355X datasheet says 8 TB/s, and kernels of the JAX GPU fixture
measure 6.6 TB/s. AMD parts identified by architecture and CU count take the datasheet
figure when the profile's is lower (``profile_bytes_per_s`` keeps what the profile said).
"""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.records import record
from stepscope.vocab.dispatch import LAUNCH_NAMES

# (vendor, compute capability major, minor or None = any) -> dense 16-bit matrix FLOPs per
# clock per SM (NVIDIA) or CU (AMD). V100 125 TF = 80 SM x 1.53 GHz x 1024; A100 312 TF =
# 108 x 1.41 GHz x 2048; H100 SXM 989 TF = 132 x 1.83 GHz x 4096; B200 2.25 PF = 148 x
# 1.86 GHz x 8192; MI250X 383 TF = 220 CU x 1.7 GHz x 1024; MI300X 1307 TF = 304 x 2.1 GHz x
# 2048; MI355X 2.5 PF = 256 x 2.4 GHz x 4096.
_FLOPS_PER_CLOCK = {
    ("nvidia", 7, 0): 1024,
    ("nvidia", 7, 2): 1024,
    ("nvidia", 7, 5): 1024,
    ("nvidia", 8, 0): 2048,
    ("nvidia", 8, 6): 1024,
    ("nvidia", 8, 7): 1024,
    ("nvidia", 8, 9): 1024,
    ("nvidia", 9, 0): 4096,
    ("nvidia", 10, 0): 8192,
    ("nvidia", 10, 3): 8192,
    ("nvidia", 12, 0): 2048,
    ("amd", 9, 0): 1024,  # gfx90a (MI200)
    ("amd", 9, 4): 2048,  # gfx942 (MI300)
    ("amd", 9, 5): 4096,  # gfx950 (MI350)
}

# Datasheet peaks (dense 16-bit matrix FLOP/s, memory bytes/s) by device-name fragment.
_KNOWN = (
    ("B200", 2.25e15, 8.0e12),
    ("B100", 1.75e15, 8.0e12),
    ("H200", 989e12, 4.8e12),
    ("H100 PCIe", 756e12, 2.0e12),
    ("H100 NVL", 835e12, 3.9e12),
    ("H100", 989e12, 3.35e12),
    ("H800", 989e12, 3.35e12),
    ("GH200", 989e12, 4.0e12),
    ("A100-SXM4-80GB", 312e12, 2.039e12),
    ("A100 80GB PCIe", 312e12, 1.935e12),
    ("A100", 312e12, 1.555e12),
    ("A10G", 70e12, 0.6e12),
    ("A10", 125e12, 0.6e12),
    ("L40S", 362e12, 0.864e12),
    ("L4", 121e12, 0.3e12),
    ("V100", 125e12, 0.9e12),
    ("T4", 65e12, 0.32e12),
    ("MI355X", 2.5e15, 8.0e12),
    ("MI350X", 2.3e15, 8.0e12),
    ("MI325X", 1.307e15, 6.0e12),
    ("MI300X", 1.307e15, 5.3e12),
    ("MI300A", 0.98e15, 5.3e12),
    ("MI250X", 383e12, 3.2e12),
    ("MI250", 362e12, 3.2e12),
)


# (compute capability major, minor, CU count) of AMD parts -> (name, datasheet HBM bytes/s)
_AMD_BANDWIDTH = {
    (9, 5, 256): ("MI350X/MI355X", 8.0e12),
    (9, 4, 304): ("MI300X/MI325X", 5.3e12),
    (9, 4, 228): ("MI300A", 5.3e12),
    (9, 0, 110): ("MI250X/MI250 (one GCD)", 1.6e12),
    (9, 0, 104): ("MI210", 1.6e12),
}


# The libraries behind XLA's GEMM/convolution custom calls, per vendor: `__cublas$gemm`,
# `__cublas$lt$matmul`, `__cudnn$conv` on NVIDIA; rocBLAS (under the same `__cublas$gemm`),
# `__hipblaslt$matmul` and `__miopen$conv` on AMD.
MATH_LIBRARIES = {"nvidia": "cuBLAS/cuDNN", "amd": "rocBLAS/hipBLASLt/MIOpen"}


@record
class DeviceCaps:
    device: str  # "NVIDIA H100 80GB HBM3", or "AMD GPU (9.5, 256 CUs)"
    peak_flops_per_s: float  # 0 when unknown
    peak_bytes_per_s: float  # 0 when unknown
    source: str  # "profile", "table: <name>", "profile + table", or "unknown"
    profile_bytes_per_s: float = 0.0  # the profile's own figure, 0 when it has none
    vendor: str = ""  # "nvidia", "amd", or "" without a GPU

    @property
    def math_libraries(self) -> str:
        """The vendor's matmul/convolution libraries (their XLA custom calls: `hlo_cost`)."""
        return MATH_LIBRARIES.get(self.vendor, "")

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte where the memory roof meets the compute roof."""
        if self.peak_flops_per_s <= 0 or self.peak_bytes_per_s <= 0:
            return 0.0
        return self.peak_flops_per_s / self.peak_bytes_per_s


_HIP_LAUNCHES = sorted(n for n in LAUNCH_NAMES if n.startswith("hip"))


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def device_caps(profile: Profile) -> DeviceCaps:
    """Caps of the profile's first GPU plane with work (all GPUs of a host are alike)."""
    planes = [p for p in profile.planes if p.is_device and p.line_count]
    planes = planes or [p for p in profile.planes if p.is_device]
    if not planes:
        return DeviceCaps("", 0.0, 0.0, "unknown")
    stats = planes[0].stats
    name = str(stats.get("device_name", "") or "")
    vendor_text = (str(stats.get("device_vendor", "")) + " " + name).lower()
    vendor = "amd" if ("amd" in vendor_text or "instinct" in vendor_text) else "nvidia"
    if not vendor_text.strip() and any(profile.strings.id_of(n) >= 0 for n in _HIP_LAUNCHES):
        # a GPU that says nothing of itself (a Kineto trace without its device properties
        # or runtime versions) launched through HIP: ROCm's
        vendor = "amd"
    major, minor = (
        int(_num(stats.get("compute_cap_major"))),
        int(_num(stats.get("compute_cap_minor"))),
    )
    cores, clock_khz = _num(stats.get("core_count")), _num(stats.get("clock_rate"))
    per_clock = _FLOPS_PER_CLOCK.get((vendor, major, minor))
    flops = per_clock * cores * clock_khz * 1e3 if per_clock and cores and clock_khz else 0.0
    recorded = bandwidth = _num(stats.get("memory_bandwidth"))
    label = name or f"{vendor.upper()} GPU (compute capability {major}.{minor}, {int(cores)} cores)"
    sources = ["profile"] if flops or bandwidth else []
    amd = _AMD_BANDWIDTH.get((major, minor, int(cores))) if vendor == "amd" else None
    if amd is not None and bandwidth and bandwidth < amd[1]:
        bandwidth = amd[1]
        sources.append(f"table: {amd[0]} bandwidth")
    if not flops or not bandwidth:
        known = next((k for k in _KNOWN if k[0].lower() in name.lower()), None) if name else None
        if known is not None:
            flops = flops or known[1]
            bandwidth = bandwidth or known[2]
            sources.append(f"table: {known[0]}")
    return DeviceCaps(label, flops, bandwidth, " + ".join(sources) or "unknown", recorded, vendor)
