"""Profile `type: ivm_spark`: dbt-spark's credentials and connections, under our type name."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.connections import SparkConnectionManager, SparkCredentials


@dataclass
class IvmSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "ivm_spark"


class IvmSparkConnectionManager(SparkConnectionManager):
    TYPE = "ivm_spark"
