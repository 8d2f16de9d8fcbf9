"""A local Spark + Delta session and a `Database` over it, for tests, stress runs and benchmarks.

dbt's `session` connection method builds its session from the same settings
(see `spark_conf`), so tests and dbt share one SparkSession per process.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dbt_ivm.session_lock import SESSION_LOCK

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

DELTA_PACKAGE = "io.delta:delta-spark_4.1_2.13:4.3.0"
# Logs an ERROR on every CREATE OR REPLACE of a Delta table (Hive cannot hold Delta's schema),
# after which Spark stores the table in its own format, as it always does for Delta: noise.
NOISY_LOGGERS = ("org.apache.hadoop.hive.metastore.HiveAlterHandler",)


def spark_conf(
    warehouse: str | None = None, java_options: str = "", settings: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Settings for a small local session: Delta, change data feed on new tables, few partitions;
    `java_options` for the driver JVM, which a session started by this process launches;
    `settings` over the defaults."""
    conf = {
        "spark.jars.packages": DELTA_PACKAGE,
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.sql.ansi.enabled": "false",  # dbt-spark forces this; test under the same semantics
        "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "true",
        "spark.driver.memory": "4g",
    }
    options = [java_options] if java_options else []
    if warehouse:
        conf["spark.sql.warehouse.dir"] = os.path.join(warehouse, "warehouse")
        options.insert(0, f"-Dderby.system.home={os.path.join(warehouse, 'derby')}")
    if options:
        conf["spark.driver.extraJavaOptions"] = " ".join(options)
    return conf | dict(settings or {})


def get_spark(
    warehouse: str | None = None,
    master: str = "local[2]",
    java_options: str = "",
    settings: Mapping[str, str] | None = None,
) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("dbt-ivm").enableHiveSupport()
    for k, v in spark_conf(warehouse, java_options, settings).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    quiet(spark)
    return spark


def quiet(spark: Any) -> None:
    """Spark's own log at ERROR, and the loggers whose errors are noise switched off. A Spark
    Connect session has no JVM in this process: its server's log is the server's to set."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    for name in NOISY_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, jvm.org.apache.logging.log4j.Level.OFF)


class SparkDatabase:
    """`maintain.Database` over a SparkSession; each statement under `SESSION_LOCK` shared, as
    the adapter's are."""

    def __init__(self, spark: Any):
        self.spark = spark
        self.log: list[str] = []

    def execute(self, sql: str) -> None:
        self.log.append(sql)
        with SESSION_LOCK.shared():
            self.spark.sql(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        self.log.append(sql)
        with SESSION_LOCK.shared():
            return [r.asDict() for r in self.spark.sql(sql).collect()]
