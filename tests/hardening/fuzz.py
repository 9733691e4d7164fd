"""A mutation fuzzer for the profile readers, run by the tests (and by hand for longer runs).

    python -m tests.hardening.fuzz --cases 400 --seed 1 --max-profile-bytes 128M

Seeds are the crafted cases of issue #13 plus slices of the real fixtures. Each case is a
seed mutated (bytes flipped, cut, a slice repeated, gzip-wrapped) and loaded the way the CLI
loads a file; anything but a profile or a `StepscopeError` is a failure, printed with its
case number so it can be replayed with ``--only N``. Exit status 1 when any case failed.
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
import tempfile
import traceback
from pathlib import Path

from stepscope import limits
from stepscope.errors import StepscopeError
from stepscope.model.load import open_file
from tests.hardening import crafted

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def seeds() -> list[tuple[str, bytes]]:
    """(suffix, bytes) of every seed: crafted cases first, then the smaller real fixtures."""
    out = [
        (".xplane.pb", crafted.ref_stat_without_metadata()),
        (".xplane.pb", crafted.many_planes(300)),
        (".xplane.pb", crafted.many_missing_metadata(300)),
        (".xplane.pb", crafted.empty_events(1000)),
        (".json", crafted.unterminated_json_string(1000)),
        (
            ".json",
            b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 1,'
            b' "tid": 1, "cat": "kernel", "args": {"correlation": 5}}]}',
        ),
    ]
    for path in sorted(FIXTURES.rglob("*.xplane.pb"))[:2]:
        out.append((".xplane.pb", path.read_bytes()[:200_000]))
    for path in sorted(FIXTURES.glob("kineto/*tiny*.json.gz")):
        out.append((".json", gzip.decompress(path.read_bytes())))
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if not buf:
            break
        if choice < 0.4:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif choice < 0.6:
            del buf[rng.randrange(len(buf)) :]
        elif choice < 0.85:  # repeat a slice: many planes / events / brackets
            lo = rng.randrange(len(buf))
            piece = buf[lo : lo + rng.randint(1, 64)]
            buf[lo:lo] = piece * rng.randint(2, 2000)
        else:
            lo = rng.randrange(len(buf))
            buf.insert(lo, rng.choice(b'{}[]",:\\\x00\x80'))
    out = bytes(buf)
    return gzip.compress(out, compresslevel=1) if rng.random() < 0.2 else out


def run(cases: int, seed: int, only: int | None = None) -> list[str]:
    rng = random.Random(seed)
    pool = seeds()
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(cases):
            suffix, base = pool[case % len(pool)] if case < len(pool) else rng.choice(pool)
            data = base if case < len(pool) else mutate(base, rng)
            if only is not None and case != only:
                continue
            path = Path(tmp) / f"case{case}{suffix}"
            path.write_bytes(data)
            try:
                open_file(str(path), use_cache=False)
            except StepscopeError:
                pass
            except Exception:  # every other exception is the finding
                last = traceback.format_exc().strip().splitlines()[-1]
                failures.append(f"case {case} ({len(data)} bytes{suffix}): {last}")
            path.unlink()
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", type=int, default=None)
    parser.add_argument("--max-profile-bytes", type=limits.parse_size, default=128 << 20)
    args = parser.parse_args()
    limits.configure(args.max_profile_bytes)
    failures = run(args.cases, args.seed, args.only)
    for line in failures:
        print(line)
    print(f"{args.cases} cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
