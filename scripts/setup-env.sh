#!/usr/bin/env bash
# Creates ./.venv (Python >= 3.10) and installs dbt-ivm with its test extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for c in python3.11 python3.12 python3.10 python3; do
    if command -v "$c" >/dev/null 2>&1; then PY=$c; break; fi
  done
fi
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $PY"
  "$PY" -m venv .venv
fi
stamp=.venv/.dbt-ivm-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "== installing dbt-ivm and its dependencies (first time: a few minutes)"
  # uv where it installs and reaches the index (half pip's time on a fresh machine: 52 s against
  # 116 s without caches, the same versions resolved, 2026-11-29); pip otherwise
  if .venv/bin/python -m pip install --quiet uv 2>/dev/null &&
    .venv/bin/uv pip install --quiet --python .venv/bin/python ${PIP_FIND_LINKS:+--find-links "$PIP_FIND_LINKS"} -e ".[test]"; then
    :
  else
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[test]"
  fi
  touch "$stamp"
fi
if [ -z "${IVM_NO_SPARK:-}" ] && ! command -v java >/dev/null 2>&1; then
  echo "ERROR: Spark needs Java 17 (java not found on PATH)" >&2
  exit 1
fi
# Spark picks a loopback address without a warning; the Delta jars are fetched from
# Maven Central into ~/.ivy2* by spark.jars.packages on the first Spark start.
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
