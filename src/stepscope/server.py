"""``stepscope.server.start(port)``: the profiler server, as ``tf.profiler.experimental.server``.

    import stepscope.server
    server = stepscope.server.start(6009)     # 127.0.0.1:6009; `stepscope capture` reaches it
    ...training...
    server.stop()

See `stepscope.capture.remote.server` for the protocol, the token and ``allowed_roots``.
Needs the ``remote`` extra (grpcio); imported only when called.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.capture.recorder.config import RecorderConfig
    from stepscope.capture.remote.server import ProfilerServer

__all__ = ["start"]


def start(
    port: int,
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    recorder: RecorderConfig | None = None,
) -> ProfilerServer:
    """Serve ``tensorflow.ProfilerService`` on ``host:port`` (0: a free port); returns the
    running server (``.port``, ``.address``, ``.stop()``). Loopback unless ``host`` says
    otherwise; with ``token`` every request needs ``authorization: Bearer <token>``; the server
    writes files itself only under ``allowed_roots`` (default: none, data goes back instead).
    With ``recorder`` (a `stepscope.recorder.RecorderConfig`) the flight recorder starts too,
    so `stepscope capture --recent` and peers' triggers reach it (call from the training
    thread: the recorder's SIGUSR1 handler needs the main thread)."""
    from stepscope.capture.remote.server import start as _start

    server = _start(port, host=host, token=token, allowed_roots=allowed_roots)
    if recorder is not None:
        import stepscope.capture.recorder as flight

        try:
            flight.start(recorder)
        except BaseException:
            server.stop()
            raise
    return server
