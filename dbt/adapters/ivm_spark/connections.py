"""Profile `type: ivm_spark`: dbt-spark's credentials and connections, under our type name."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials


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


def _quiet_session(conf: dict[str, str]) -> None:
    """Start the embedded session as dbt-spark would, then raise Spark's log level: dbt-spark
    re-applies its confs on every statement and Spark warns each time otherwise."""
    from pyspark.sql import SparkSession

    from dbt_ivm.session import quiet

    if SparkSession.getActiveSession() is not None:
        return
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    quiet(builder.getOrCreate())
