"""Profile `type: ivm_spark`: dbt-spark's credentials and connections, under our type name;
every statement runs under `SESSION_LOCK` shared (see `dbt_ivm.session_lock`)."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials

from dbt_ivm.session_lock import SESSION_LOCK


@dataclass
class IvmSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "ivm_spark"


class IvmSparkConnectionManager(SparkConnectionManager):
    TYPE = "ivm_spark"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        connection = super().open(connection)
        creds = connection.credentials
        if getattr(creds, "method", None) == SparkConnectionMethod.SESSION:
            _quiet_session(creds.server_side_parameters)
        return connection

    def add_query(self, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        """Every statement dbt runs (models, hooks, tests, introspection, fast_mv's own) goes
        through here: it waits while fast_mv's session-wide write settings are set by another
        thread, and holds that window back until it has finished. Under the `thrift` method each
        connection is its own server session unless the server runs in single-session mode; the
        lock is taken under every method, so that mode is covered too, for the price of the
        other threads' statements waiting out fast_mv's write."""
        with SESSION_LOCK.shared():
            return super().add_query(*args, **kwargs)


def _quiet_session(conf: dict[str, str]) -> None:
    """Start the session as dbt-spark would (embedded, or Spark Connect where `spark.remote` or
    SPARK_REMOTE names a server), then raise Spark's log level: dbt-spark re-applies its confs on
    every statement and Spark warns each time otherwise."""
    from pyspark.sql import SparkSession

    from dbt_ivm.session import quiet

    if "spark.remote" in conf or os.environ.get("SPARK_REMOTE"):
        # Spark Connect: dbt-spark asks for Hive support on every statement, a static setting the
        # server already has; pyspark warns each time it cannot set it again
        warnings.filterwarnings("ignore", message=r"Failed to set spark\.sql\.catalogImplementation")
    if SparkSession.getActiveSession() is not None:
        return
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    quiet(builder.getOrCreate())
