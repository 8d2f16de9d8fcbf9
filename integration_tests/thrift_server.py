"""A local Spark Thrift Server for the functional tests (`scripts/thrift_server.sh`; the same JVM
serves Spark Connect), dbt's profiles for dbt-spark's `thrift` method and for its `session` method
over Spark Connect, and dbt run in a process of its own over Spark Connect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.spark_sources import NO_CODEGEN

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "thrift_server.sh"

# dbt-spark sleeps `poll_interval` seconds (an integer, default 5) between polls of a running
# statement; the server holds each poll up to 5 s, so only statements longer than that pay for the
# sleep (a 7 s statement took 10.05 s with 5, 7.21 s with 0; README). 0 is the smallest accepted.
POLL_INTERVAL = 0
# The server's JVM compiles with C1 only: a test run is too short for C2 to pay off (the server's
# CPU over test_thrift.py: 103 s against 125 s with the default, one run each on the loaded 2-core
# machine, 2026-11-27). Tests only.
# C1 alone reserves 48 MB for compiled code, which the server filled within 40 s once it ran
# without generated code (its interpreted expressions compile to more methods: "CodeCache is
# full", then its SparkContext stopped, 2026-11-27): the tiered default's 240 MB.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# and generates no code, as the embedded test session
SETTINGS = " ".join(f"{k}={v}" for k, v in NO_CODEGEN.items())


@dataclass(frozen=True)
class ThriftServer:
    port: int
    connect_port: int
    home: Path


def running_server(home: Path, *options: str) -> Iterator[ThriftServer]:
    """Start a server in `home` (`options`: the script's, e.g. --no-delta), yield it, stop it."""
    env = {
        **os.environ,
        "IVM_THRIFT_HOME": str(home),
        "IVM_THRIFT_JAVA_OPTIONS": JAVA_OPTIONS,
        "IVM_THRIFT_CONF": SETTINGS,
    }
    started = subprocess.run(["bash", str(SCRIPT), "start", *options], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(f"the Thrift Server did not start:\n{started.stdout}{started.stderr}")
    try:
        state = dict(line.split("=", 1) for line in (home / "server.env").read_text().splitlines())
        yield ThriftServer(int(state["PORT"]), int(state["CONNECT_PORT"]), home)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=True)


def thrift_profile(server: ThriftServer, threads: int = 4) -> dict[str, object]:
    """dbt-tests-adapter's profile target: `type: ivm_spark` over the server."""
    return {
        "type": "ivm_spark",
        "method": "thrift",
        "host": "127.0.0.1",
        "port": server.port,
        "user": "dbt",
        "schema": "dbt_ivm_test",
        "threads": threads,
        "poll_interval": POLL_INTERVAL,
    }


def connect_profile(server: ThriftServer, schema: str, threads: int = 4) -> dict[str, object]:
    """dbt-spark's `session` method over the server's Spark Connect endpoint (`spark.remote`)."""
    return {
        "type": "ivm_spark",
        "method": "session",
        "host": "NA",
        "schema": schema,
        "threads": threads,
        "server_side_parameters": {"spark.remote": f"sc://127.0.0.1:{server.connect_port}"},
    }


def dbt_over_connect(project_root: Path, profiles_dir: Path, *args: str) -> dict[str, tuple[str, str]]:
    """`dbt <args>` in a process of its own (a process with an embedded Spark session cannot open a
    Spark Connect one) with the profiles in `profiles_dir`: (status, message) by node name."""
    results = project_root / "target" / "run_results.json"
    results.unlink(missing_ok=True)
    command = [str(Path(sys.executable).with_name("dbt")), *args, "--project-dir", str(project_root)]
    env = {**os.environ, "DBT_PROFILES_DIR": str(profiles_dir), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if not results.exists():
        raise RuntimeError(
            f"dbt {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
        )
    return {
        r["unique_id"].split(".")[2]: (r["status"], r["message"] or "")
        for r in json.loads(results.read_text())["results"]
    }
