#!/usr/bin/env bash
# The whole test suite: engine unit tests (no Spark) and functional tests on local Spark + Delta.
# Extra arguments go to pytest, e.g. scripts/test.sh -k joins, or --stress for the long randomized runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-env.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
