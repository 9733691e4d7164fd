"""What a framework trace's conversion says: the known GPU-tracing failures with their fixes
(`diagnose`), a failure as one line (`failure_text`) and the form of every line
(`as_line`). Shared by the bridges at capture (`stepscope.capture.bridges`) and by the reader
of a deferred PyTorch save (`stepscope.xspace.deferred`), which must say what the bridge said.
"""

from __future__ import annotations


def as_line(message: str) -> str:
    """A bridge's message the way every stepscope message looks."""
    return message if message.startswith("stepscope:") else f"stepscope: {message}"


def failure_text(title: str, phase: str, exc: BaseException) -> str:
    """One line: which bridge failed, when, why, and the fix where one is known."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hints = diagnose([str(exc)])
    hint = f" ({hints[0]})" if hints else ""
    return (
        f"{title} bridge failed while {phase}: {type(exc).__name__}: {text}{hint}; "
        f"the rest of the profile is kept"
    )


INSUFFICIENT_PRIVILEGES = (
    "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: the NVIDIA driver lets only administrators read GPU "
    "performance data, so no GPU kernels, memcpys or memsets were recorded (host events are "
    "kept). Fix: run as root, or allow it for every user with the driver option "
    "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` (in /etc/modprobe.d/, then reboot "
    "or reload the nvidia module); in a container add `--cap-add SYS_ADMIN` (docker) or the "
    "SYS_ADMIN capability (Kubernetes). See https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)
CUPTI_UNAVAILABLE = (
    "CUPTI, NVIDIA's profiling library, is unavailable ({detail}), so no GPU activity was "
    "recorded (host events are kept). Fix: install the CUPTI of your CUDA version (it comes "
    "with PyTorch's CUDA wheels as nvidia-cuda-cupti-cu12, and with the CUDA toolkit under "
    "extras/CUPTI/lib64: add that directory to LD_LIBRARY_PATH)"
)
_UNAVAILABLE_SIGNS = (
    "libcupti",
    "CUPTI could not be loaded",
    "Failed to load CUPTI",
    "CUPTI_ERROR_NOT_INITIALIZED",
    "CUPTI_ERROR_NOT_COMPATIBLE",
    "CUPTI_ERROR_UNKNOWN",
    "CUPTI_ERROR_NOT_SUPPORTED",
    "cupti initialization failed",
    "CUPTI is not available",
)


def diagnose(texts: list[str]) -> list[str]:
    """Known GPU-tracing failures found in ``texts`` (warnings, errors, log output) -> fixes."""
    found: list[str] = []
    joined = "\n".join(texts)
    if "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in joined or "ERR_NVGPUCTRPERM" in joined:
        found.append(INSUFFICIENT_PRIVILEGES)
    else:
        lowered = joined.lower()
        for sign in _UNAVAILABLE_SIGNS:
            at = lowered.find(sign.lower())
            if at >= 0:
                end = joined.find("\n", at)
                detail = joined[at : end if end >= 0 else None].strip()[:160]
                found.append(CUPTI_UNAVAILABLE.format(detail=detail))
                break
    return found
