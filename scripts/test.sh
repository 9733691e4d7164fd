#!/usr/bin/env bash
# Install everything the test suite needs into .venv, then run every check CI runs:
# generated-code freshness, ruff (lint + format), the web UI's ESLint and tsc checks, mypy,
# the layers contract, pytest.
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1

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
$PY -m pip install -q -e ".[dev,test]" "torch==2.13.0" 2>&1 | quiet
$PY -c "import stepscope.xspace.wire as w; print('C accelerator:', w.accelerated())"

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
step "pytest"
set +e
$PY -m pytest -q -p no:cacheprovider --timeout=600 "$@"
status=$?
set -e
[ $status -eq 5 ] && { echo "pytest collected no tests"; exit 1; }
step "done"
exit $status
