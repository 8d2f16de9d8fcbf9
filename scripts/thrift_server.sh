#!/usr/bin/env bash
# A local Spark Thrift Server (HiveThriftServer2 from the installed pyspark) with Delta Lake, for
# dbt-spark's `thrift` method, that also serves Spark Connect (the SparkConnectPlugin in the same
# JVM: one catalog, one warehouse) for dbt-spark's `session` method with `spark.remote`: its own
# Derby metastore and warehouse, 127.0.0.1 only, two free ports.
#
#   scripts/thrift_server.sh start [--no-delta]   start it, wait until both ports accept connections
#   scripts/thrift_server.sh status               pid, ports and whether they are listening
#   scripts/thrift_server.sh stop                 stop it and remove its directory
#
# IVM_THRIFT_HOME: the server's directory (state file `server.env` with PID, PORT, CONNECT_PORT, HOME_DIR;
# `server.log`, `warehouse/`, `derby/`); default ${TMPDIR:-/tmp}/dbt-ivm-thrift-$UID.
# --no-delta: without Delta's jars and confs (to see what fast_mv says to such a server).
# IVM_THRIFT_MEMORY: the driver's memory (default 2g); IVM_THRIFT_JAVA_OPTIONS: more JVM options;
# IVM_THRIFT_CONF: more Spark settings, `key=value` separated by spaces.
#
# Delta given by `--packages` alone fails in the server's sessions (NoClassDefFoundError of Delta's
# classes): its jars must be on the driver's class path, which is fixed when the JVM starts, so they
# are resolved first (Spark's own resolver, into its Ivy cache; the list is kept under
# ~/.cache/dbt-ivm) and only Delta's own jars (io.delta, io.unitycatalog) are put there: every
# resolved jar on the class path would put an old Jackson before Spark's.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=$repo/.venv/bin/python
home=${IVM_THRIFT_HOME:-${TMPDIR:-/tmp}/dbt-ivm-thrift-$(id -u)}
state=$home/server.env
START_TIMEOUT=${IVM_THRIFT_START_TIMEOUT:-180}

spark_home() { "$PY" -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))"; }

# The path of each of Delta's own jars (one a line), resolved by Spark into its Ivy cache.
delta_jars() {
  local package cache jars_dir
  package=$("$PY" -c "from dbt_ivm.session import DELTA_PACKAGE; print(DELTA_PACKAGE)")
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/dbt-ivm/delta-jars-${package//:/_}.txt
  if [[ -s $cache ]] && xargs -a "$cache" -d '\n' ls >/dev/null 2>&1; then
    cat "$cache"
    return
  fi
  local probe
  probe=$(mktemp -d)
  : >"$probe/empty.py"
  # spark-submit resolves --packages before it runs the (empty) script: it prints where the jars are
  # stored and one `found org#name;rev in repo` line per module
  (cd "$probe" && "$SPARK_HOME/bin/spark-submit" --master 'local[1]' --packages "$package" empty.py) \
    >"$probe/resolve.log" 2>&1 || { cat "$probe/resolve.log" >&2; rm -rf "$probe"; return 1; }
  jars_dir=$(sed -n 's/^The jars for the packages stored in: //p' "$probe/resolve.log")
  mkdir -p "$(dirname "$cache")"
  sed -n 's/^[[:space:]]*found \(io\.delta\|io\.unitycatalog\)#\([^;]*\);\([^ ]*\) in .*/\1_\2-\3.jar/p' \
    "$probe/resolve.log" | sed "s|^|$jars_dir/|" >"$cache"
  rm -rf "$probe"
  [[ -s $cache ]] || { echo "no Delta jars resolved for $package" >&2; return 1; }
  cat "$cache"
}

free_port() {
  "$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

listening() {  # $1: port
  "$PY" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1).close()" "$1" \
    2>/dev/null
}

running() { [[ -f $state ]] && source "$state" && kill -0 "$PID" 2>/dev/null; }

start() {
  local delta=1
  [[ ${1:-} == --no-delta ]] && delta=""
  if running; then
    echo "already running: pid $PID, port $PORT ($state)" >&2
    return 1
  fi
  export SPARK_HOME
  SPARK_HOME=$(spark_home)
  export SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PY
  mkdir -p "$home/derby" "$home/warehouse"
  local port connect_port args=()
  port=$(free_port)
  connect_port=$(free_port)
  if [[ -n $delta ]]; then
    local jars
    jars=$(delta_jars)
    args+=(--jars "$(paste -sd, <<<"$jars")" --driver-class-path "$(paste -sd: <<<"$jars")"
      --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
      --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog
      --conf spark.databricks.delta.snapshotPartitions=1)
  fi
  local setting
  for setting in ${IVM_THRIFT_CONF:-}; do args+=(--conf "$setting"); done
  # the settings of the embedded test session (dbt_ivm.session.spark_conf, conftest.py), small
  (cd "$home" && exec nohup "$SPARK_HOME/bin/spark-submit" \
    --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 --name dbt-ivm-thrift \
    --master 'local[2]' --driver-memory "${IVM_THRIFT_MEMORY:-2g}" \
    --driver-java-options "-Dderby.system.home=$home/derby -XX:+UseParallelGC ${IVM_THRIFT_JAVA_OPTIONS:-}" \
    "${args[@]}" \
    --conf spark.sql.warehouse.dir="$home/warehouse" \
    --conf spark.driver.bindAddress=127.0.0.1 --conf spark.driver.host=127.0.0.1 \
    --conf spark.sql.shuffle.partitions=2 --conf spark.default.parallelism=2 \
    --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false \
    --conf spark.plugins=org.apache.spark.sql.connect.SparkConnectPlugin \
    --conf spark.connect.grpc.binding.address=127.0.0.1 --conf spark.connect.grpc.binding.port="$connect_port" \
    --hiveconf hive.server2.thrift.bind.host=127.0.0.1 --hiveconf hive.server2.thrift.port="$port" \
    spark-internal >"$home/server.log" 2>&1 </dev/null) &
  local pid=$!
  printf 'PID=%s\nPORT=%s\nCONNECT_PORT=%s\nHOME_DIR=%s\n' "$pid" "$port" "$connect_port" "$home" >"$state"
  local waited=0
  until listening "$port" && listening "$connect_port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the Thrift Server exited before listening; the end of $home/server.log:" >&2
      tail -n 40 "$home/server.log" >&2
      rm -f "$state"
      return 1
    fi
    if ((waited >= START_TIMEOUT)); then
      echo "the Thrift Server did not listen on 127.0.0.1:$port and :$connect_port within ${START_TIMEOUT} s; see $home/server.log" >&2
      stop
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  echo "Thrift Server listening on 127.0.0.1:$port, Spark Connect on 127.0.0.1:$connect_port (pid $pid, ${waited} s; state: $state)"
}

stop() {
  if [[ -f $state ]]; then
    source "$state"
    if kill -0 "$PID" 2>/dev/null; then
      kill "$PID"
      for _ in $(seq 30); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
      kill -0 "$PID" 2>/dev/null && kill -9 "$PID"
    fi
  fi
  rm -rf "$home"
  echo "Thrift Server stopped ($home removed)"
}

status() {
  if running; then
    local up=no
    listening "$PORT" && listening "$CONNECT_PORT" && up=yes
    echo "running: pid $PID, port $PORT, Spark Connect port $CONNECT_PORT, listening: $up ($home)"
  else
    echo "not running ($home)"
    return 1
  fi
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start [--no-delta] | stop | status" >&2; exit 2 ;;
esac
