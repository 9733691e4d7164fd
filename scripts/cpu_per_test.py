"""Where a pytest run's CPU goes: each test's CPU seconds, not its wall time.

    python scripts/cpu_per_test.py [--top N] [--tsv FILE] [-- PYTEST_ARGS...]
    python scripts/cpu_per_test.py --top 30 -- -m "not integration and not browser"

`pytest --durations` reports wall time, which on a shared machine follows the other
processes' load more than the test's own work. This runs pytest in this process with a
plugin that reads `getrusage` (this process and the children it waited for) around each
test's setup, call and teardown, and around collection, then prints the whole run's CPU,
the collection's, the per-test overhead's median and the costliest tests, test functions
(parameters summed) and modules. A session-scoped fixture's cost lands on the first test
that uses it. `--tsv` keeps every row (node id, own CPU s, children's CPU s) for comparing
two trees. Decision 695 has the figures it gave.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
from collections import Counter
from collections.abc import Generator, Sequence
from pathlib import Path

import pytest

COLLECTION = "<collection>"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class CpuPerTest:
    """The pytest plugin: one row (node id, own CPU s, children's CPU s) per test."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []
        self._collection_start = (0.0, 0.0)

    @pytest.hookimpl(tryfirst=True)  # before the collection itself (a firstresult hook)
    def pytest_collection(self) -> None:
        self._collection_start = _cpu()

    def pytest_collection_finish(self) -> None:
        own, children = _cpu()
        start_own, start_children = self._collection_start
        self.rows.append((COLLECTION, own - start_own, children - start_children))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        own, children = _cpu()
        try:
            return (yield)
        finally:
            after_own, after_children = _cpu()
            self.rows.append((item.nodeid, after_own - own, after_children - children))


def report(rows: Sequence[tuple[str, float, float]], top: int) -> list[str]:
    """The summary lines: totals, then the `top` costliest tests, functions and modules."""
    cost = {node: own + children for node, own, children in rows}
    tests = {node: c for node, c in cost.items() if node != COLLECTION}
    lines = [
        f"{sum(cost.values()):.2f} s CPU: {cost.get(COLLECTION, 0.0):.2f} s collecting, "
        f"{sum(tests.values()):.2f} s in {len(tests)} tests "
        f"(children {sum(c for _, _, c in rows):.2f} s; "
        f"median test {1000 * statistics.median(tests.values() or [0.0]):.1f} ms)"
    ]
    groups = (
        ("tests", Counter(tests)),
        ("test functions", Counter()),
        ("modules", Counter()),
    )
    for node, c in tests.items():
        groups[1][1][node.split("[")[0]] += c
        groups[2][1][node.split("::")[0]] += c
    for title, counter in groups:
        lines.append(f"-- costliest {title}")
        lines += [f"{c:8.2f}  {name}" for name, c in counter.most_common(top)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25, help="rows of each list (25)")
    parser.add_argument("--tsv", type=Path, help="write every row here")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    args = parser.parse_args(argv)
    plugin = CpuPerTest()
    # -n 0: the plugin reads this process's CPU, so the tests run here, not in pytest-xdist
    # workers (pyproject's addopts start them for a folder's default tier: decision 860)
    status = pytest.main(
        ["-q", "-p", "no:cacheprovider", "-n", "0", *args.pytest_args], plugins=[plugin]
    )
    if args.tsv:
        args.tsv.write_text("".join(f"{n}\t{o:.4f}\t{c:.4f}\n" for n, o, c in plugin.rows))
    print("\n".join(report(plugin.rows, args.top)))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
