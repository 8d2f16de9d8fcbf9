"""A Spark server without Delta Lake, recognised by what it answers, and the message fast_mv gives
instead of the server's Java stack trace.

fast_mv's first statement reads a source (`DESCRIBE TABLE EXTENDED`); a server without Delta fails it
(run here against HiveThriftServer2 from pyspark 4.1.1, delta-spark 4.3.0):
- no Delta jars: `[DATA_SOURCE_NOT_FOUND] ... Failed to find the data source: delta`;
- the jars but not Delta's extension and catalog: `[DELTA_CONFIGURE_SPARK_SESSION_WITH_EXTENSION_AND_CATALOG]`;
- the jars given by `--packages` only: `NoClassDefFoundError: org/apache/spark/sql/delta/...` in the
  server's sessions (../shared/DELTA-FACTS.md);
and without the extension, Delta's SQL is unknown: `table_changes` is no table-valued function, and
`DESCRIBE HISTORY` is a syntax error.
"""

from __future__ import annotations

import re

NO_DELTA = (
    "the Spark server has no Delta Lake: start it with Delta's jars on the driver class path and "
    "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension, "
    "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog "
    "(see README, 'Running against a Spark Thrift Server')"
)

SIGNS = (
    re.compile(r"DATA_SOURCE_NOT_FOUND\].*data source: delta\b", re.IGNORECASE),
    re.compile(r"DELTA_CONFIGURE_SPARK_SESSION_WITH_EXTENSION_AND_CATALOG"),
    re.compile(r"(NoClassDefFoundError|ClassNotFoundException): org[./]apache[./]spark[./]sql[./]delta[./]"),
    re.compile(r"UNRESOLVABLE_TABLE_VALUED_FUNCTION\].*`table_changes`", re.IGNORECASE),
    re.compile(r"PARSE_SYNTAX_ERROR\].*== SQL ==\s*DESCRIBE\s+HISTORY\b", re.IGNORECASE | re.DOTALL),
)


def no_delta(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, is a server's answer that it has no Delta."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(sign.search(str(current)) for sign in SIGNS):
            return True
        current = current.__cause__ or current.__context__
    return False
