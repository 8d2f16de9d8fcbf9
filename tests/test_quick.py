"""The no-change run's few statements (`dbt_ivm.quick`): each thing that could make "no change"
wrong sends the run down the full inspection, which then does what it always did; and a write
whose statement fails after its commit landed stands (`commit.settled`)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dbt_ivm.configuration import OnChange
from dbt_ivm.errors import StateError
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Action, Maintainer, Outcome, consistency_sql
from dbt_ivm.storage import Storage
from tests.spark_sources import orders_and_customers

pytestmark = pytest.mark.spark
DB = "ivm_quick"
JOIN = f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid"
CHANGE_FEED = "delta.enableChangeDataFeed = true"
FULL_PATH = "DESCRIBE QUERY"  # the full inspection describes the model; the quick check never does


def run(spark_db, sql: str, name: str = "j", **options: Any) -> tuple[Outcome, list[str]]:
    spark_db.log.clear()
    options.setdefault("refresh_policy", "incremental")
    outcome = Maintainer(spark_db, TableName(DB, name), sql, **options).materialize()
    return outcome, list(spark_db.log)


def quick(spark_db, sql: str = JOIN, name: str = "j", **options: Any) -> bool:
    """A no-change run of the view; whether it ended in the quick check's statements."""
    outcome, sent = run(spark_db, sql, name, **options)
    assert outcome.action is Action.NO_CHANGES, (outcome, sent)
    if not any(s.startswith(FULL_PATH) for s in sent):
        assert len(sent) <= 4, sent
        return True
    return False


class Failing:
    """A connection whose write script raises: after the server ran it (`after`), or without sending it."""

    def __init__(self, db: Any, after: bool):
        self.db, self.after, self.failed = db, after, False

    def execute(self, sql: str) -> None:
        write = not self.failed and sql.startswith("BEGIN") and "commitInfo.userMetadata" in sql
        if write and not self.after:
            self.failed = True
            raise RuntimeError("connection lost before the server read the statement")
        self.db.execute(sql)
        if write:
            self.failed = True
            raise RuntimeError("connection lost after the server finished the statement")

    def query(self, sql: str) -> list[dict[str, Any]]:
        return self.db.query(sql)


def test_each_guard_of_the_quick_check_sends_the_run_down_the_full_path(spark, spark_db):
    with orders_and_customers(spark, DB, orders=60, customers=6):
        run(spark_db, JOIN)
        assert quick(spark_db)  # the probe script
        assert not quick(spark_db, JOIN + " ")  # the model's SQL
        assert not quick(spark_db, unique_key="id")  # its config
        changed = Storage(tblproperties={"owner": "x"})
        assert not quick(spark_db, storage=changed, on_change=OnChange.CONTINUE)  # the configuration
        zone = spark.conf.get("spark.sql.session.timeZone")
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        try:
            with pytest.raises(StateError, match="settings differ"):
                run(spark_db, JOIN)
        finally:
            spark.conf.set("spark.sql.session.timeZone", zone)
        spark.sql(f"drop view {DB}.j")
        assert not quick(spark_db) and spark.catalog.tableExists(f"{DB}.j")  # created again
        assert quick(spark_db)

        # a write that fails after its commit landed stands; one that never reached the server fails
        spark.sql(f"insert into {DB}.o values (100, 1, 50.0)")
        m = Maintainer(Failing(spark_db, after=True), TableName(DB, "j"), JOIN, refresh_policy="incremental")
        logs: list[str] = []
        m.log = logs.append
        assert m.materialize().action is Action.REFRESHED
        assert any("landed on its first submission" in line for line in logs), logs
        assert spark.sql(consistency_sql(spark_db, TableName(DB, "j"))).count() == 0
        spark.sql(f"insert into {DB}.o values (101, 1, 51.0)")
        m = Maintainer(Failing(spark_db, after=False), TableName(DB, "j"), JOIN, refresh_policy="incremental")
        with pytest.raises(RuntimeError, match="before the server"):
            m.materialize()
        assert run(spark_db, JOIN)[0].action is Action.REFRESHED and quick(spark_db)

        assert not quick(spark_db, change_feed=True)  # a fast_mv reads it: its storage's feed turned on
        assert not quick(spark_db)  # in a commit after the watermark's
        spark.sql(f"insert into {DB}.c values (6, 'n6')")  # a probe finds the next version
        assert not quick(spark_db) and quick(spark_db)  # no order of customer 6: no net change
        time.sleep(1.1)  # the catalog's creation time is in seconds
        spark.sql(f"create table {DB}.c2 using delta as select * from {DB}.c")
        spark.sql(f"drop table {DB}.c")  # created again, with as many versions and the same rows
        spark.sql(f"create table {DB}.c (cid int, name string) using delta tblproperties ({CHANGE_FEED})")
        spark.sql(f"insert into {DB}.c select * from {DB}.c2 where cid < 6")
        spark.sql(f"insert into {DB}.c select * from {DB}.c2 where cid >= 6")
        with pytest.raises(StateError, match="dropped and created again"):
            run(spark_db, JOIN)
