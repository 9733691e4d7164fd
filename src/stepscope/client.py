"""``stepscope.client.trace`` / ``monitor``: capture from profiler servers, as
``tf.profiler.experimental.client`` does (and from TensorFlow's servers too).

    import stepscope.client
    stepscope.client.trace("grpc://localhost:6009,grpc://localhost:6010", "logs", 2000)

See `stepscope.capture.remote.client`. Needs the ``remote`` extra (grpcio).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.capture.options import ProfilerOptions
    from stepscope.capture.remote.client import TraceResult

__all__ = ["monitor", "trace"]


def trace(
    service_addr: str,
    logdir: str | os.PathLike[str],
    duration_ms: int,
    worker_list: str = "",
    num_tracing_attempts: int = 3,
    options: ProfilerOptions | None = None,
    *,
    session_id: str | None = None,
    token: str | None = None,
    verbose: bool = True,
    progress: bool | None = None,
) -> TraceResult:
    """Capture ``duration_ms`` from every worker into ``logdir/plugins/profile/<session>/``;
    raises `NoTraceCollectedError` when no worker produced data (details in ``.result``)."""
    from stepscope.capture.remote.client import trace as _trace

    return _trace(
        service_addr,
        logdir,
        duration_ms,
        worker_list,
        num_tracing_attempts,
        options,
        session_id=session_id,
        token=token,
        verbose=verbose,
        progress=progress,
    )


def monitor(
    service_addr: str, duration_ms: int, level: int = 1, *, token: str | None = None
) -> str:
    """The server's short text summary over ``duration_ms`` (CPU use, step time if known)."""
    from stepscope.capture.remote.client import monitor as _monitor

    return _monitor(service_addr, duration_ms, level, token=token)
