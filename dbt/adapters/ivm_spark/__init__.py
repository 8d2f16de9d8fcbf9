from dbt.adapters.base.plugin import AdapterPlugin

from dbt.adapters.ivm_spark.connections import IvmSparkConnectionManager, IvmSparkCredentials  # noqa: F401
from dbt.adapters.ivm_spark.impl import IvmSparkAdapter
from dbt.include import ivm_spark

Plugin = AdapterPlugin(
    adapter=IvmSparkAdapter,  # type: ignore[arg-type]
    credentials=IvmSparkCredentials,
    include_path=ivm_spark.PACKAGE_PATH,
    dependencies=["spark"],
)
