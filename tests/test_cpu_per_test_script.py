"""scripts/cpu_per_test.py: the CPU of each test and of collection, summed by function and
module (the figures of decision 695). Its plugin is driven here hook by hook."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

from tests.support.fixtures import REPO


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "cpu_per_test", REPO / "scripts" / "cpu_per_test.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    nodeid = "tests/x.py::test_busy[1]"


def test_the_plugin_gives_each_test_the_cpu_of_its_protocol() -> None:
    script = _script()
    plugin = script.CpuPerTest()
    plugin.pytest_collection()
    plugin.pytest_collection_finish()
    hook: Any = plugin.pytest_runtest_protocol(_Item())
    next(hook)
    started = script._cpu()[0]
    while script._cpu()[0] == started:  # work whose CPU the row must hold
        sum(range(10_000))
    try:
        hook.send(True)
    except StopIteration as done:
        assert done.value is True  # the protocol's own result is passed on
    ((name, own, children),) = plugin.rows[1:]
    assert name == "tests/x.py::test_busy[1]" and own > 0 and children >= 0
    assert plugin.rows[0][0] == script.COLLECTION


def test_the_report_sums_parameters_and_modules() -> None:
    rows = [
        ("<collection>", 1.0, 0.0),
        ("tests/a.py::test_f[1]", 0.5, 0.0),
        ("tests/a.py::test_f[2]", 0.25, 0.25),
        ("tests/b.py::test_g", 0.1, 0.0),
    ]
    lines = _script().report(rows, 2)
    assert lines[0].startswith("2.10 s CPU: 1.00 s collecting, 1.10 s in 3 tests (children 0.25 s")
    assert lines[lines.index("-- costliest test functions") + 1].split() == [
        "1.00",
        "tests/a.py::test_f",
    ]
    assert lines[lines.index("-- costliest modules") + 1].split() == ["1.00", "tests/a.py"]
    assert lines[-1].split() == ["0.10", "tests/b.py"]
