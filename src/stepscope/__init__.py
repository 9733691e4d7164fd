"""stepscope: the TensorFlow Profiler's toolset for every ML framework."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
