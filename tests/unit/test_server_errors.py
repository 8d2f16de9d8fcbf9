"""A Spark server without Delta Lake is named as such, from what the server answers (messages as
HiveThriftServer2 of pyspark 4.1.1 returned them through dbt-spark's `thrift` method)."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import CompilationError, DbtDatabaseError, DbtRuntimeError

from dbt.adapters.ivm_spark.impl import engine_errors
from dbt.adapters.ivm_spark.server_errors import NO_DELTA, no_delta
from dbt_ivm.errors import SourceError

HIVE = "org.apache.hive.service.cli.HiveSQLException: Error running query: "
# no Delta jars: DESCRIBE TABLE EXTENDED of a Delta table (and CREATE TABLE ... USING delta)
NO_JARS = (
    HIVE + "[DATA_SOURCE_NOT_FOUND] org.apache.spark.SparkClassNotFoundException: [DATA_SOURCE_NOT_FOUND] "
    "Failed to find the data source: delta. Make sure the provider name is correct and the package is properly "
    "registered and compatible with your Spark version. SQLSTATE: 42K02\n"
    "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError(...)"
)
# Delta's jars, not its extension and catalog: DESCRIBE TABLE EXTENDED of a Delta table
NO_CATALOG = (
    HIVE + "[DELTA_CONFIGURE_SPARK_SESSION_WITH_EXTENSION_AND_CATALOG] "
    "org.apache.spark.sql.delta.DeltaAnalysisException: [DELTA_CONFIGURE_SPARK_SESSION_WITH_EXTENSION_AND_CATALOG] "
    "This Delta operation requires the SparkSession to be configured with the\nDeltaSparkSessionExtension and the "
    "DeltaCatalog."
)
# Delta by --packages only (../shared/DELTA-FACTS.md)
PACKAGES_ONLY = HIVE + "java.lang.NoClassDefFoundError: org/apache/spark/sql/delta/commands/DescribeDeltaHistory$"
# no extension: Delta's SQL
NO_TABLE_CHANGES = (
    HIVE + "[UNRESOLVABLE_TABLE_VALUED_FUNCTION] org.apache.spark.sql.AnalysisException: "
    "[UNRESOLVABLE_TABLE_VALUED_FUNCTION] Could not resolve `table_changes` to a table-valued function."
)
NO_HISTORY = (
    HIVE + "[PARSE_SYNTAX_ERROR] org.apache.spark.sql.catalyst.parser.ParseException: \n[PARSE_SYNTAX_ERROR] "
    "Syntax error at or near 'limit'. SQLSTATE: 42601 (line 1, pos 21)\n\n== SQL ==\n"
    "DESCRIBE HISTORY `s`.`d` LIMIT 1\n---------------------^^^\n"
)
# errors of a server with Delta: not about Delta
MISSING_TABLE = (
    HIVE + "[TABLE_OR_VIEW_NOT_FOUND] org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] "
    "The table or view `s`.`d` cannot be found."
)
OTHER_SYNTAX = (
    HIVE + "[PARSE_SYNTAX_ERROR] Syntax error at or near 'limit'.\n\n== SQL ==\nSELECT * FROM t LIMT 1 LIMIT 1\n"
)
OTHER_FUNCTION = HIVE + "[UNRESOLVABLE_TABLE_VALUED_FUNCTION] Could not resolve `my_tvf` to a table-valued function."
MISSING_DATA_SOURCE = HIVE + "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: deltalake_custom."


@pytest.mark.parametrize("message", [NO_JARS, NO_CATALOG, PACKAGES_ONLY, NO_TABLE_CHANGES, NO_HISTORY])
def test_a_server_without_delta_is_recognised(message: str) -> None:
    assert no_delta(DbtDatabaseError(message))


@pytest.mark.parametrize("message", [MISSING_TABLE, OTHER_SYNTAX, OTHER_FUNCTION, MISSING_DATA_SOURCE])
def test_other_errors_are_not_taken_for_it(message: str) -> None:
    assert not no_delta(DbtDatabaseError(message))


def test_the_cause_of_an_engine_error_is_read() -> None:
    try:
        try:
            raise DbtDatabaseError(NO_JARS)
        except DbtDatabaseError as e:
            raise SourceError("source s.d cannot be read (Runtime Error); create it before building") from e
    except SourceError as e:
        assert no_delta(e)


def raised_by(error: Exception) -> Exception:
    with pytest.raises(Exception) as info, engine_errors():
        raise error
    return info.value


def test_the_adapter_names_the_fix_instead_of_the_stack_trace() -> None:
    """fast_mv's first statement (DESCRIBE TABLE EXTENDED of a source) fails, the engine says the
    source cannot be read: the adapter says what the server lacks."""
    try:
        raise DbtDatabaseError(NO_CATALOG)
    except DbtDatabaseError as cause:
        source_error = SourceError("source s.d cannot be read (Runtime Error); create it before building")
        source_error.__cause__ = cause
    error = raised_by(source_error)
    assert type(error) is DbtRuntimeError and NO_DELTA in str(error)
    assert "DeltaSparkSessionExtension" in NO_DELTA and "DeltaCatalog" in NO_DELTA and "driver class path" in NO_DELTA
    # a statement's error that reaches the adapter as the database's own
    error = raised_by(DbtDatabaseError(NO_TABLE_CHANGES))
    assert type(error) is DbtRuntimeError and NO_DELTA in str(error)


def test_other_errors_keep_their_message() -> None:
    error = raised_by(SourceError("source s.p is a parquet table, not Delta; convert it"))
    assert type(error) is CompilationError and "parquet table, not Delta" in str(error)
    database_error = DbtDatabaseError(MISSING_TABLE)
    assert raised_by(database_error) is database_error
