"""Build the optional C accelerators; stepscope works without them (pure-Python twins).

The extensions are those of `stepscope.accelerators.EXTENSIONS` (one table for this build, the
loader and ``stepscope --version``). Each is stamped with the hash of its sources, so the
loader can tell a build made from other sources (a checkout updated without rebuilding) and
not use it.

Environment:
- ``STEPSCOPE_STRICT_BUILD=1``: compiler warnings are errors and a failed build fails the
  install (CI sets it; a user's install falls back to pure Python instead).
- ``STEPSCOPE_SANITIZE=1``: build with AddressSanitizer and UndefinedBehaviorSanitizer (the
  fuzzing job of scripts/test.sh; load with ``LD_PRELOAD`` of libasan, see scripts/fuzz_native.py).
"""

import importlib.util
import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join("src", "stepscope")


def _table():
    # Loaded by path: stepscope itself is not importable before it is installed.
    path = os.path.join(HERE, PACKAGE, "accelerators.py")
    spec = importlib.util.spec_from_file_location("_stepscope_accelerators", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flags():
    windows = sys.platform == "win32"
    strict = os.environ.get("STEPSCOPE_STRICT_BUILD") == "1"
    compile_args = [] if windows else ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    link_args = []
    if strict and not windows:
        compile_args.append("-Werror")
    if os.environ.get("STEPSCOPE_SANITIZE") == "1":
        sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
        # -fno-wrapv: Python builds with -fwrapv, under which signed overflow is not reported
        compile_args += ["-O1", "-g", "-fno-wrapv", "-fno-sanitize-recover=all", *sanitize]
        link_args += sanitize
    return compile_args, link_args, strict


def extensions():
    table = _table()
    compile_args, link_args, strict = _flags()
    threads = [] if sys.platform == "win32" else ["-pthread"]
    out = []
    for name, ext in table.EXTENSIONS.items():
        stamp = table.source_hash(name, os.path.join(HERE, PACKAGE))
        out.append(
            Extension(
                ext.module,
                sources=[os.path.join(PACKAGE, s) for s in ext.sources],
                depends=[os.path.join(PACKAGE, d) for d in ext.depends],
                define_macros=[("STEPSCOPE_BUILD_HASH", f'"{stamp}"')],
                extra_compile_args=[*compile_args, *(threads if ext.threads else [])],
                extra_link_args=[*link_args, *(threads if ext.threads else [])],
                # No compiler: the install still succeeds and the pure-Python twin answers
                # (the loader warns once); CI's strict build fails instead.
                optional=not strict,
            )
        )
    return out


setup(ext_modules=extensions())
