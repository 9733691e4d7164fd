#!/usr/bin/env bash
# Optional job: the framework-bridge tests alone, with every optional library installed.
# CI (scripts/test.sh) already runs tests/bridges with PyTorch, TensorFlow, JAX, Lightning and
# transformers (+ accelerate), all pinned by the `test` extra; this runs them on their own.
# Usage: bash scripts/test_bridges.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
[ -x .venv/bin/python ] || python3 -m venv .venv
PY=.venv/bin/python
quiet() { grep -v '^WARNING: Location' || true; }
$PY -m pip install -q -e ".[dev,test]" "torch==2.13.0" 2>&1 | quiet
$PY -m pip install -q "lightning>=2.4" "transformers>=4.46" "accelerate>=1.1" 2>&1 | quiet
exec $PY -m pytest -q -p no:cacheprovider --timeout=600 -m "" tests/bridges -rs "$@"
