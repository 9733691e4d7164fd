"""How many pytest-xdist workers `-n auto` (pyproject's addopts) starts (decision 860).

The default tier reads no real timing (integration and browser tests are the ones that do),
so its tests may run beside each other: one worker a core this process may run on, for a run
of a folder or of the whole tree (a bare pytest). A run of some files or tests stays in one
process: each worker starts by importing stepscope and collecting (about 2 s of CPU for one
small file here), more than such a run saves. A run that
selects integration or browser tests stays in one process: those tests compare what stepscope
says of a job's timing with what the job measured, and a second worker's tests on the other
core would skew both. `-n N` on the command line, or PYTEST_XDIST_AUTO_NUM_WORKERS, chooses
for themselves; `-n 0` runs serially (scripts/test.sh's lanes, which already run beside
each other).
"""

from __future__ import annotations

import os
import warnings

import pytest

# pytest's own `-m` grammar (no public API; SyntaxError or ParseError by version)
from _pytest.mark.expression import Expression

ENV_VAR = "PYTEST_XDIST_AUTO_NUM_WORKERS"
# The markers an integration or browser test may carry with its own (pyproject's markers).
TIER_MARKERS = ("integration", "browser")
OTHER_MARKERS = ("untimed", "slow")


def selects_only_default_tier(markexpr: str) -> bool:
    """Whether a `-m` expression leaves out every integration and browser test, whatever
    other markers the test carries."""
    if not markexpr:
        return False  # `-m ""`: every tier
    try:
        expression = Expression.compile(markexpr)
    except Exception:  # pytest itself reports the bad expression
        return False
    for tier in TIER_MARKERS:
        for others in ((), *((m,) for m in OTHER_MARKERS), OTHER_MARKERS):
            marks = frozenset((tier, *others))
            if expression.evaluate(lambda name, /, marks=marks, **_: name in marks):
                return False
    return True


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def names_a_folder(config: pytest.Config) -> bool:
    """Whether the run collects a folder: no paths given (pyproject's testpaths), or one of
    those given is a folder."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    base = config.invocation_params.dir
    return any((base / arg.split("::")[0]).is_dir() for arg in config.args)


def auto_workers(
    markexpr: str, environ: dict[str, str] | os._Environ[str], *, whole_folders: bool = True
) -> int:
    chosen = environ.get(ENV_VAR)
    if chosen:
        try:
            return int(chosen)
        except ValueError:
            warnings.warn(f"{ENV_VAR} is not a number: {chosen!r}; ignored", stacklevel=1)
    if not whole_folders or not selects_only_default_tier(markexpr):
        return 0
    count = cores()
    return count if count > 1 else 0  # one core: a worker would only add its start-up


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return auto_workers(
        config.option.markexpr or "", os.environ, whole_folders=names_a_folder(config)
    )
