"""A calculated SELECT over an aggregate (`analyze.calculated`) under ANSI mode: the refresh
maintains the aggregate's state only, so a division by zero or a cast that overflows fails where
`ref()` reads the groups, exactly when and how the model's own SQL fails."""

from __future__ import annotations

import re

import pytest

from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql

pytestmark = pytest.mark.spark
DB = "ivm_calculated_test"
RATIO = (
    f"select k, s / n as ratio, cast(s as int) as whole, case when n = 0 then 'none' else 'some' end as kind "
    f"from (select k, sum(x) as s, count(y) as n from {DB}.t group by k) g where k is not null"
)


def _error(spark, sql: str) -> str | None:
    """The error class the query fails with, or None."""
    try:
        spark.sql(sql).collect()
    except Exception as e:
        found = re.search(r"\[([A-Z_]+)\]", str(e))
        return found.group(1) if found else str(e).splitlines()[0]
    return None


def test_ansi_errors_come_where_ref_reads_the_groups_as_in_the_models_sql(spark, spark_db):
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.t (k int, x bigint, y string) using delta")
        spark.sql(f"insert into {DB}.t values (1, 10, 'a'), (1, 5, null), (2, 7, 'b'), (null, 1, null)")
        view = TableName(DB, "ratio")

        def refresh() -> str:
            return Maintainer(spark_db, view, RATIO, refresh_policy="incremental").materialize().action

        def agree() -> tuple[str | None, str | None]:
            return _error(spark, f"select * from {view.sql()}"), _error(spark, RATIO)

        assert refresh() == "built" and agree() == (None, None)
        assert spark.sql(consistency_sql(spark_db, view)).count() == 0
        # a group whose count(y) is 0: the refresh keeps its state, reading it divides by zero
        spark.sql(f"insert into {DB}.t values (3, 4, null)")
        assert refresh() == "refreshed"
        assert agree() == ("DIVIDE_BY_ZERO", "DIVIDE_BY_ZERO")
        spark.sql(f"update {DB}.t set y = 'c' where k = 3")
        assert refresh() == "refreshed" and agree() == (None, None)
        assert spark.sql(consistency_sql(spark_db, view)).count() == 0
        # a sum past INT: the cast fails in both
        spark.sql(f"insert into {DB}.t values (2, 3000000000, 'd')")
        assert refresh() == "refreshed"
        failed = agree()
        assert failed[0] is not None and failed[0] == failed[1], failed
        spark.sql(f"delete from {DB}.t where x = 3000000000")
        assert refresh() == "refreshed" and agree() == (None, None)
        assert spark.sql(consistency_sql(spark_db, view)).count() == 0
    finally:
        spark.sql(f"drop database if exists {DB} cascade")
        spark.conf.set("spark.sql.ansi.enabled", before)
