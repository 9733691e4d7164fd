#!/usr/bin/env bash
# Install everything the test suite needs into .venv, then run every check CI runs:
# generated-code freshness, ruff (lint + format), the web UI's ESLint and tsc checks, mypy,
# the layers contract, pytest's default tier without and with the C accelerators, the C
# accelerators built with sanitizers, tested and fuzzed, and pytest's integration and browser
# tiers. Most of it runs in lanes beside each other (decisions 462, 702, 750); the integration
# and browser tests that read real timing run alone at the end.
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
PY=.venv/bin/python
# -n 0: every pytest here runs in one process. pyproject's addopts start a pytest-xdist worker
# a core for a folder's default tier (decision 860), but CI's default tiers already run beside
# other checks in lanes, each on a core of its own: workers would add their start-up and their
# controller's CPU (about 12 s of CPU a tier: decision 860) and save no time.
PYTEST=(-m pytest -q -p no:cacheprovider --timeout=600 -n 0)

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

# Lanes: a lane is a shell function run in the background, in a process group of its own (a
# failed check in the foreground stops it and its children: the EXIT trap), its output kept in
# a file and printed, with its start and end times, when it is joined. Each check a lane runs
# records its exit status in $STATUSES/NAME; the verdict at the end reads them all, so a
# failure anywhere fails the run, and a check that never recorded one (its lane died) too.
STATUSES=$(mktemp -d)
LANE_PIDS=()
trap 'for p in "${LANE_PIDS[@]}"; do kill -- -"$p" 2>/dev/null || true; done; rm -rf "$STATUSES"' EXIT
record() { echo "$2" > "$STATUSES/$1"; }
lane() {  # lane NAME FUNCTION [ARGS]: start it
  set -m
  # (set +m inside: what the lane starts in the background stays in its process group)
  ( set +e +m; printf '\n== lane %s started (%ss)\n' "$1" "$SECONDS"; "${@:2}"
    printf '== lane %s ended (%ss)\n' "$1" "$SECONDS" ) > "$STATUSES/$1.log" 2>&1 < /dev/null &
  set +m
  LANE_PIDS+=("$!")
  eval "LANE_$1=$!"
}
join_lane() {  # join_lane NAME: wait for it, print its output
  local pid_var="LANE_$1"
  step "waiting for lane $1"
  wait "${!pid_var}" || true
  cat "$STATUSES/$1.log"
}

step "system packages"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing and cannot apt-get install it: browser tests will be skipped"
  fi
fi

# The web UI's checks need Node.js only: they run beside the Python install (which unpacks
# wheels on one core).
command -v npm >/dev/null 2>&1 || { echo "npm not found: install Node.js 20+ (the web UI checks need it)"; exit 1; }
web_ui() {
  printf '== %s\n' "web UI: ESLint and tsc (checkJs) on src/stepscope/serve/static"
  npm ci --no-audit --no-fund --loglevel=error \
    && npx --no-install eslint src/stepscope/serve/static \
    && npx --no-install tsc --noEmit -p jsconfig.json \
    && npx --no-install tsc --noEmit -p jsconfig.strict.json
  # (jsconfig.strict.json: the modules typed completely so far, noImplicitAny; it grows file
  # by file)
  record web_ui $?
}
lane web_ui web_ui

step "python environment"
[ -x .venv/bin/python ] || python3 -m venv .venv
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

# Which tests may run beside others: none of the default tier reads timing; of the integration
# and browser tiers, those marked `untimed` read none either (no job's steps, waits or shares,
# no frame times: pyproject.toml's markers, docs/testing.md); the rest start real jobs and
# compare what stepscope says of their timing with what they measured, and run alone, last.
# Two processes, the browser tests (Chromium's renderers take most of their CPU) and the
# others, so that both cores stay busy once the default tiers have ended.
UNTIMED_BROWSER='browser and untimed'
UNTIMED_OTHER='integration and not browser and untimed'
TIMED='(integration or browser) and not untimed'
untimed_tier() {  # untimed_tier NAME MARKERS [pytest args]
  printf '== pytest %s (%ss)\n' "$2" "$SECONDS"
  $PY "${PYTEST[@]}" -m "$2" "${@:3}"
  record "$1" $?
  printf '== %s ended (%ss)\n' "$2" "$SECONDS"
}

# The native lane: the untimed browser tests from its start, beside the sanitized build, its
# tests and the fuzzing (a fixed 90 s of fuzzing: one process, nothing timed against the clock
# but the fuzzing's own shares, fewer calls when it shares its core), then the default tier
# with the C accelerators (no test timed) beside the other untimed integration tests
# (decisions 750, 735: begun after the fuzzing, the browser tests ended the lane 110 s after
# all else, 528 s from their start).
native() {
  untimed_tier untimed_browser "$UNTIMED_BROWSER" "$@" > "$STATUSES/untimed_browser.log" 2>&1 &
  local browser_pid=$!
  printf '== %s (%ss)\n' "C accelerators under AddressSanitizer + UndefinedBehaviorSanitizer, fuzzed" "$SECONDS"
  $PY scripts/fuzz_native.py --seconds 90
  record fuzz $?
  printf '== sanitizer and fuzzing job ended (%ss)\n' "$SECONDS"
  untimed_tier untimed_other "$UNTIMED_OTHER" "$@" > "$STATUSES/untimed_other.log" 2>&1 &
  local other_pid=$!
  printf '\n== %s (%ss)\n' "pytest default tier with the C accelerators" "$SECONDS"
  # Hypothesis's 100 examples a property here, not the local default run's 25 (decision 715)
  $PY "${PYTEST[@]}" -m "not integration and not browser" --hypothesis-profile=stepscope "$@"
  record tier_c $?
  printf '== default tier with the C accelerators ended (%ss)\n' "$SECONDS"
  wait "$browser_pid" "$other_pid"
  printf '\n'
  cat "$STATUSES/untimed_browser.log" "$STATUSES/untimed_other.log"
}
[ $PURE_ONLY = 1 ] || lane native native "$@"

step "generated code and docs are fresh"
$PY scripts/gen_proto.py --check
$PY scripts/gen_readme.py --check
step "ruff"
$PY -m ruff check src tests benchmarks scripts
$PY -m ruff format --check src tests benchmarks scripts
step "mypy"
$PY -m mypy
step "layers contract (import-linter)"
.venv/bin/lint-imports --no-cache
join_lane web_ui
[ "$(cat "$STATUSES/web_ui")" = 0 ] || { echo "the web UI's checks failed"; exit 1; }

set +e
if [ $PURE_ONLY = 0 ]; then
  step "pytest default tier without the C accelerators (STEPSCOPE_PURE_PYTHON=1)"
  STEPSCOPE_PURE_PYTHON=1 $PY "${PYTEST[@]}" -m "not integration and not browser" "$@"
  record tier_pure $?
  join_lane native
  step "pytest integration and browser tests that read timing, alone"
  # their 25 longest, for whoever next shortens this phase (decision 735)
  $PY "${PYTEST[@]}" -m "$TIMED" --durations=25 "$@"
  record timed $?
  CHECKS="web_ui fuzz tier_c untimed_browser untimed_other tier_pure timed"
  TIERS="tier_c untimed_browser untimed_other tier_pure timed"
else
  step "pytest"
  $PY "${PYTEST[@]}" -m "" "$@"  # every tier: a bare pytest is the default one (addopts)
  record all $?
  CHECKS="web_ui all"
  TIERS="all"
fi
set -e

# The verdict. pytest's exit status 5 says that it collected no test: the arguments named none
# of that selection (`bash scripts/test.sh tests/pod/test_job_ddp.py` has no default-tier
# test); that is a failure only when no selection collected one.
step "verdict"
failed=""
collected=0
for check in $CHECKS; do
  code=$(cat "$STATUSES/$check" 2>/dev/null || echo "none")
  case " $TIERS " in
    *" $check "*) [ "$code" = 5 ] && continue; collected=1 ;;
  esac
  [ "$code" = 0 ] || failed="$failed $check($code)"
done
[ $collected = 1 ] || failed="$failed pytest(collected no tests)"
if [ -n "$failed" ]; then
  echo "failed:$failed"
  exit 1
fi
echo "every check passed"
step "done"
