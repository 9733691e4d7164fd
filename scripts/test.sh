#!/usr/bin/env bash
# Install everything the test suite needs into .venv, then run every check CI runs:
# generated-code freshness, ruff (lint + format), the web UI's ESLint and tsc checks, mypy,
# the layers contract and pytest's default tier without the C accelerators, while the C
# accelerators built with sanitizers are tested and fuzzed beside them, then pytest's default
# tier with the C accelerators; then pytest's integration and browser tiers (decision 702).
# Usage: bash scripts/test.sh [--pure-python-only] [extra pytest args]
#   --pure-python-only: no C compiler here; run every tier without the C accelerators (and
#   say so) instead of failing because they are not built.
set -euo pipefail
PURE_ONLY=0
if [ "${1:-}" = "--pure-python-only" ]; then PURE_ONLY=1; shift; fi
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
# Bytecode caches are written (src/, tests/: git-ignored): with PYTHONDONTWRITEBYTECODE=1, as
# on the machines CI ran on, every interpreter the tests start compiled the stepscope modules it
# imports again and each pytest run rewrote every test module's asserts (decision 438).
unset PYTHONDONTWRITEBYTECODE

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "system packages"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing and cannot apt-get install it: browser tests will be skipped"
  fi
fi

step "python environment"
[ -x .venv/bin/python ] || python3 -m venv .venv
PY=.venv/bin/python
quiet() { grep -v '^WARNING: Location' || true; }  # the machine's pip config is noisy
$PY -m pip install -q --upgrade pip 2>&1 | quiet
# CPU PyTorch comes from the machine's local wheel (pip install torch==2.13.0 takes it).
# --no-compile: pip would compile all 21,500 modules of the installed packages to bytecode,
# 64 of the install's 103 s of CPU; Python compiles those the suite imports when it first
# imports them, and keeps them, as for any module (decision 461).
$PY -m pip install -q --no-compile -e ".[dev,test]" "torch==2.13.0" 2>&1 | quiet

step "C accelerators (strict build: warnings are errors)"
if [ $PURE_ONLY = 1 ]; then
  echo "--pure-python-only: the C accelerators are not used; every tier runs the pure-Python code"
  export STEPSCOPE_PURE_PYTHON=1
else
  STEPSCOPE_STRICT_BUILD=1 $PY setup.py -q build_ext --inplace
  # Fails when one is missing or stale: CI must test what a user with a compiler runs.
  $PY -c "
import sys
from stepscope import accelerators as a
print('\n'.join(a.report()))
bad = [n for n in a.EXTENSIONS if a.state(n) != 'on']
sys.exit(f'C accelerators not usable: {bad} (no compiler? bash scripts/test.sh --pure-python-only)' if bad else 0)"
fi

# The sanitized build, its tests and the fuzzing (a fixed 90 s of fuzzing: about 2 minutes,
# one process, nothing timed against the clock but the fuzzing's own shares), then the default
# tier with the C accelerators (about 1.5 minutes, no test timed), run in the background beside
# the static checks and the pure-Python tier (about 2.5 minutes, one process, no test timed
# either), on a second core where there is one; the integration and browser tiers, whose tests
# start real jobs and read their timing, run alone after both (decisions 462, 702).
LANE_LOG=""
LANE_PID=""
if [ $PURE_ONLY = 0 ]; then
  LANE_LOG=$(mktemp)
  set -m  # the job gets its own process group, so that a failed check stops it and its children
  (
    set +e
    started=$SECONDS
    printf '\n== %s (%ss)\n' "C accelerators under AddressSanitizer + UndefinedBehaviorSanitizer, fuzzed (beside the checks)" "$started"
    $PY scripts/fuzz_native.py --seconds 90
    fuzzed=$?
    printf '== sanitizer and fuzzing job ended (%ss)\n' "$SECONDS"
    printf '\n== %s (%ss)\n' "pytest default tier with the C accelerators (beside the checks)" "$SECONDS"
    # Hypothesis's 100 examples a property here, not the local default run's 25 (decision 715)
    $PY -m pytest -q -p no:cacheprovider --timeout=600 -m "not integration and not browser" \
      --hypothesis-profile=stepscope "$@"
    tier=$?
    printf '== default tier with the C accelerators ended (%ss)\n' "$SECONDS"
    [ $fuzzed -eq 0 ] && fuzzed=$tier
    exit $fuzzed
  ) > "$LANE_LOG" 2>&1 < /dev/null &
  LANE_PID=$!
  set +m
  trap '[ -n "$LANE_PID" ] && kill -- -"$LANE_PID" 2>/dev/null; rm -f "$LANE_LOG"' EXIT
fi

step "generated code and docs are fresh"
$PY scripts/gen_proto.py --check
$PY scripts/gen_readme.py --check
step "ruff"
$PY -m ruff check src tests benchmarks scripts
$PY -m ruff format --check src tests benchmarks scripts
step "web UI: ESLint and tsc (checkJs) on src/stepscope/serve/static"
command -v npm >/dev/null 2>&1 || { echo "npm not found: install Node.js 20+ (the web UI checks need it)"; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
npx --no-install eslint src/stepscope/serve/static
npx --no-install tsc --noEmit -p jsconfig.json
# Modules typed completely so far (noImplicitAny); the list grows file by file.
npx --no-install tsc --noEmit -p jsconfig.strict.json
step "mypy"
$PY -m mypy
step "layers contract (import-linter)"
.venv/bin/lint-imports --no-cache
if [ $PURE_ONLY = 0 ]; then
  step "pytest default tier without the C accelerators (STEPSCOPE_PURE_PYTHON=1)"
  set +e
  STEPSCOPE_PURE_PYTHON=1 $PY -m pytest -q -p no:cacheprovider --timeout=600 \
    -m "not integration and not browser" "$@"
  pure=$?
  step "waiting for the sanitizer, fuzzing and C default-tier job"
  wait "$LANE_PID"
  fuzzed=$?
  LANE_PID=""
  cat "$LANE_LOG"
  set -e
fi
set +e
if [ $PURE_ONLY = 0 ]; then
  # the default tier ran with the C accelerators beside the checks (the job above)
  step "pytest integration and browser tiers"
  $PY -m pytest -q -p no:cacheprovider --timeout=600 -m "integration or browser" "$@"
else
  step "pytest"
  $PY -m pytest -q -p no:cacheprovider --timeout=600 "$@"
fi
status=$?
set -e
if [ $PURE_ONLY = 0 ]; then  # 5: no test of that tier among the arguments', one of both may be
  [ $status -eq 5 ] && [ "$fuzzed" -eq 5 ] && { echo "pytest collected no tests"; exit 1; }
  [ $status -eq 5 ] && status=0
  [ "$fuzzed" -eq 5 ] && fuzzed=0
fi
[ $status -eq 5 ] && { echo "pytest collected no tests"; exit 1; }
if [ $PURE_ONLY = 0 ]; then
  [ $status -eq 0 ] && status=$pure
  [ $status -eq 0 ] && status=$fuzzed
fi
step "done"
exit $status
