#!/usr/bin/env bash
# The example end to end on the embedded Spark: build the fast_mv models, change the sources
# (inserts, updates, deletes), refresh incrementally, prove consistency, then time refreshes
# against a --full-refresh of the same model: after new orders only, and after mixed changes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-env.sh
cd example_project
export DBT_PROFILES_DIR=$PWD IVM_WAREHOUSE=$PWD/.ivm-work/warehouse
mkdir -p .ivm-work && cd .ivm-work   # Derby's metastore_db lands here, not in the repo
dbt() { ../../.venv/bin/dbt "$@" --project-dir .. ; }
ORDERS=${ORDERS:-100000}

echo "== 1. sources: $ORDERS orders (Delta, change data feed on)"
dbt run-operation setup_shop --args "{orders: $ORDERS}"
echo "== 2. first build"
dbt run --full-refresh
echo "== 3. a batch of inserts, updates and deletes (0.1 % of the orders, some customers)"
dbt run-operation change_shop --args "{fraction: 0.001, seed: 1}"
echo "== 4. incremental refresh"
dbt run
echo "== 5. consistency: every view equals its recompute"
dbt test
echo "== 6. timing: refresh vs --full-refresh of order_details after 0.1 % changes of the orders"
model_time() {  # the model's own execution time from dbt's run_results.json
  ../../.venv/bin/python -c "import json,sys; r=json.load(open('../target/run_results.json'))['results']; print([f\"{x['execution_time']:.1f} s ({x['message']})\" for x in r if x['unique_id'].endswith('.order_details')][0])"
}
race() {  # $1: change_shop's arguments
  dbt run-operation change_shop --args "$1"
  dbt run -s order_details
  refresh=$(model_time)
  dbt test -s order_details
  dbt run -s order_details --full-refresh
  echo "   incremental refresh $refresh; --full-refresh $(model_time)" >> timing.txt
}
: > timing.txt
echo "order_details after 0.1 % new orders (the sources only appended: the append path):" >> timing.txt
race "{fraction: 0.001, seed: 2, new_orders_only: true}"
echo "order_details after 0.1 % inserts, updates and deletes of orders and 4 renamed customers (the MERGE path):" >> timing.txt
race "{fraction: 0.001, seed: 3}"
cat timing.txt
echo "== example finished: views refreshed incrementally and consistent"
