"""Import PyTorch profiler (Kineto) Chrome-trace JSON as XSpace; see docs/formats/kineto.md."""

from stepscope.xspace.kineto.importer import (
    kineto_bytes_to_columns,
    kineto_bytes_to_xspace,
    kineto_to_columns,
    kineto_to_xspace,
)

__all__ = [
    "kineto_bytes_to_columns",
    "kineto_bytes_to_xspace",
    "kineto_to_columns",
    "kineto_to_xspace",
]
