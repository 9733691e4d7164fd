"""Remote capture over TensorFlow's gRPC protocol (``tensorflow.ProfilerService``).

- `server`: the profiler server a training process runs (``stepscope.server.start(port)``);
  answers Profile, Terminate and Monitor like ``tf.profiler.experimental.server``.
- `client`: captures from one or many servers at once (``stepscope.client.trace``,
  ``stepscope capture``, the web UI's Capture Profile dialog), TensorFlow's or ours.
- `recording`: "record for this long with these options, then hand me the XSpace" on top of
  the capture session; `paths`: addresses, file names and the server's write permissions.

gRPC is the optional extra ``stepscope[remote]``; it is imported only when a server or client
is used (`require_grpc`), never by ``import stepscope``.
"""

from __future__ import annotations

from types import ModuleType

from stepscope.errors import StepscopeError


def require_grpc() -> ModuleType:
    """The ``grpc`` module, or a one-line error saying how to install it."""
    try:
        import grpc
    except ImportError:
        raise StepscopeError(
            "remote capture needs gRPC: pip install 'stepscope[remote]' (or pip install grpcio)"
        ) from None
    return grpc
