"""Other ranks' recorders, reached through their profiler servers.

A request is a ``ProfileRequest`` (TensorFlow's protocol, so it passes the same ports,
tokens and proxies as a capture) whose ``tools`` name the recorder instead of ``xplane.pb``:

- `PEER_TOOL`: "save your last ``duration_ms`` as run ``session_id``", sent by a rank whose
  trigger fired, to every peer; each saves in its own log directory under that run name, so
  with a shared log directory the straggler and the ranks that waited for it are one run.
  The trigger that fired travels as a second entry ``trigger=<name>``.
- `RECENT_TOOL`: `stepscope capture --recent 30s`: save the last 30 s and send them back.

A TensorFlow server does not know these tools and answers with a normal capture.
"""

from __future__ import annotations

import logging

log = logging.getLogger("stepscope.recorder")

PEER_TOOL = "stepscope.recorder.peer_save"
RECENT_TOOL = "stepscope.recorder.recent"
TRIGGER_PREFIX = "trigger="
PEER_TIMEOUT_S = 30.0


def ask_peers(
    peers: tuple[str, ...],
    run_name: str,
    window_ms: int,
    origin: str,
    trigger: str,
    token: str | None = None,
) -> list[str]:
    """Ask each peer to save its last ``window_ms`` as ``run_name``; returns the peers that
    did (a peer that cannot be reached is logged, never raised: the local save stands)."""
    try:
        import grpc

        from stepscope.xspace.proto import profiler_service_pb2 as pb
        from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc
    except ImportError:
        log.warning("stepscope recorder: asking peers needs grpcio (pip install stepscope[remote])")
        return []
    metadata = [("authorization", f"Bearer {token}")] if token else None
    saved = []
    for peer in peers:
        request = pb.ProfileRequest(
            duration_ms=max(1, window_ms),
            tools=[PEER_TOOL, f"{TRIGGER_PREFIX}{trigger}"],
            session_id=run_name,
            host_name=origin,
        )
        try:
            with grpc.insecure_channel(peer) as channel:
                stub = pb_grpc.ProfilerServiceStub(channel)
                stub.Profile(request, timeout=PEER_TIMEOUT_S, metadata=metadata)
            saved.append(peer)
        except grpc.RpcError as exc:
            details = exc.details() if hasattr(exc, "details") else str(exc)
            log.warning("stepscope recorder: peer %s did not save %s: %s", peer, run_name, details)
    return saved
