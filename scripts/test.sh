#!/usr/bin/env bash
# The whole test suite: lint, format and type checks, then engine unit tests (no Spark) and
# functional tests on local Spark + Delta.
# Extra arguments go to pytest, e.g. scripts/test.sh -k joins, or --stress for the long randomized runs.
# The suite runs on two pytest-xdist workers, each with its own Spark session and metastore
# (IVM_TEST_WORKERS=N for another number; `-n 0` runs in this process); --stress runs in this
# process, so that -s shows its progress.
# --fast (first argument): the contributor's loop without Spark or Java: the same checks, then
# every test not marked `spark` (the unit tests, in this process; seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=""
if [[ "${1:-}" == "--fast" ]]; then
  fast=1
  shift
  export IVM_NO_SPARK=1  # setup-env.sh: Java is not needed
fi
source scripts/setup-env.sh
echo "== ruff check"
.venv/bin/ruff check .
echo "== ruff format --check"
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
if [[ -n "$fast" ]]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 -m "not spark" "$@"
fi
workers=(-n "${IVM_TEST_WORKERS:-2}" --dist loadgroup)
if [[ " $* " == *" --stress "* ]]; then workers=(-n 0); fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${workers[@]}" "$@"
