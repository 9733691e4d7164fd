"""A made-up input format, declared the way CONTRIBUTING.md's "A new input format" says: one
module with ``FORMAT``, named in `stepscope.xspace.formats.FORMAT_MODULES` (the test adds it
there). ``*.steps.txt``: one ``name start_ns dur_ns`` line per event, on one host thread."""

from __future__ import annotations

from pathlib import Path

from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.formats import InputFormat, Stage
from stepscope.xspace.formats.xplane import decode_bytes
from stepscope.xspace.proto.xplane_pb2 import XSpace
from stepscope.xspace.wire import RawColumns

SUFFIX = ".steps.txt"


def _space(path: Path | str) -> XSpace:
    builder = XSpaceBuilder(hostname=_host(Path(path).name))
    line = builder.plane("/host:CPU").line(1, "python")
    for row in Path(path).read_text().splitlines():
        name, start, dur = row.split()
        line.event(name, int(start), int(dur), {"step_num": int(name.split("#")[1]), "_r": 1})
    return builder.build()


def _host(base: str) -> str:
    return base.removesuffix(SUFFIX)


def _read(path: str, threads: int | None, stage: Stage) -> RawColumns:
    stage("reading steps", 0.0)
    return decode_bytes(_space(path).SerializeToString(), path)


FORMAT = InputFormat(
    name="toy",
    title="toy step list",
    patterns=(f"*{SUFFIX}",),
    layout="anywhere",
    host_file=lambda base: base.endswith(SUFFIX),
    claims=lambda base: base.endswith(SUFFIX),
    host_name=_host,
    read=_read,
    to_xspace=lambda path: (_space(path), _host(Path(path).name)),
)
