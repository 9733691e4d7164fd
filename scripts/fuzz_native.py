"""Build the C extensions with AddressSanitizer + UndefinedBehaviorSanitizer and fuzz every
entry point (issue #28); exit status 1 on any sanitizer report or unexpected exception.

    python scripts/fuzz_native.py [--seconds 150] [--seed N] [--only _kscan] [--keep DIR]

The package is copied to a temporary folder and its extensions built there with
``STEPSCOPE_SANITIZE=1`` (setup.py: -fsanitize=address,undefined -fno-wrapv, every report
fatal) and ``STEPSCOPE_STRICT_BUILD=1`` (warnings are errors); the in-place build of the
checkout is not touched. CPython itself is not instrumented, so the fuzzing process is started
with libasan preloaded (``LD_PRELOAD``, the usual way to load sanitized extensions into a
normal interpreter) and leak detection off (the interpreter keeps memory until exit).

First the tests of the C code (`TESTS`: the regression cases of tests/hardening/
test_native_args.py, the decoders' and the tracer's tests) run in the sanitized process; then
the cases of tests/hardening/native_cases.py: each extension's entry points called with
crafted arguments and with mutations of the fixtures and crafted profiles, for a share of
``--seconds``; then the Kineto C scanner against the Python scanner (`pyscan`) on mutated traces. A
failing run prints the extension and seed: ``--only NAME --seed N`` replays it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The tests that drive the C code, run under the sanitizers before the fuzzing.
TESTS = (
    "tests/hardening/test_native_args.py",
    "tests/stats/test_nesting_native.py",
    "tests/stats/test_lod_native.py",
    "tests/stats/test_breakdown_sweeps.py",
    "tests/test_accelerators.py",
    "tests/xspace/test_kineto_fast.py",
    "tests/xspace/test_kineto_native.py",
    "tests/xspace/test_kineto_pyscan.py",
    "tests/xspace/test_fastwire_workers.py",
    "tests/xspace/test_fastwire_headers.py",
    "tests/xspace/test_row_owners.py",
    "tests/model/test_from_xspace.py",
    "tests/capture/test_capture_python_tracer.py",
)


def build(target: Path) -> None:
    """The package copied to ``target`` with sanitized extensions built beside its sources."""
    shutil.copytree(
        ROOT / "src" / "stepscope",
        target / "stepscope",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"),
    )
    env = {**os.environ, "STEPSCOPE_SANITIZE": "1", "STEPSCOPE_STRICT_BUILD": "1"}
    command = [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(target)]
    command += ["--build-temp", str(target / "build"), "--force"]
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def libasan() -> str:
    found = subprocess.run(
        [os.environ.get("CC", "gcc"), "-print-file-name=libasan.so"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not os.path.isabs(found):
        raise SystemExit(f"libasan not found by the compiler ({found!r}): install gcc's libasan")
    return found


def child(seconds: float, seed: int, only: str) -> int:
    """In the sanitized process: the tests of the C code, every fuzzer, then the Kineto
    comparison."""
    from stepscope import accelerators
    from tests.hardening import native_cases

    names = [only] if only else list(native_cases.FUZZERS)
    bad = [n for n in names if accelerators.state(n) != "on"]
    if bad:
        print(f"not built from these sources: {bad}")
        return 1
    if not only:
        import pytest

        started = time.monotonic()
        # --capture=sys: a sanitizer report goes to the real stderr (fd 2), not pytest's capture
        args = ["-q", "-p", "no:cacheprovider", "-m", "not browser", "-x", "--capture=sys"]
        args += TESTS
        if pytest.main([str(ROOT / t) if t in TESTS else t for t in args]):
            return 1
        print(f"tests of the C code under the sanitizers: {time.monotonic() - started:.0f} s")
    share = seconds / (len(names) + (0 if only else 1))
    for name in names:
        print(f"{name}: seed {seed}", flush=True)
        started = time.monotonic()
        calls = native_cases.FUZZERS[name](random.Random(seed), share)
        print(f"{name}: {calls} calls in {time.monotonic() - started:.0f} s", flush=True)
    if only:
        return 0
    print(f"kineto C scanner vs Python scanner: seed {seed}", flush=True)
    cases, differ = native_cases.kineto_disagreements(random.Random(seed), share)
    print(
        f"kineto C scanner vs Python scanner: {cases} traces taken by the scanner, "
        f"{len(differ)} disagree",
        flush=True,
    )
    for text in differ[:3]:
        print(f"  disagreeing trace: {text[:300]!r}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", default="", help="one extension (replays its seed)")
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    if args.child:
        return child(args.seconds, seed, args.only)
    with tempfile.TemporaryDirectory() as tmp:
        target = args.keep or Path(tmp)
        started = time.monotonic()
        build(target)
        print(f"sanitized build: {time.monotonic() - started:.0f} s", flush=True)
        reports = target / "reports"
        reports.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "LD_PRELOAD": libasan(),
            # reports also to files (printed below): a crash can lose what stderr buffered
            "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=1:"
            f"log_path={reports}/asan",
            "UBSAN_OPTIONS": f"halt_on_error=1:print_stacktrace=1:log_path={reports}/ubsan",
            "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]),
            "STEPSCOPE_PURE_PYTHON": "0",
        }
        command = [sys.executable, __file__, "--child", "--seconds", str(args.seconds)]
        command += ["--seed", str(seed), "--only", args.only]
        status = subprocess.run(command, env=env, check=False).returncode
        for report in sorted(reports.iterdir()):
            print(f"--- {report.name}\n{report.read_text(errors='replace')[-6000:]}")
            status = status or 1
    if status:
        print(f"FAILED (exit {status}): replay with --seed {seed} [--only NAME]")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
