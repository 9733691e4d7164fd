"""Shared test fixtures: real traces are parsed once per session."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from stepscope import log
from stepscope.store import background, location
from stepscope.store.budget import ENV_VAR as CAP_VAR

# REPO and tf_xplane are re-exported for older imports: new code imports tests.support.fixtures.
from tests.support.fixtures import FIXTURES, REPO, tf_xplane  # noqa: F401

# Fixtures shared by the modules of several directories, each registered here only: headless
# Chromium for the page tests, one for the session, and the hooks that keep its asyncio loop
# out of the other tests (tests/support/browser.py says why); the session's DDP jobs
# (tests/support/ddp_runs.py); how many workers `-n auto` starts (tests/support/workers.py).
pytest_plugins = ("tests.support.browser", "tests.support.ddp_runs", "tests.support.workers")

# Property tests (Hypothesis): examples from a fixed seed, so every run and machine tries the
# same ones; no deadline (no test depends on how fast the machine is); no example database
# written into the work tree.
settings.register_profile("stepscope", derandomize=True, deadline=None, database=None)
settings.load_profile("stepscope")
# A run that leaves the integration tier out (the default local run, `-m "not integration and
# not browser"`) tries a quarter of the examples: the properties cost 3.3 s of its CPU at 100
# each. Every other run, and so CI's all-tiers run, tries Hypothesis's 100 (decision 715);
# `--hypothesis-profile` chooses either.
QUICK_PROFILE = "stepscope-default-tier"
settings.register_profile(QUICK_PROFILE, settings.get_profile("stepscope"), max_examples=25)


def pytest_configure(config: pytest.Config) -> None:
    chosen = config.getoption("hypothesis_profile", None)
    if chosen is None and "not integration" in (config.option.markexpr or ""):
        settings.load_profile(QUICK_PROFILE)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the modules it imported, the ~230,000 objects the collector then
    tracks) lives to the session's end: frozen, no later full collection walks it again
    (decision 715)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"fixtures not found at {FIXTURES}: clone the repo with shared/ beside it")
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every session gets an empty store (`stepscope.store`): results never come from what an
    older checkout cached in the user's cache directory under the same version number.
    It is unbounded, so no test's cache hit depends on the free space of the machine's disk
    (the default cap is a share of it); tests of the cap set their own."""
    settings = {location.ENV_VAR: str(tmp_path_factory.mktemp("stepscope_cache")), CAP_VAR: "0"}
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def _stepscope_logger_ready() -> None:
    """The ``stepscope`` logger set up (its handler, INFO) before any test, as a program's
    first line sets it up: a test whose code first asks for it inside ``caplog.at_level``
    found it at WARNING, kept that as the user's level, and at_level then put back NOTSET,
    so every later test in that worker read INFO as disabled (tests/cli/test_quiet.py
    failed after the callbacks' message tests)."""
    log.logger()


@pytest.fixture(autouse=True)
def _store_writes_finished() -> Iterator[None]:
    """Store entries are written on threads after the answer (`stepscope.store.background`):
    each test's writes end with the test, so none lands in a later test's store or
    environment (a monkeypatched cache directory or cap)."""
    yield
    background.wait()


# The frameworks whose bridges `stepscope.start` runs when they are imported ("auto" mode).
FRAMEWORK_MODULES = ("torch", "tensorflow", "jax")


@pytest.fixture(autouse=True)
def _frameworks_as_if_never_imported(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A default-tier test sees the process a framework-free program has, whatever ran before it.

    An integration test that imports torch, JAX or TensorFlow leaves it in `sys.modules`, and
    every later `stepscope.start` would run its bridge and record its threads' events (JAX's
    Python garbage-collection spans, TensorFlow's own metadata plane), so a default-tier test's
    answer would depend on the order the tests ran in. Such a test is hidden the modules (the
    bridges' "auto" choice skips a module whose entry is None); integration and browser tests,
    which use the frameworks, are not.
    """
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("browser"):
        return
    for module in FRAMEWORK_MODULES:
        if sys.modules.get(module) is not None:
            monkeypatch.setitem(sys.modules, module, None)


# Frameworks no test module may import when it is imported. Collection imports every test
# module, whatever the tier (`-m` deselects afterwards), so one such import costs every
# default run its seconds of CPU (torch 1.5-3.5 s, TensorFlow 4-10 s: decision 461) and
# starts its threads there. A test that uses a framework imports it inside the test or a
# fixture. Checked module by module as each is collected (decision 695).
NOT_AT_COLLECTION = (*FRAMEWORK_MODULES, "transformers", "lightning", "keras")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    if not isinstance(collector, pytest.Module):
        return (yield)
    before = {name for name in NOT_AT_COLLECTION if name in sys.modules}
    report = yield
    imported = [n for n in NOT_AT_COLLECTION if n in sys.modules and n not in before]
    if imported and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.nodeid} imports {', '.join(imported)} when it is imported: import it "
            "inside the tests that use it (tests/conftest.py, decision 695)"
        )
    return report
