"""The fault matrix for sources and storage: one view, many faults in sequence, each with its
outcome asserted (a refresh, a logged rebuild, or a clear error, by `refresh_policy`) and the
view equal to its SQL after every run that succeeds. The faults tests/test_guards.py covers (a
source dropped and created again, CREATE OR REPLACE, the change feed turned off and on, writes
to the storage by others, races) are not repeated here. The table is in docs/ARCHITECTURE.md."""

from __future__ import annotations

import pytest

from dbt_ivm.errors import LostHistory, SourceError, StateError, UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Action, Maintainer, Outcome, consistency_sql

pytestmark = pytest.mark.spark
DB = "ivm_fault_test"
JOIN = f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid"
# Column mapping (renames and drops of columns), deletion vectors (REORG … PURGE), type widening.
O_PROPERTIES = (
    "delta.enableChangeDataFeed = true, delta.columnMapping.mode = 'name', delta.enableDeletionVectors = true, "
    "delta.enableTypeWidening = true"
)
FULL_REBUILD = r"--full-refresh"


class View:
    """Runs of the one view under a policy, each checked against its SQL when it succeeds."""

    def __init__(self, spark, db):
        self.spark, self.db = spark, db
        self.logs: list[str] = []

    def run(self, policy: str) -> Outcome:
        self.logs = []
        m = Maintainer(self.db, TableName(DB, "v"), JOIN, log=self.logs.append, refresh_policy=policy)
        outcome = m.materialize()
        assert self.spark.sql(consistency_sql(self.db, TableName(DB, "v"))).count() == 0, (policy, self.logs)
        return outcome

    def fails(self, policy: str, error: type[Exception], match: str) -> None:
        version = self.storage_version()
        with pytest.raises(error, match=match):
            Maintainer(self.db, TableName(DB, "v"), JOIN, refresh_policy=policy).materialize()
        assert self.storage_version() == version  # nothing written

    def logged(self, *words: str) -> bool:
        return any(all(w in line for w in words) for line in self.logs)

    def storage_version(self) -> int | None:
        if not self.spark.catalog.tableExists(f"{DB}.v__ivm"):
            return None
        return self.spark.sql(f"describe history {DB}.v__ivm limit 1").collect()[0]["version"]

    def version(self, table: str) -> int:
        return self.spark.sql(f"describe history {DB}.{table} limit 1").collect()[0]["version"]


@pytest.fixture()
def view(spark, spark_db):
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    spark.sql(
        f"create table {DB}.o (id int, cust int, amt double, note string) using delta tblproperties ({O_PROPERTIES})"
    )
    spark.sql(
        f"create table {DB}.c (cid int, name string) using delta tblproperties (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"insert into {DB}.o select id, id % 20, id * 1.5, 'x' from range(200)")
    spark.sql(f"insert into {DB}.c select id, concat('n', id) from range(20)")
    try:
        yield View(spark, spark_db)
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def test_replacements_restores_and_commits_that_change_no_rows(spark, view):
    sql = spark.sql
    assert view.run("incremental").action is Action.BUILT
    # INSERT OVERWRITE: read whole under incremental, rebuilt under auto (as CREATE OR REPLACE)
    sql(f"insert overwrite {DB}.c select id, concat('p', id) from range(18)")
    assert view.run("incremental").action is Action.REFRESHED
    assert view.logged("was replaced (WRITE (overwrite) at v", "whole change feed"), view.logs
    # TRUNCATE, then rows again
    sql(f"truncate table {DB}.c")
    sql(f"insert into {DB}.c select id, concat('t', id) from range(20)")
    assert view.run("auto").action is Action.BUILT
    assert view.logged("a source was replaced", "TRUNCATE at v"), view.logs
    # RESTORE of a source to a version before a delete: its rows come back
    before = view.version("o")
    sql(f"delete from {DB}.o where id < 30")
    sql(f"update {DB}.o set amt = 0 where id between 30 and 40")
    sql(f"restore table {DB}.o to version as of {before}")
    assert view.run("incremental").action is Action.NO_CHANGES  # net: the rows as they were
    assert view.logged(f"RESTORE to version {before} at v"), view.logs
    # a delete through a deletion vector, then REORG … APPLY (PURGE) and OPTIMIZE … ZORDER: no change rows
    sql(f"delete from {DB}.o where id = 5")
    assert view.run("incremental").action is Action.REFRESHED
    consumed = view.version("o")
    sql(f"reorg table {DB}.o apply (purge)")
    sql(f"optimize {DB}.o zorder by (cust)")
    sql(f"insert into {DB}.o values (500, 1, 2.0, 'y')")
    sql(f"delete from {DB}.o where id = 500")
    operations = [r["operation"] for r in sql(f"describe history {DB}.o limit 4").collect()]
    assert operations == ["DELETE", "WRITE", "OPTIMIZE", "REORG"], operations
    feed = sql(f"select count(*) from table_changes('{DB}.o', {consumed + 1}, {consumed + 4})").collect()[0][0]
    assert feed == 2  # the insert and the delete of id 500: the maintenance commits add none
    outcome = view.run("incremental")
    assert (outcome.action, outcome.inserted, outcome.deleted) == (Action.NO_CHANGES, 0, 0), outcome
    # maintenance alone: no change feed read, the watermark moves on in an empty commit
    sql(f"optimize {DB}.o zorder by (id)")
    sql(f"alter table {DB}.o set tblproperties ('owner.note' = 'x')")
    consumed = view.version("o")
    assert view.run("incremental").action is Action.NO_CHANGES and view.logged("changed no row"), view.logs
    assert not view.logged("reading changes"), view.logs
    mark = sql(f"describe history {DB}.v__ivm limit 1").collect()[0]["userMetadata"]
    assert f'"{DB}.o":{consumed}' in mark, mark


def test_columns_added_dropped_renamed_retyped_and_storage_and_sources_dropped(spark, view):
    sql = spark.sql
    assert view.run("incremental").action is Action.BUILT
    # columns the view does not read: added, renamed, dropped (column mapping): it keeps refreshing
    sql(f"alter table {DB}.o add column extra int")
    sql(f"update {DB}.o set extra = 1, amt = amt + 1 where id < 10")
    outcome = view.run("incremental")
    assert (outcome.action, outcome.inserted, outcome.deleted) == (Action.REFRESHED, 10, 10), outcome
    for change in ("rename column extra to extra2", "drop column extra2", "drop column note"):
        sql(f"alter table {DB}.o {change}")
        sql(f"update {DB}.o set amt = amt + 1 where id between 10 and 19")
        outcome = view.run("incremental")
        assert (outcome.action, outcome.inserted, outcome.deleted) == (Action.REFRESHED, 10, 10), (change, outcome)
    # … but a change before such a drop in the same span, or a rename and a drop in one span: Delta
    # reads no feed across them (incremental fails, auto rebuilds)
    sql(f"update {DB}.o set amt = amt + 1 where id < 5")
    sql(f"alter table {DB}.o add column extra3 int")
    sql(f"alter table {DB}.o drop column extra3")
    view.fails("incremental", LostHistory, rf"cannot be read across a change of the source's columns.*{FULL_REBUILD}")
    # a column it reads dropped: the model itself no longer resolves, under every policy
    sql(f"alter table {DB}.o drop column amt")
    view.fails("auto", UnsupportedView, r"Unknown column: amt")
    # … and added back: every row's amt is NULL now, a change its change feed does not hold
    sql(f"alter table {DB}.o add column amt double")
    sql(f"update {DB}.o set amt = 3 where id < 50")
    view.fails(
        "incremental",
        StateError,
        rf"o that the view reads was dropped or renamed.*DROP COLUMNS at v\d+ \(amt\).*{FULL_REBUILD}",
    )
    assert view.run("auto").action is Action.BUILT and view.logged("DROP COLUMNS at v"), view.logs
    # renamed away and back
    sql(f"alter table {DB}.o rename column amt to amount")
    sql(f"alter table {DB}.o rename column amount to amt")
    view.fails("incremental", StateError, rf"RENAME COLUMN at v\d+ \(amt\).*{FULL_REBUILD}")
    assert view.run("auto").action is Action.BUILT and view.logged("RENAME COLUMN at v"), view.logs
    # retyped (type widening): the view's columns change
    sql(f"alter table {DB}.o alter column cust type bigint")
    view.fails("incremental", StateError, rf"sources' columns changed.*{FULL_REBUILD}")
    assert view.run("auto").action is Action.BUILT and view.logged("sources' columns changed"), view.logs
    # vacuumed past the watermark: the change files the refresh needs are gone
    sql(f"update {DB}.o set amt = amt + 1 where id < 50")
    sql(f"delete from {DB}.o where id < 20")
    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    sql(f"set {check}=false")
    try:
        sql(f"vacuum {DB}.o retain 0 hours")
    finally:
        sql(f"reset {check}")
    view.fails("incremental", LostHistory, rf"no longer readable \(.*(FILE|File).*{FULL_REBUILD}")
    # auto rebuilds: on its estimate, or on the unreadable feed
    assert view.run("auto").action is Action.BUILT, view.logs
    assert view.logged("no longer readable") or view.logged("chose a rebuild"), view.logs
    # the storage dropped while the view over it remains: built again, saying so, under every policy
    sql(f"drop table {DB}.v__ivm")
    assert view.run("incremental").action is Action.BUILT
    assert view.logged(f"{DB}.v__ivm does not exist while the view does"), view.logs
    # a source dropped
    sql(f"drop table {DB}.c")
    view.fails("auto", SourceError, rf"source {DB}.c cannot be read \(\[TABLE_OR_VIEW_NOT_FOUND\]")
