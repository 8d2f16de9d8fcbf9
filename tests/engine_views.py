"""What the engine's Spark tests share: the database of `orders_and_customers` (the `sources`
fixture, tests/conftest.py), its join, and views maintained over it without dbt."""

from __future__ import annotations

from benchmarks.run import CountingDatabase, unscripted
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql

DB = "ivm_engine_test"
JOIN = f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid"


def mv(db, name="v", sql=JOIN, unique_key=None, log=lambda _: None, policy="incremental"):
    """`incremental`: these views are small enough that `auto` would rebuild them (see dbt_ivm.policy)."""
    return Maintainer(db, TableName(DB, name), sql, log=log, unique_key=unique_key, refresh_policy=policy)


def last_commit(spark, name="v"):
    return spark.sql(f"DESCRIBE HISTORY {DB}.{name}__ivm LIMIT 1").collect()[0]


def assert_consistent(spark, db, name="v"):
    assert spark.sql(consistency_sql(db, TableName(DB, name))).count() == 0


def refreshed(spark, name="v"):
    """Refreshes `name`; returns every statement it issued, queries included."""
    db = CountingDatabase(spark)
    assert mv(db, name).materialize().action == "refreshed"
    return [s for _, sql in db.timings for s in unscripted(sql)]
