"""dbt-ivm engine: incremental maintenance of materialized views on Spark + Delta.

Pure Python, no dbt imports: `analyze` turns a model's SQL into a `ViewPlan`; each view class
(`classes/`: joins, aggregate) turns a plan plus source versions into the Spark SQL of a build or
a refresh, with what they share in `classes.changes` and `render`; `maintain` drives a build or
refresh through any object that can run SQL.
"""

from dbt_ivm.analyze import analyze, source_tables
from dbt_ivm.errors import IvmError, StateError, UnsupportedView
from dbt_ivm.ir import ViewClass, ViewPlan

__version__ = "0.1.0"

__all__ = [
    "IvmError",
    "StateError",
    "UnsupportedView",
    "ViewClass",
    "ViewPlan",
    "analyze",
    "source_tables",
]
