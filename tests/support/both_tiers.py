"""A pytest plugin that runs every test twice: with the C accelerators, then with their
pure-Python twins (``-p tests.support.both_tiers``).

CI runs the default tier once more under ``STEPSCOPE_PURE_PYTHON=1``, but one pytest process
sees one tier. The mutation runs (scripts/mutation.py) need both in one run for modules that
an accelerator bypasses (the C and the pure-Python twin of a step), or the mutants of the
twin the suite's process does not take survive. Modules that switch
the accelerators themselves (`tests.support.native`) run once, as written.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepscope import accelerators

FIXTURE = "_accelerator_tier"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    names = vars(metafunc.module)
    switches_itself = any(n in names for n in ("c_on", "c_off", "c_and_python", "native"))
    metafunc.parametrize(FIXTURE, ["c"] if switches_itself else ["c", "pure"], indirect=True)


@pytest.fixture(autouse=True)
def _accelerator_tier(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    tier = getattr(request, "param", "c")
    if tier == "pure":
        monkeypatch.setenv(accelerators.ENV_VAR, "1")  # read on every call
    yield tier
