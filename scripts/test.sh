#!/usr/bin/env bash
# The whole test suite: lint, format and type checks, then engine unit tests (no Spark) and
# functional tests on local Spark + Delta.
# Extra arguments go to pytest, e.g. scripts/test.sh -k joins, or --stress for the long randomized runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-env.sh
echo "== ruff check"
.venv/bin/ruff check .
echo "== ruff format --check"
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
