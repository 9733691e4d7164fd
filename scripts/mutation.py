"""Mutation testing of the core analysis modules: how many small bugs does the suite catch?

Each group below names modules and the tests that exercise them. For a group, mutmut (pinned
in the dev extra) copies the source and the tests into a scratch folder (the work tree is
never touched), makes every small change its operators know (``<`` -> ``<=``, ``+`` -> ``-``,
a constant off by one, an argument dropped...), runs the group's tests that reach the changed
function against each change, and records whether a test failed ("killed") or all passed
("survived"). This script prints, per module, the share killed, and every survivor as a
one-line diff; survivors listed in ``scripts/mutation_equivalents.toml`` (a change that no
input can tell apart, with the reason) are shown as equivalent and left out of the score.

    .venv/bin/python scripts/mutation.py --list          # the groups, modules and tests
    .venv/bin/python scripts/mutation.py diff kernels    # some groups (default: every one)
    .venv/bin/python scripts/mutation.py --sample 0 breakdown   # a tenth: an estimate
    .venv/bin/python scripts/mutation.py --modules stepscope/stats/steps/breakdown.py -- breakdown
    .venv/bin/python scripts/mutation.py --rerun-survivors --tests NEW_TEST_FILE -- diff

A mutant takes 1-40 s (the tests that reach it, run in a forked process); the whole set of
groups is several hours on two cores, so CI does not run it.

Exit status 1 when a module's score is under ``--target`` (85%). The figures, before and
after the tests of issue #34, are in docs/testing.md.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
EQUIVALENTS = REPO / "scripts" / "mutation_equivalents.toml"
# mutmut's exit codes of a mutant's test run (mutmut.stats.status_by_exit_code). A mutant whose
# tests ran past mutmut's time limit (15x their normal time) counts as killed: the suite does
# not pass with it (CI's pytest-timeout fails such a run).
TIMEOUT_CODES = {24, -24, 36, 152, 255}
KILLED_CODES = {1, 3} | TIMEOUT_CODES
SURVIVED_CODES = {0, 5, 33, None}  # passing, or no test reached the change


@dataclass(frozen=True)
class Group:
    modules: tuple[str, ...]  # paths under src/
    tests: tuple[str, ...]  # pytest arguments: files or folders under tests/
    # pytest plugins for every run of the group's tests (``-p``), e.g. tests.support.both_tiers
    # to run each test with the C accelerators and again with their pure-Python twins
    plugins: tuple[str, ...] = ()


# The step database's tests (steps, attribution, breakdown rules, the "bound by" limits).
_STEP_TESTS = (
    "tests/stats/test_breakdown.py",
    "tests/stats/test_breakdown_rules.py",
    "tests/stats/test_gpu_breakdown.py",
    "tests/stats/test_steps.py",
    "tests/stats/test_staging.py",
    "tests/stats/test_wait_attribution.py",
    "tests/stats/test_step_pairing.py",
)

# The Kineto import's tests that read what categories.py and the route decide.
_KINETO_TESTS = (
    "tests/xspace/test_kineto.py",
    "tests/xspace/test_kineto_args.py",
    "tests/xspace/test_kineto_conservation.py",
    "tests/xspace/test_kineto_columns.py",
    "tests/xspace/test_kineto_fast.py",
    "tests/xspace/test_kineto_fwdbwd.py",
    "tests/xspace/test_kineto_pyscan.py",
    "tests/xspace/test_kineto_categories.py",
    "tests/xspace/test_kineto_rare.py",
)

GROUPS: dict[str, Group] = {
    "diff": Group(
        ("stepscope/stats/compare/significance.py", "stepscope/stats/compare/diff.py"),
        ("tests/compare",),
    ),
    # Both tiers take the same column route since the Python scanner (pyscan) joined the C
    # one, so the group's tests run once (no tests.support.both_tiers).
    "kineto": Group(("stepscope/xspace/kineto/categories.py",), _KINETO_TESTS),
    # the Kineto import's routing of events to device, stream and host lines (fast_route, the
    # only route since decision 210) and the device/resource tables it reads (devices)
    "kineto_route": Group(
        ("stepscope/xspace/kineto/fast_route.py", "stepscope/xspace/kineto/devices.py"),
        (
            *_KINETO_TESTS,
            "tests/xspace/test_kineto_native.py",
            "tests/xspace/test_kineto_repair.py",
            "tests/xspace/test_kineto_same_bytes.py",
            "tests/xspace/test_kineto_scan.py",
            "tests/xspace/test_kineto_devices.py",
            "tests/xspace/test_kineto_route_edges.py",
            "tests/xspace/test_kineto_route_flows.py",
        ),
    ),
    "memory": Group(
        # the memory profile and the step spans it numbers its steps with
        ("stepscope/stats/memory.py", "stepscope/stats/steps/spans.py"),
        (
            "tests/stats/test_memory_profile_db.py",
            "tests/stats/test_step_spans.py",
            "tests/stats/test_memory_allocators.py",
            "tests/stats/test_memory_edges.py",
            "tests/tools/test_kernel_stats_memory_profile_tools.py",
        ),
    ),
    "kernels": Group(
        ("stepscope/stats/kernel_rules.py", "stepscope/stats/gpu/tensor_core.py"),
        (
            "tests/stats/test_kernel_rules.py",
            "tests/stats/test_kernel_stats_db.py",
            "tests/stats/test_tensor_core_rules.py",
        ),
    ),
    "stragglers": Group(
        ("stepscope/stats/stragglers.py", "stepscope/stats/stragglers_own_time.py"),
        (
            "tests/pod/test_stragglers.py",
            "tests/pod/test_arrivals.py",
            "tests/pod/test_own_time.py",
            "tests/pod/test_straggler_text.py",
            "tests/pod/test_arrival_rules.py",
        ),
    ),
    # collective names of every framework, and each rank's calls matched across ranks
    "collectives": Group(
        ("stepscope/vocab/collectives.py", "stepscope/stats/collective_calls.py"),
        (
            "tests/stats/test_collectives.py",
            "tests/stats/test_collective_calls.py",
            "tests/pod/test_arrivals.py",
        ),
    ),
    "input_bound": Group(
        # the headline, and the input staged inside a step it rests on
        (
            "stepscope/stats/advice.py",
            "stepscope/stats/bound.py",
            "stepscope/stats/steps/staging.py",
        ),
        (
            "tests/stats/test_advice.py",
            "tests/stats/test_recommend.py",
            "tests/stats/test_bound_evidence.py",
            "tests/stats/test_bound_gpu.py",
            "tests/stats/test_dispatch_bound.py",
            # the headline's evidence: staged input, sampled Python, where untraced time sits
            "tests/stats/test_staging.py",
            "tests/stats/test_staging_windows.py",
            "tests/stats/test_python_samples.py",
            "tests/stats/test_wait_attribution.py",
        ),
    ),
    "breakdown": Group(
        (
            "stepscope/stats/steps/breakdown.py",
            "stepscope/stats/steps/type_sweep.py",
            "stepscope/stats/steps/sweep.py",
            "stepscope/stats/steps/feeds.py",
        ),
        (
            *_STEP_TESTS,
            # the database at its edges, and what it hands the dispatch and Python lookups
            "tests/stats/test_breakdown_edges.py",
            "tests/stats/test_breakdown_sweeps.py",
            "tests/stats/test_dispatch_bound.py",
            "tests/stats/test_python_samples.py",
        ),
    ),
    # where steps come from (markers, inferred steps), XProf's event groups, and the pairing
    # of several hosts' steps into pod steps
    "step_db": Group(
        (
            "stepscope/stats/steps/markers.py",
            "stepscope/stats/steps/pairing.py",
            "stepscope/stats/steps/groups.py",
            "stepscope/stats/steps/infer.py",
        ),
        (
            *_STEP_TESTS,
            "tests/stats/test_breakdown_edges.py",
            "tests/stats/test_group_joins.py",
            "tests/stats/test_properties.py",
            "tests/stats/test_golden_tf.py",
            "tests/stats/test_golden_jax.py",
            "tests/stats/test_infer_steps.py",
            "tests/stats/test_step_markers.py",
            "tests/stats/test_xprof_pairing.py",
            "tests/stats/test_step_groups.py",
        ),
    ),
    "event_types": Group(
        ("stepscope/stats/events.py",),
        (
            *_STEP_TESTS,
            "tests/stats/test_breakdown_edges.py",
            "tests/stats/test_breakdown_sweeps.py",
            "tests/stats/test_collectives.py",
            "tests/stats/test_own_work.py",
            "tests/stats/test_dispatch_bound.py",
            "tests/stats/test_event_types.py",
            "tests/xspace/test_kineto_categories.py",
            "tests/serve/test_categories_api.py",
        ),
    ),
    "limits": Group(
        (
            "stepscope/stats/steps/limits.py",
            "stepscope/stats/steps/limit_table.py",
            "stepscope/stats/steps/dispatch.py",
            "stepscope/stats/steps/waits.py",
        ),
        (
            *_STEP_TESTS,
            "tests/stats/test_breakdown_edges.py",
            "tests/stats/test_breakdown_sweeps.py",
            "tests/stats/test_dispatch_bound.py",
            "tests/stats/test_python_samples.py",
            "tests/stats/test_collectives.py",
            "tests/stats/test_dispatch_edges.py",
            "tests/stats/test_waits_edges.py",
            "tests/stats/test_limits_edges.py",
        ),
    ),
}


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's key: module.x_function__mutmut_N
    status: str  # killed / survived / timeout / other
    removed: str  # the original line(s), stripped
    added: str  # the mutated line(s), stripped


def _module_of(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def prepare(group: str, spec: Group, work: Path) -> Path:
    """A scratch copy of the repository for one group, with mutmut's config for it."""
    root = work / group
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache")
    shutil.copytree(REPO / "src", root / "src", ignore=ignore)
    shutil.copytree(REPO / "tests", root / "tests", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    # Tests find the shared fixtures beside the repository (../shared); mutmut runs them from
    # root/mutants, so root/shared must lead there.
    (root / "shared").symlink_to((REPO.parent / "shared").resolve())
    write_config(root, spec)
    return root


def write_config(root: Path, spec: Group) -> None:
    only = "\n    ".join(f"src/{m}" for m in spec.modules)
    tests = "\n    ".join(spec.tests)
    plugins = "".join(f"    -p\n    {p}\n" for p in spec.plugins)
    (root / "setup.cfg").write_text(
        "[mutmut]\n"
        "source_paths = src\n"
        f"only_mutate =\n    {only}\n"
        f"pytest_add_cli_args_test_selection =\n    {tests}\n"
        # Each mutant's tests run in a process forked before any test ran: module-level caches
        # (fixtures parsed once per session) must not carry the unmutated answers over.
        "process_isolation = forkserver\n"
        # -n 0: mutmut reads which tests reach each function, and runs them, in its own
        # process; pyproject's addopts would hand a folder's tests to pytest-xdist workers.
        "pytest_add_cli_args =\n"
        "    -p\n    no:cacheprovider\n    -q\n    -n\n    0\n"
        "    -m\n    not integration and not browser\n"
        f"{plugins}"
    )


def _code(path: Path) -> str:
    """The module's code, docstrings left out (a reworded docstring makes no new mutant)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass()
    return ast.dump(tree)


def rerun_survivors(
    group: str, spec: Group, work: Path, sample: str = "", only: list[str] | None = None
) -> list[str]:
    """Put the current tests into the last run's scratch folder; the names of the last run's
    survivors (of the sample and ``--only``), for mutmut to test again (with the given tests:
    its test map is made again). Every other mutant keeps its verdict."""
    root = work / group
    for module in spec.modules:
        if _code(REPO / "src" / module) != _code(root / "src" / module):
            raise SystemExit(f"{module} changed since the last run: run {group} in full")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for tests in (root / "tests", root / "mutants" / "tests"):
        shutil.rmtree(tests, ignore_errors=True)
        shutil.copytree(REPO / "tests", tests, ignore=ignore)
    (root / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    write_config(root, spec)
    return survivors(root, spec, sample, only)


def survivors(
    root: Path, spec: Group, sample: str = "", only: list[str] | None = None
) -> list[str]:
    """The mutants the last run tested and no test killed, by name, of the sample and
    ``--only``. Named one by one because mutmut tests again EVERY mutant a pattern matches,
    killed or not (a ``*__mutmut_*[1]`` pattern once re-ran the killed against the new tests
    alone and listed them as survivors); a mutant never tested (``None``: outside the last
    run's sample) is no survivor."""
    patterns = _patterns(sample, only)
    names = []
    for module in spec.modules:
        meta = root / "mutants" / "src" / f"{module}.meta"
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if code is None or code in KILLED_CODES:
                continue
            if patterns != ["*"] and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            names.append(name)
    return sorted(names, key=_natural)


def _patterns(sample: str = "", only: list[str] | None = None) -> list[str]:
    """mutmut's name patterns for ``--only`` and ``--sample`` (``["*"]``: every mutant)."""
    patterns = only or ["*"]
    if sample:  # mutants whose number ends in one of these digits
        patterns = [f"{p}__mutmut_*[{sample}]" if "mutmut" not in p else p for p in patterns]
    return patterns


def run_mutmut(
    root: Path,
    jobs: int,
    sample: str = "",
    only: list[str] | None = None,
    names: list[str] | None = None,
) -> None:
    """mutmut in ``root``: the mutants of the sample and ``--only`` not tested yet, or (with
    ``names``) exactly those mutants, tested again whatever their last verdict."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)]
    patterns = names or _patterns(sample, only)
    if patterns != ["*"]:
        cmd += patterns
    with open(root / "mutmut.log", "w") as log:
        status = subprocess.run(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    if status.returncode != 0:
        tail = (root / "mutmut.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"mutmut failed in {root} (see mutmut.log):\n{tail}")


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
out = {}
for name, path in json.load(sys.stdin):
    out[name] = get_diff_for_mutant(name, path=path)
json.dump(out, sys.stdout)
"""


def collect(root: Path, spec: Group, sample: str = "") -> dict[str, list[Mutant]]:
    """Every mutant of each module (of the sample), with its status and its change."""
    codes: dict[str, dict[str, int | None]] = {}
    for module in spec.modules:
        meta = root / "mutants" / "src" / f"{module}.meta"
        by_key = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        if sample:
            by_key = {k: v for k, v in by_key.items() if k[-1] in sample}
        codes[module] = by_key
    wanted = [
        (name, f"src/{module}")
        for module, by_key in codes.items()
        for name, code in by_key.items()
        if code not in KILLED_CODES
    ]
    diffs = json.loads(
        subprocess.run(
            [sys.executable, "-c", _DIFFS],
            cwd=root,
            input=json.dumps(wanted),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    out: dict[str, list[Mutant]] = {}
    for module, by_key in codes.items():
        mutants = []
        for name, code in sorted(by_key.items(), key=lambda kv: _natural(kv[0])):
            if code in KILLED_CODES:
                mutants.append(Mutant(name, "killed", "", ""))
                continue
            status = "survived" if code in SURVIVED_CODES else f"exit {code}"
            removed, added = _changed_lines(diffs.get(name, ""))
            mutants.append(Mutant(name, status, removed, added))
        out[module] = mutants
    return out


def _natural(name: str) -> tuple[str, int]:
    stem, _, n = name.rpartition("_")
    return stem, int(n) if n.isdigit() else 0


def _changed_lines(diff: str) -> tuple[str, str]:
    removed, added = [], []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
    return " / ".join(removed), " / ".join(added)


def _function(name: str) -> str:
    """``pkg.mod.x_func__mutmut_3`` -> ``func``; methods: ``xǁClassǁmethod__mutmut_3``."""
    last = name.rsplit(".", 1)[-1].split("__mutmut_")[0]
    return last.removeprefix("x_").replace("ǁ", ".").strip(".")


def load_equivalents() -> list[dict[str, str]]:
    if not EQUIVALENTS.exists():
        return []
    return list(tomllib.loads(EQUIVALENTS.read_text())["equivalent"])


def equivalent_reason(module: str, mutant: Mutant, equivalents: list[dict[str, str]]) -> str | None:
    """The reason a survivor is equivalent, when the list has its module, function and change."""
    for e in equivalents:
        if e.get("module", _module_of(module)) != _module_of(module):
            continue
        if e.get("function", _function(mutant.name)) != _function(mutant.name):
            continue
        if e["original"] in mutant.removed and e["mutated"] in mutant.added:
            return e["reason"]
    return None


def report(group: str, results: dict[str, list[Mutant]], target: float) -> bool:
    equivalents = load_equivalents()
    ok = True
    for module, mutants in results.items():
        killed = sum(m.status == "killed" for m in mutants)
        alive = [m for m in mutants if m.status != "killed"]
        equivalent = {m.name: equivalent_reason(module, m, equivalents) for m in alive}
        n_equivalent = sum(r is not None for r in equivalent.values())
        counted = len(mutants) - n_equivalent
        score = 100.0 * killed / counted if counted else 100.0
        ok &= score >= target
        print(
            f"{group}: {module}: {killed} of {counted} mutants killed ({score:.1f}%); "
            f"{len(alive) - n_equivalent} survived, {n_equivalent} equivalent, "
            f"{len(mutants)} made"
        )
        for m in alive:
            reason = equivalent[m.name]
            tag = f"equivalent ({reason})" if reason else m.status
            print(f"  {_function(m.name)}: {m.removed}  ->  {m.added}    [{tag}]")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"groups to run (default all: {list(GROUPS)})")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (2)")
    parser.add_argument("--target", type=float, default=85.0, help="least %% killed (85)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(os.environ.get("TMPDIR", "/tmp")) / "stepscope-mutation",
        help="scratch folder (a copy of src and tests per group)",
    )
    parser.add_argument("--list", action="store_true", help="list the groups and exit")
    parser.add_argument(
        "--tests",
        nargs="+",
        default=None,
        help="with --rerun-survivors: only these tests (the new or changed ones: the "
        "others already ran on every survivor)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="GLOB",
        help="only the mutants whose name matches (mutmut's names: module.x_function__mutmut_N)",
    )
    parser.add_argument(
        "--modules",
        nargs="+",
        default=None,
        metavar="PATH",
        help="only these of the groups' modules (paths under src/), e.g. one of a slow group",
    )
    parser.add_argument(
        "--sample",
        default="",
        metavar="DIGITS",
        help="only the mutants whose number ends in one of DIGITS ('0': a tenth): an "
        "estimate of the score for groups too slow to run whole",
    )
    parser.add_argument(
        "--resume", action="store_true", help="go on with an interrupted run in --work"
    )
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="test only the last run's survivors again (of --sample and --only, each named "
        "to mutmut), with the current tests; the killed keep their verdicts (tests were only "
        "added) and mutants the last run did not test stay untested; the modules must not "
        "have changed",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="print the last run's results again"
    )
    args = parser.parse_args(argv)
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {unknown}; the groups are {list(GROUPS)}")
    if args.list:
        for name, spec in GROUPS.items():
            print(f"{name}: {', '.join(spec.modules)}\n    tests: {' '.join(spec.tests)}")
        return 0
    ok = True
    for group in args.groups or list(GROUPS):
        spec = GROUPS[group]
        if args.modules:
            spec = replace(spec, modules=tuple(m for m in spec.modules if m in args.modules))
        root = args.work / group
        missing = [t for t in spec.tests if not (REPO / t).exists()]
        if missing:  # an older checkout (the "before" figures): its tests only
            print(f"{group}: not in this checkout, left out: {' '.join(missing)}")
            spec = replace(spec, tests=tuple(t for t in spec.tests if t not in missing))
        if args.rerun_survivors:
            if args.tests:
                spec = replace(spec, tests=tuple(args.tests))
            names = rerun_survivors(group, spec, args.work, args.sample, args.only)
            if names and not args.report_only:
                run_mutmut(root, args.jobs, names=names)
            elif not names:
                print(f"{group}: the last run left no survivors to test again")
        else:
            if not (args.report_only or (args.resume and (root / "setup.cfg").exists())):
                prepare(group, spec, args.work)
            if not args.report_only:
                run_mutmut(root, args.jobs, args.sample, args.only)
        if args.sample:
            print(f"{group}: a sample, the mutants numbered *{args.sample}")
        ok &= report(group, collect(root, spec, args.sample), args.target)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
