"""A local Spark Thrift Server for the functional tests (`scripts/thrift_server.sh`), and dbt's profile
for dbt-spark's `thrift` method over it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "thrift_server.sh"

# dbt-spark sleeps `poll_interval` seconds (an integer, default 5) between polls of a running
# statement; the server holds each poll up to 5 s, so only statements longer than that pay for the
# sleep (a 7 s statement took 10.05 s with 5, 7.21 s with 0; README). 0 is the smallest accepted.
POLL_INTERVAL = 0
# The server's JVM compiles with C1 only: a test run is too short for C2 to pay off (the server's
# CPU over test_thrift.py: 103 s against 125 s with the default, one run each on the loaded 2-core
# machine, 2026-11-27). Tests only.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class ThriftServer:
    port: int
    home: Path


def running_server(home: Path, *options: str) -> Iterator[ThriftServer]:
    """Start a server in `home` (`options`: the script's, e.g. --no-delta), yield it, stop it."""
    env = {**os.environ, "IVM_THRIFT_HOME": str(home), "IVM_THRIFT_JAVA_OPTIONS": JAVA_OPTIONS}
    started = subprocess.run(["bash", str(SCRIPT), "start", *options], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(f"the Thrift Server did not start:\n{started.stdout}{started.stderr}")
    try:
        state = dict(line.split("=", 1) for line in (home / "server.env").read_text().splitlines())
        yield ThriftServer(int(state["PORT"]), home)
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
