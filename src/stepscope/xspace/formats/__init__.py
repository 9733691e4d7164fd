"""The input formats stepscope reads: one module per format, each declaring ``FORMAT``.

A format says how to recognise its files (by name, and for names that prove nothing by the
first bytes), where its host files live in a log directory, how a file names its host, how
to read a file into the columns the model is built from, and how to import it as an XSpace
(``stepscope import``). Run discovery (`stepscope.model.runs`), loading (`stepscope.model.load`,
`load_profile`), `load_xspace` below and importing (`stepscope.capture.bridges.traces`) ask
this registry and never name a format themselves: a new format is a new module here and its
name in `FORMAT_MODULES` (CONTRIBUTING.md, "A new input format").

`load_xspace` lives here, not in `stepscope.xspace.io`: the formats' readers import io's byte
readers, so io cannot ask the registry (an import cycle, decision 990).

The format modules import their readers when a file is read, so finding runs imports no
parser.
"""

from __future__ import annotations

import gzip
import importlib
import os
import posixpath
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Literal

from stepscope.records import record

TYPE_CHECKING = False  # not typing's: see stepscope/__init__.py
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace
    from stepscope.xspace.wire import RawColumns

# stage(text, fraction): a long read reports what it is doing and how far along it is (0..1).
Stage = Callable[[str, float], None]


@record
class InputFormat:
    """One input format's declaration (a module-level ``FORMAT`` in this package)."""

    name: str  # HostFile.format: shown by `stepscope runs` and the server's run list
    title: str  # for messages: "PyTorch (Kineto) trace"
    # Glob-like names, for messages and docs: ("*.xplane.pb[.gz]",)
    patterns: tuple[str, ...]
    # "session": host files count only in TensorFlow's ``plugins/profile/<run>/`` folders;
    # "anywhere": the files of any folder form a run.
    layout: Literal["session", "anywhere"]
    # Whether a file name alone proves the file is one of this format's host files.
    host_file: Callable[[str], bool]
    # Whether a file given by itself (``stepscope report FILE``) is read as this format;
    # looser than host_file (any ``.pb``), tried in registry order.
    claims: Callable[[str], bool]
    # The host a file of this format stands for, from its name (``vm.xplane.pb`` -> ``vm``).
    host_name: Callable[[str], str]
    # read(path, threads, stage): the raw columns the model is built from.
    read: Callable[[str, int | None, Stage], RawColumns]
    # to_xspace(path): the file as an XSpace and the host it names, for `stepscope import`
    # and `load_xspace` (``path`` as `read` gets it: the text, which may be a URL).
    to_xspace: Callable[[str], tuple[XSpace, str]]
    # Names that prove nothing alone but may hold this format: their first `probe_bytes`
    # bytes (decompressed) are given to `probe`. Never tried in a folder that holds a
    # "session" format's host files (a TensorFlow run's other JSON files are not traces).
    probe_name: Callable[[str], bool] = lambda name: False
    probe: Callable[[bytes], bool] = lambda head: False
    probe_bytes: int = 0
    # recorded_at(head, tail): when a host file's recording starts, in ns on the clock its
    # profile's times use, from the file's first and last `time_bytes` bytes (decompressed);
    # None when they do not say. Files of one "anywhere" folder recorded far apart in time
    # are separate runs (`stepscope.model.runs`).
    recorded_at: Callable[[bytes, bytes], int | None] | None = None
    time_bytes: int = 0
    # companions(path): the files a host file is read with (a deferred save's trace and what
    # merging needs): counted in the host's size, and never shipped to a worker without them.
    companions: Callable[[str], tuple[str, ...]] = lambda path: ()


# Every format, by module under stepscope.xspace.formats, in the order they are tried.
FORMAT_MODULES = ("xplane", "kineto", "deferred")


@cache
def all_formats() -> tuple[InputFormat, ...]:
    """Every declared format, in the order they are tried."""
    found = []
    for module_name in FORMAT_MODULES:
        module = importlib.import_module(f"{__package__}.{module_name}")
        spec = getattr(module, "FORMAT", None)
        if not isinstance(spec, InputFormat):
            raise RuntimeError(f"{module.__name__} declares no FORMAT = InputFormat(...)")
        found.append(spec)
    names = [f.name for f in found]
    if len(set(names)) != len(names):
        raise RuntimeError(f"input formats declared twice: {names}")
    return tuple(found)


def get(name: str) -> InputFormat:
    """The format called ``name`` (a `HostFile.format`)."""
    for spec in all_formats():
        if spec.name == name:
            return spec
    raise KeyError(f"unknown input format {name!r}")


def base_name(path: str | os.PathLike[str]) -> str:
    return posixpath.basename(os.fspath(path).replace(os.sep, "/"))


def claiming(path: str | os.PathLike[str]) -> InputFormat | None:
    """The format a file given by itself is read as, from its name; None when no format
    claims the name. A format whose host files are named so comes first (``vm.deferred.pb``
    is the deferred format's, though XSpace claims any ``.pb``), then the looser claims in
    registry order."""
    base = base_name(path)
    every = all_formats()
    return next((f for f in every if f.host_file(base)), None) or next(
        (f for f in every if f.claims(base)), None
    )


def of_file(path: str | os.PathLike[str]) -> InputFormat:
    """The format a file given by itself is read as: the one claiming its name, else the
    first (TensorFlow's XSpace, whose reader says what is wrong with a file that is none)."""
    return claiming(path) or all_formats()[0]


def load_xspace(path: str | os.PathLike[str]) -> XSpace:
    """A profile file as an XSpace message, read by its format (`of_file`): an `.xplane.pb`
    (optionally gzip-compressed, local or a URL) as it is, any other format converted as
    ``stepscope import`` converts it (a deferred PyTorch save merged, decision 910)."""
    space, _host = of_file(path).to_xspace(os.fspath(path))
    return space


def probing(head: bytes, name: str | None = None) -> InputFormat | None:
    """The format whose probe recognises ``head``, the first bytes of a file; with ``name``,
    only formats for which that name is worth probing."""
    return next(
        (f for f in all_formats() if (name is None or f.probe_name(name)) and f.probe(head)),
        None,
    )


def of_local_file(path: Path) -> InputFormat | None:
    """A local file's format: by its name, else by its first bytes (gzip inflated)."""
    found = claiming(path)
    limit = max(f.probe_bytes for f in all_formats())
    if found is not None or not limit:
        return found
    try:
        with open(path, "rb") as handle:
            head = handle.read(limit)
            if head[:2] == b"\x1f\x8b":
                handle.seek(0)
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    head = unzipped.read(limit)
    except (OSError, EOFError, zlib.error):
        return None  # the format's own reader says what is wrong, if one is tried
    return probing(head)


def expected_names() -> str:
    """What profile files are called, for messages: "*.xplane.pb[.gz], ... or *.json[.gz]"."""
    patterns = [p for f in all_formats() for p in f.patterns]
    return ", ".join(patterns[:-1]) + f" or {patterns[-1]}" if len(patterns) > 1 else patterns[0]
