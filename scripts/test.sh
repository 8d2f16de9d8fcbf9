#!/usr/bin/env bash
# The whole test suite: lint, format and type checks, then engine unit tests (no Spark) and
# functional tests on local Spark + Delta.
# Extra arguments go to pytest, e.g. scripts/test.sh -k joins, or --stress for the long randomized runs.
# The suite runs on two pytest-xdist workers, each with its own Spark session and metastore
# (IVM_TEST_WORKERS=N for another number; `-n 0` runs in this process); --stress runs in this
# process, so that -s shows its progress.
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
workers=(-n "${IVM_TEST_WORKERS:-2}" --dist loadgroup)
if [[ " $* " == *" --stress "* ]]; then workers=(-n 0); fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${workers[@]}" "$@"
