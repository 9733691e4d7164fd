"""The optional C accelerators: one table, one loader, build stamps, one switch.

Every C extension of stepscope has a pure-Python (NumPy, msgspec, protobuf) twin that gives
byte-identical answers; C is kept only where it earns its place (docs/decisions.md, "native
code"; CONTRIBUTING.md). This module is the one place that knows them:

``EXTENSIONS``
    name -> `Extension` (module path, C sources and headers relative to ``src/stepscope``,
    what it speeds up, what runs without it). setup.py builds exactly these, from this table.
``get(name) -> ModuleType | None``
    The extension when it is built from the current sources and not switched off; None
    otherwise, and the caller runs its pure-Python twin. Call it where the work is done, not
    at import: ``STEPSCOPE_PURE_PYTHON`` is read on every call (a dict lookup), so tests and
    benchmarks can switch an extension off in-process. The import and the stamp check happen
    once per process.
``state(name) -> str``
    ``"on"``, ``"off"`` (switched off by ``STEPSCOPE_PURE_PYTHON``), ``"missing"`` (not built)
    or ``"stale"`` (built from other sources than those beside it: not used).
``report() -> list[str]``
    One line per extension with its state, for ``stepscope --version``.
``source_hash(name) -> str | None``
    The hash the build stamps into the module (`BUILD_HASH`), from the sources beside this
    file; None when they are not there (an installed wheel: nothing to be stale against).

``STEPSCOPE_PURE_PYTHON``: ``1`` (or ``all``) switches every extension off; a comma-separated
list of names (``_kscan,_fastwire``) switches off those only (benchmarks measure each
extension that way); unset, empty or ``0``: all on.

A stale or missing build is reported once per process, as one warning line on the
``stepscope`` logger naming the command that rebuilds it; the pure-Python twins then answer.
A module whose stamp matches has every function of the current sources, so callers never
test for attributes.

This file imports only the standard library: setup.py loads it by path before stepscope is
installed.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

ENV_VAR = "STEPSCOPE_PURE_PYTHON"
HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = ("_native.h",)  # included by every extension: argument checks, checked arithmetic


class Extension:
    """One C extension: its module, sources, headers, and the twin that replaces it."""

    __slots__ = ("depends", "module", "name", "sources", "speeds_up", "threads", "twin")

    def __init__(
        self,
        name: str,
        sources: tuple[str, ...],
        depends: tuple[str, ...],
        speeds_up: str,
        twin: str,
        threads: bool = False,
    ) -> None:
        self.name = name
        package = os.path.dirname(sources[0]).replace("/", ".")
        self.module = f"stepscope.{package}.{name}"
        self.sources = sources
        self.depends = (*depends, *COMMON)
        self.threads = threads  # links pthreads (worker threads outside Windows)
        self.speeds_up = speeds_up
        self.twin = twin


EXTENSIONS: dict[str, Extension] = {
    ext.name: ext
    for ext in (
        Extension(
            "_fastwire",
            (
                "xspace/_fastwire.c",
                "xspace/_fastwire_chunks.c",
                "xspace/_fastwire_headers.c",
                "xspace/_fastwire_rows.c",
            ),
            ("xspace/_fastwire.h", "_gallop.h"),
            "XSpace decoding",
            "protobuf",
            threads=True,
        ),
        Extension(
            "_kscan",
            (
                "xspace/kineto/_kscan.c",
                "xspace/kineto/_kscan_json.c",
                "xspace/kineto/_kscan_buf.c",
            ),
            ("xspace/kineto/_kscan.h",),
            "Kineto JSON scanning",
            "the Python scanner",
        ),
        Extension(
            "_nesting",
            ("stats/_nesting.c",),
            (),
            "event nesting (parents, depths)",
            "NumPy sorts and pointer jumping",
        ),
        Extension(
            "_lod",
            ("stats/trace_index/_lod.c",),
            (),
            "trace index build (depths, levels of detail)",
            "NumPy pointer jumping",
        ),
        Extension(
            "_pytracer",
            ("capture/_pytracer.c",),
            (),
            "Python tracer",
            "sys.setprofile / sys.monitoring",
        ),
    )
}

_loaded: dict[str, tuple[str, ModuleType | None]] = {}
_warned = False


_digests: dict[tuple[str, str], str | None] = {}


def source_hash(name: str, root: str = HERE) -> str | None:
    """A 64-bit digest (16 hex digits: CRC-32 and Adler-32) of the extension's sources and
    headers under ``root``; None when any is missing there. A stamp against stale builds, not
    a security check: zlib, not hashlib (whose OpenSSL module costs 3.6 MB in every process
    that opens a profile). Read once per process, as an extension is loaded once (`get`):
    every kept intermediate's key asks for it (`fingerprint`), 34 reads of the sources in a
    first overview (decision 299)."""
    key = (name, root)
    if key not in _digests:
        _digests[key] = _read_digest(name, root)
    return _digests[key]


def _read_digest(name: str, root: str) -> str | None:
    import zlib

    crc, adler = 0, 1
    ext = EXTENSIONS[name]
    for relative in sorted({*ext.sources, *ext.depends}):
        try:
            with open(os.path.join(root, relative), "rb") as file:
                data = file.read()
        except OSError:
            return None
        part = relative.encode() + b"\0" + data + b"\0"
        crc, adler = zlib.crc32(part, crc), zlib.adler32(part, adler)
    return f"{crc:08x}{adler:08x}"


def switched_off(name: str) -> bool:
    """Whether ``STEPSCOPE_PURE_PYTHON`` switches extension ``name`` off."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value in ("", "0"):
        return False
    if value in ("1", "all", "true", "yes"):
        return True
    return name in {part.strip() for part in value.split(",")}


def _load(name: str) -> tuple[str, ModuleType | None]:
    found = _loaded.get(name)
    if found is None:
        import importlib

        ext = EXTENSIONS[name]
        try:
            module = importlib.import_module(ext.module)
        except ImportError:
            found = ("missing", None)
        else:
            wanted = source_hash(name)
            built = getattr(module, "BUILD_HASH", None)
            found = ("stale", None) if wanted is not None and built != wanted else ("on", module)
        _loaded[name] = found
        if found[0] != "on":
            _warn_once()
    return found


def get(name: str) -> ModuleType | None:
    """The C extension ``name`` (a key of `EXTENSIONS`), or None: see the module docstring."""
    if switched_off(name):
        return None
    return _load(name)[1]


def built(name: str) -> bool:
    """Whether the extension is built from the current sources (switched off or not)."""
    return _load(name)[0] == "on"


def state(name: str) -> str:
    """``on``, ``off``, ``missing`` or ``stale`` (see the module docstring)."""
    if switched_off(name):
        return "off"
    return _load(name)[0]


def fingerprint() -> str:
    """What decides which extensions run, read without loading any: per extension ``off``
    when switched off, else its built file's suffix, size and modification time (or
    ``missing``) with the digest of the sources it is checked against. Equal fingerprints
    give equal states (a build's stamp comes with its file), so it keys values computed
    with the extensions (kept intermediates, `stepscope.tools.kept`) where loading them would
    import their packages: the Kineto reader and the capture package cost 0.025 s of CPU in a
    command that opens a TensorFlow profile."""
    from importlib.machinery import EXTENSION_SUFFIXES

    parts = []
    for name, ext in EXTENSIONS.items():
        if switched_off(name):
            parts.append(f"{name}=off")
            continue
        folder = os.path.join(HERE, os.path.dirname(ext.sources[0]))
        built = "missing"
        for suffix in EXTENSION_SUFFIXES:  # the import system's order
            try:
                found = os.stat(os.path.join(folder, name + suffix))
            except OSError:
                continue
            built = f"{suffix}:{found.st_size}:{found.st_mtime_ns}"
            break
        parts.append(f"{name}={built}:{source_hash(name)}")
    return ",".join(parts)


def rebuild_command() -> str:
    """The command that builds the extensions from the sources beside this file."""
    root = os.path.dirname(os.path.dirname(HERE))
    if os.path.isfile(os.path.join(root, "setup.py")):
        return f"cd {root} && {sys.executable} setup.py build_ext --inplace"
    return "pip install --force-reinstall --no-binary stepscope stepscope (needs a C compiler)"


def _warn_once() -> None:
    global _warned
    if _warned:
        return
    _warned = True
    bad = {n: s for n in EXTENSIONS if (s := _load(n)[0]) != "on"}
    from stepscope import log

    listed = ", ".join(f"{n} ({s})" for n, s in bad.items())
    log.warn(
        f"stepscope: C accelerators not used: {listed}; the pure-Python code answers the same, "
        f"slower. Rebuild: {rebuild_command()} (or set {ENV_VAR}=1 to use none without this "
        "warning)"
    )


def report() -> list[str]:
    """One line per extension: its name, state and what it speeds up (the states say what
    the warning would, so it is not given too)."""
    global _warned
    _warned = True
    lines = []
    for name, ext in EXTENSIONS.items():
        current = state(name)
        note = {
            "on": "",
            "off": f" (switched off by {ENV_VAR})",
            "missing": f" (not built: {ext.twin} instead; rebuild: {rebuild_command()})",
            "stale": f" (built from older sources, not used; rebuild: {rebuild_command()})",
        }[current]
        lines.append(f"  {name:<11} {current:<8} {ext.speeds_up}{note}")
    return lines
