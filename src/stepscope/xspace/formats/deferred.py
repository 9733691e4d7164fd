"""A stepscope capture saved with its PyTorch trace deferred, ``<host>.deferred.pb`` beside
``<host>.deferred.trace`` and ``<host>.deferred.meta`` (`stepscope.xspace.deferred`,
docs/formats/run_layout.md).

Host files live in TensorFlow's log-directory layout, ``plugins/profile/<run>/``, like the
XSpace files stepscope writes otherwise. Reading merges torch's trace into stepscope's own
planes as the eager save would have (the same bytes) and decodes them; importing gives that
XSpace, so ``stepscope import`` writes the ``.xplane.pb`` XProf and TensorBoard read.
"""

from __future__ import annotations

from stepscope.logdir import DEFERRED_HOST_SUFFIX as SUFFIX
from stepscope.xspace.formats import InputFormat, Stage, base_name

TYPE_CHECKING = False  # not typing's: see stepscope/__init__.py
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace
    from stepscope.xspace.wire import RawColumns


def host_name(base: str) -> str:
    return base[: -len(SUFFIX)] if base.endswith(SUFFIX) else base


def companions(path: str) -> tuple[str, ...]:
    """The trace and the meta file beside a deferred host file."""
    stem = path[: -len(SUFFIX)] if path.endswith(SUFFIX) else path
    return (f"{stem}.deferred.trace", f"{stem}.deferred.meta")


def _read(path: str, threads: int | None, stage: Stage) -> RawColumns:
    from stepscope.xspace.deferred import merged_bytes
    from stepscope.xspace.formats.xplane import decode_bytes

    stage("merging the PyTorch trace", 0.0)
    data = merged_bytes(path)
    stage("decoding", 0.5)
    return decode_bytes(data, path, threads)


def _to_xspace(path: str) -> tuple[XSpace, str]:
    from stepscope.xspace.deferred import merged_bytes
    from stepscope.xspace.io import parse_xspace

    return parse_xspace(merged_bytes(path), path), host_name(base_name(path))


FORMAT = InputFormat(
    name="deferred",
    title="stepscope capture with its PyTorch trace deferred",
    # None: a file stepscope writes beside two others, never one a user names; the messages
    # that list what profile files are called stay as they were.
    patterns=(),
    layout="session",
    host_file=lambda base: base.endswith(SUFFIX),
    claims=lambda base: base.endswith(SUFFIX),
    host_name=host_name,
    read=_read,
    to_xspace=_to_xspace,
    companions=companions,
)
