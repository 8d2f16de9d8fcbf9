"""The engine on Spark, without dbt: plans that touch only what the change needs, and bad
state that fails loudly instead of producing a wrong view."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal

import pytest

from benchmarks.run import CountingDatabase, execution_metrics, next_execution, unscripted
from dbt_ivm import layout, render
from dbt_ivm.catalog import CACHE_PRUNING, read_watermark, table_exists
from dbt_ivm.classes import changes, flips, identities, joins, terms
from dbt_ivm.commit import commit_metadata
from dbt_ivm.errors import ConfigError, SourceError, StateError, UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Action, Maintainer, consistency_sql, explain_view
from tests.spark_sources import CDF, orders_and_customers

pytestmark = pytest.mark.spark
DB = "ivm_engine_test"
JOIN = f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid"


@pytest.fixture()
def sources(spark):
    with orders_and_customers(spark, DB, orders=2000, customers=50):
        yield


def mv(db, name="v", sql=JOIN, unique_key=None, log=lambda _: None, policy="incremental"):
    """`incremental`: these views are small enough that `auto` would rebuild them (see dbt_ivm.policy)."""
    return Maintainer(db, TableName(DB, name), sql, log=log, unique_key=unique_key, refresh_policy=policy)


def last_commit(spark, name="v"):
    return spark.sql(f"DESCRIBE HISTORY {DB}.{name}__ivm LIMIT 1").collect()[0]


def merge_files(spark, since):
    """The target files of the first MERGE Spark ran after execution `since`, before and after
    Delta's data skipping (its SQL metrics: the commit's history does not record them)."""
    files: dict[int, dict[str, int]] = {}
    for execution, _, name, value in execution_metrics(spark, since):
        if name.startswith("number of target files ") and "skipping" in name:
            files.setdefault(execution, {})[name.removeprefix("number of target files ")] = int(value)
    assert files, "no MERGE ran"
    return files[min(files)]


def assert_consistent(spark, db, name="v"):
    assert spark.sql(consistency_sql(db, TableName(DB, name))).count() == 0


def test_change_to_one_source_broadcasts_the_change_and_skips_unchanged_feeds(spark, spark_db, sources):
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 500 = 3")
    m = mv(spark_db)
    m.materialize()
    # the staged change sets are released: dropping their views dropped their cached rows
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
    statements = "\n".join(m.statements)
    assert f"TABLE_CHANGES('`{DB}`.`o`'" in statements
    assert f"TABLE_CHANGES('`{DB}`.`c`'" not in statements  # an unchanged source costs no feed read
    assert "MERGE INTO" in statements
    # the other source is read only where its key can join a change row (`keys.key_ranges`)
    delta = next(s for s in m.statements if s.startswith("CACHE TABLE `__ivm_delta"))
    assert re.search(rf"FROM `{DB}`.`c` VERSION AS OF \d+ WHERE `cid` BETWEEN \d+ AND \d+\)", delta), delta
    # The plan of the change set: the staged change rows are the broadcast side of the join,
    # so the other source is scanned once, not shuffled.
    plan = m.inspect().plan
    versions_old, versions_new = {f"{DB}.o": 1, f"{DB}.c": 1}, {f"{DB}.o": 2, f"{DB}.c": 1}
    spark.sql(render.cache_as("__ivm_plan_chg", changes.change_select(plan.sources[0], 2, 2)))
    try:
        staged = joins.delta_select(plan, versions_old, versions_new, {0: "__ivm_plan_chg"})
        physical = spark.sql("EXPLAIN " + render.sql(staged)).collect()[0][0]
    finally:
        spark.sql(render.release("__ivm_plan_chg"))
    assert "BroadcastHashJoin" in physical and "SortMergeJoin" not in physical, physical
    assert_consistent(spark, spark_db)


def test_merge_reads_only_the_changed_identities_and_writes_no_change_feed(spark, spark_db, sources, monkeypatch):
    mv(spark_db).materialize()
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {DB}.v__ivm").collect()}
    assert props["delta.enableChangeDataFeed"] == "false"  # even where the session defaults it on
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 500 = 3")
    spark.sql(f"delete from {DB}.c where cid = 7")
    m = mv(spark_db)
    m.materialize()
    merge = next(s for s in m.statements if s.startswith("MERGE"))
    assert "`t`.`__ivm_rid_0` IN (" in merge and "`t`.`__ivm_rid_1` IN (" in merge
    history = last_commit(spark)["operationMetrics"]
    assert int(history.get("numTargetChangeFilesAdded", 0)) == 0
    assert_consistent(spark, spark_db)
    # too many changed identities to write out: the same MERGE without the filter
    monkeypatch.setattr(identities, "MAX_FILTER_IDENTITIES", 3)
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 100 = 4")
    m = mv(spark_db)
    assert m.materialize().action == "refreshed"
    merge = next(s for s in m.statements if s.startswith("MERGE"))
    assert "IN (" not in merge
    assert_consistent(spark, spark_db)


def corrupt(db, statement: str) -> None:
    """Runs `statement` on the storage as if fast_mv had written it (its commit carries a watermark
    with the consumed versions unchanged), so no check of the history can see it: only the MERGE's."""
    backing = TableName(DB, "v__ivm")
    mark = read_watermark(db, backing)
    with commit_metadata(db, dataclasses.replace(mark, token=mark.token + 1), backing):
        db.execute(statement)


def test_corrupt_stored_state_fails_the_merge_and_writes_nothing(spark, spark_db, sources):
    """A change set that removes more copies than the view holds is corrupt state, never a silent fix."""
    mv(spark_db).materialize()
    # a row lost behind the engine's back, by hand: the commit is seen, the view is rebuilt (auto) or the run fails
    spark.sql(f"DELETE FROM {DB}.v__ivm WHERE id = 10")
    spark.sql(f"DELETE FROM {DB}.o WHERE id = 10")
    with pytest.raises(StateError, match=r"commits fast_mv did not write \(DELETE at v\d+\)"):
        mv(spark_db).materialize()
    assert mv(spark_db, policy="auto").materialize().action == "built"
    spark.sql(f"INSERT INTO {DB}.o SELECT id, cust, amt FROM {DB}.o VERSION AS OF 1 WHERE id = 10")
    assert mv(spark_db).materialize().action == "refreshed"

    # the same damage in commits that carry a watermark (as a bug of the engine's would): the MERGE refuses it
    before = last_commit(spark)["version"]
    corrupt(spark_db, f"DELETE FROM {DB}.v__ivm WHERE id = 10")  # a stored row lost
    corrupt(spark_db, f"UPDATE {DB}.v__ivm SET __ivm_count = 0 WHERE id = 11")  # a count gone wrong
    corrupted = last_commit(spark)["version"]
    for victim in (10, 11):
        spark.sql(f"DELETE FROM {DB}.o WHERE id = {victim}")
        spark.sql(f"UPDATE {DB}.o SET amt = amt + 1 WHERE id = 12")  # a MERGE, not a pure delete
        with pytest.raises(Exception, match="removes rows the view does not hold"):
            mv(spark_db).materialize()
        assert last_commit(spark)["version"] == corrupted > before
        spark.sql(f"INSERT INTO {DB}.o SELECT id, cust, amt FROM {DB}.o VERSION AS OF 1 WHERE id = {victim}")
        spark.sql(f"DELETE FROM {DB}.o WHERE id = 12")
        spark.sql(f"INSERT INTO {DB}.o SELECT id, cust, amt FROM {DB}.o VERSION AS OF 1 WHERE id = 12")


def refreshed(spark, name="v"):
    """Refreshes `name`; returns every statement it issued, queries included."""
    db = CountingDatabase(spark)
    assert mv(db, name).materialize().action == "refreshed"
    return [s for _, sql in db.timings for s in unscripted(sql)]


def stored_reads(statements, name="v"):
    """The queries that read the stored rows of `name` (its history and properties aside)."""
    return [s for s in statements if f"`{name}__ivm`" in s and s.startswith("SELECT")]


def appends_above_the_stored_keys(spark, spark_db):
    """Inserts above every stored id, then a copy of a stored row: (the statements of each refresh)."""
    mv(spark_db).materialize()
    refreshes = []
    for rows in ["(5000, 1, 2.0), (5001, 2, 3.0)", "(6000, 3, 4.0)", "(6000, 3, 4.0)"]:
        spark.sql(f"insert into {DB}.o values {rows}")
        refreshes.append(refreshed(spark))
    return refreshes


def test_insert_only_change_appends_without_merge_and_above_the_stored_keys_without_a_probe(spark, spark_db, sources):
    first, above, copy = appends_above_the_stored_keys(spark, spark_db)
    # the first append reads the highest stored id (Delta's statistics), then inserts
    assert [s.split(" FROM ")[0] for s in stored_reads(first)] == ["SELECT MAX(`id`) AS hi_0"]
    assert any(s.startswith("INSERT INTO") for s in first) and not any(s.startswith("MERGE") for s in first)
    # the watermark carries it: the next append above it reads no stored row
    assert stored_reads(above) == [] and any(s.startswith("INSERT INTO") for s in above)
    # a copy of a stored row is not above it: probed, found, merged into the one stored row
    assert any("AS one" in s for s in stored_reads(copy)) and any(s.startswith("MERGE") for s in copy)
    assert spark.sql(f"select __ivm_count from {DB}.v__ivm where id = 6000").collect() == [(2,)]
    assert read_watermark(spark_db, TableName(DB, "v__ivm")).highs == {"id": 6000}
    assert_consistent(spark, spark_db)
    # a commit after the watermark's (here an OPTIMIZE) voids its highs: read again
    spark.sql(f"optimize {DB}.v__ivm")
    spark.sql(f"insert into {DB}.o values (7000, 1, 2.0)")
    assert [s.split(" FROM ")[0] for s in stored_reads(refreshed(spark))] == ["SELECT MAX(`id`) AS hi_0"]
    assert_consistent(spark, spark_db)


def test_highs_not_raised_by_a_write_would_store_a_copy_twice(spark, spark_db, sources, monkeypatch):
    """The check above can fail: with the highs left where they were, the copy of id 6000 lies
    above them, is inserted, and the view stores its identity twice."""
    monkeypatch.setattr(joins, "raised_highs", lambda highs, tracked, stats: highs)
    appends_above_the_stored_keys(spark, spark_db)
    assert spark.sql(f"select __ivm_count from {DB}.v__ivm where id = 6000").collect() == [(1,), (1,)]


def test_cluster_by_sorts_the_storage_so_a_local_change_reads_only_its_files(spark, spark_db, sources, monkeypatch):
    """A storage sorted by a timestamp in small files: a change to the newest rows and to a row
    whose timestamp is NULL reads those files only; the view stays exact. Microseconds: Delta's
    statistics keep milliseconds, and a file's latest row lies past its truncated maximum."""
    monkeypatch.setattr(layout, "FILE_ROWS", 250)
    spark.sql(f"create table {DB}.e (id int, at timestamp, local timestamp_ntz, v int) {CDF}")
    spark.sql(
        f"insert into {DB}.e select id, if(id % 97 = 5, null, timestamp_micros(1709251200000000 + id * 1000999)), "
        f"timestamp_ntz'2024-03-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 1.000999), id % 7 from range(3000)"
    )
    sql = f"select id, at, local, v from {DB}.e"

    def view(cluster_by="at"):
        return Maintainer(spark_db, TableName(DB, "ev"), sql, refresh_policy="incremental", cluster_by=cluster_by)

    view().materialize()
    assert spark.sql(f"DESCRIBE DETAIL {DB}.ev__ivm").collect()[0]["numFiles"] >= 10
    assert "storage: sorted by (at) at its last build" in explain_view(spark_db, TableName(DB, "ev"))
    assert spark.conf.get(layout.MAX_RECORDS_CONF) == "0"  # the session's own settings are back
    assert spark.conf.get(layout.SORT_AGGREGATE_CONF) == "false"
    assert spark.conf.get(layout.EXCLUDED_RULES_CONF, None) is None
    # id 5: a NULL timestamp; id 2999: the newest row, past its file's maximum in milliseconds
    spark.sql(f"update {DB}.e set v = v + 1 where id >= 2990 or id = 5")
    spark.sql(f"delete from {DB}.e where id = 2995")
    m = view()
    since = next_execution(spark)
    assert m.materialize().action == "refreshed"
    merge = next(s for s in m.statements if s.startswith("MERGE"))
    assert "(`t`.`at` IS NULL OR `t`.`at` BETWEEN TIMESTAMP_MICROS(" in merge
    assert (
        "`t`.`local` BETWEEN CAST('2024-03-01 00:00:05.004995' AS TIMESTAMP_NTZ) AND CAST('2024-03-01 00:50:01.996"
        in merge
    )
    # Delta skipped every file but the NULLs' (sorted first) and the newest rows'
    assert merge_files(spark, since) == {"before skipping": 12, "after skipping": 2}
    assert_consistent(spark, spark_db, "ev")
    logged = []
    Maintainer(spark_db, TableName(DB, "ev"), sql, logged.append, refresh_policy="incremental").materialize()
    assert any("the layout changes at the next build (--full-refresh)" in line for line in logged), logged
    with pytest.raises(ConfigError, match="cluster_by 'amount' is not a column of the model"):
        view("amount").materialize()


def test_a_sorted_build_groups_zeros_and_nans_as_one_key(spark, spark_db, sources):
    """A clustered build groups its rows sorted (`layout.SORTED_GROUPING`), and a sort aggregate
    tells keys apart by their bytes, where Spark sorts 0.0 and -0.0 (and every NaN) as equal: a
    FLOAT or DOUBLE key is normalized first, so the storage keeps one row per key, as the hash
    aggregate would, and a refresh's MERGE matches each stored row once."""
    spark.sql(f"create table {DB}.fz (id int, x double, f float) {CDF}")
    zero, nan = "cast('-0.0' as double)", "cast('NaN' as double)"
    rows = [f"(1, {x}, {f})" for x in ("0.0D", zero, f"-{nan}", nan) for f in ("cast(0 as float)", "-cast(0 as float)")]
    spark.sql(f"insert into {DB}.fz values {', '.join(rows * 2)}, (2, 1.5D, cast(2.5 as float))")
    sql = f"select id, x, f from {DB}.fz"
    m = Maintainer(spark_db, TableName(DB, "fv"), sql, refresh_policy="incremental", cluster_by="id")
    m.materialize()
    build = next(s for s in m.statements if s.startswith("CREATE OR REPLACE TABLE"))
    assert "ISNAN(`x`)" in build and "SORT BY `id`, `x`, `f`, `__ivm_rid_0`)" in build
    key = "id, x, f, __ivm_rid_0"
    stored = spark.sql(f"select {key}, count(*) as n from {DB}.fv__ivm group by {key} having n > 1").collect()
    assert stored == []  # one stored row per key
    assert spark.sql(f"select count(*) from {DB}.fv__ivm").collect()[0][0] == 3  # (1, 0, 0), (1, NaN, 0), (2, ...)
    assert_consistent(spark, spark_db, "fv")
    spark.sql(f"delete from {DB}.fz where x = {zero} and f = 0")  # SQL equality: every signed zero
    spark.sql(f"update {DB}.fz set f = 7 where isnan(x) and id = 1")
    assert Maintainer(spark_db, TableName(DB, "fv"), sql, refresh_policy="incremental").materialize().action == (
        "refreshed"
    )
    assert_consistent(spark, spark_db, "fv")
    assert spark.sql(f"select sum(__ivm_count) from {DB}.fv__ivm").collect()[0][0] == 9


def test_a_change_in_far_apart_keys_reads_only_the_other_sources_files_of_those_keys(spark, spark_db, sources):
    """The change set's keys in pieces (`keys.key_pieces`): new orders of the first and the last
    customer read the customers' files of those two keys, not every file between them."""
    spark.conf.set(layout.MAX_RECORDS_CONF, "250")
    try:
        spark.sql(f"create table {DB}.kc (cid int, name string) {CDF}")
        spark.sql(f"insert into {DB}.kc select id, concat('n', id) from range(3000) order by id")
    finally:
        spark.conf.unset(layout.MAX_RECORDS_CONF)
    sql = f"select o.id, k.name from {DB}.o o join {DB}.kc k on o.cust = k.cid"
    mv(spark_db, "vk", sql).materialize()
    spark.sql(f"insert into {DB}.o values (9001, 3, 1.0), (9002, 2990, 1.0), (9003, 2991, 1.0)")
    since = next_execution(spark)
    m = mv(spark_db, "vk", sql)
    assert m.materialize().action == "refreshed"
    assert "(`cid` BETWEEN 3 AND 3 OR `cid` BETWEEN 2990 AND 2991)" in "\n".join(m.statements)
    files = [
        int(value)
        for _, node, metric, value in execution_metrics(spark, since)
        if node.startswith("Scan parquet") and node.endswith(".kc") and metric == "number of files read"
    ]
    assert files and max(files) <= 2, files  # of 12 files of 250 customers
    assert_consistent(spark, spark_db, "vk")


def test_key_pieces_of_every_key_type_keep_the_view_exact(spark, spark_db, sources):
    """A join on date, timestamp, timestamp_ntz, decimal, bigint and string keys at once, changed
    in far-apart places: each numbered key is read in pieces, text in one range, and the view
    stays exact (the pieces' query puts each key's values in its own typed columns)."""
    columns = "d date, t timestamp, n timestamp_ntz, m decimal(10,2), b bigint, s string"
    values = (
        "date_add(date'2020-01-01', int(id)), timestamp_micros(1577836800000000 + id * 86400000000), "
        "timestamp_ntz'2020-01-01 00:00:00' + make_interval(0, 0, 0, id), id * 1.25, id * 1000000007, "
        "concat('k', lpad(id, 4, '0'))"
    )
    spark.sql(f"create table {DB}.ka ({columns}, v int) {CDF}")
    spark.sql(f"create table {DB}.kb ({columns}, w int) {CDF}")
    spark.sql(f"insert into {DB}.ka select {values}, id % 7 from range(400)")
    spark.sql(f"insert into {DB}.kb select {values}, id % 5 from range(400)")
    on = " and ".join(f"a.{c} = b.{c}" for c in "dtnmbs")
    sql = f"select a.d, a.t, a.n, a.m, a.b, a.s, a.v, b.w from {DB}.ka a join {DB}.kb b on {on}"
    mv(spark_db, "vt", sql).materialize()
    spark.sql(f"update {DB}.ka set v = v + 1 where m in (1.25, 496.25)")
    spark.sql(f"delete from {DB}.kb where b = 2000000014 or b = 398000002786")
    spark.sql(f"insert into {DB}.ka select {values}, 9 from range(397, 398)")
    m = mv(spark_db, "vt", sql)
    assert m.materialize().action == "refreshed"
    statements = "\n".join(m.statements)
    assert "(`d` BETWEEN CAST('2020-01-02' AS DATE) AND CAST('2020-01-02' AS DATE) OR `d` BETWEEN" in statements
    assert "(`m` BETWEEN 1.25 AND 1.25 OR `m` BETWEEN" in statements
    assert "`s` BETWEEN 'k0001' AND 'k0397'" in statements  # text: one range
    assert_consistent(spark, spark_db, "vt")


def test_declared_unique_key_appends_without_probing_and_fails_loudly_when_false(spark, spark_db, sources):
    mv(spark_db, unique_key="id").materialize()
    spark.sql(f"insert into {DB}.o values (6000, 1, 2.0), (6001, 2, 3.0)")
    db = CountingDatabase(spark)
    out = mv(db, unique_key="id").materialize()
    assert out.action == "refreshed" and out.inserted == 2
    statements = [s for _, sql in db.timings for s in unscripted(sql)]
    assert any(s.startswith("INSERT INTO") for s in statements)
    assert stored_reads(statements) == []  # no probe of the stored rows
    assert_consistent(spark, spark_db)
    version = last_commit(spark)["version"]
    for rows in [
        "(6002, 1, 2.0), (6002, 2, 3.0)",  # one new key twice
        "(6003, 1, 2.0), (6003, 1, 2.0)",
    ]:  # one new row twice: two copies of a key
        spark.sql(f"insert into {DB}.o values {rows}")
        with pytest.raises(StateError, match=r"unique_key \(id\) is not unique"):
            mv(spark_db, unique_key="id").materialize()
        assert last_commit(spark)["version"] == version
        spark.sql(f"delete from {DB}.o where id in (6002, 6003)")
    assert mv(spark_db, unique_key="id").materialize().action in ("refreshed", "no changes")
    assert_consistent(spark, spark_db)


def test_appends_under_a_unique_key_are_one_insert_straight_from_the_feeds(spark, spark_db, sources):
    """Only appends since the last refresh: nothing staged, netted or probed, one INSERT."""
    mv(spark_db, unique_key="id").materialize()
    # both sources append; order 7001's customer only exists in the new customers rows
    spark.sql(f"insert into {DB}.o values (7000, 1, 2.0), (7001, 50, 3.0)")
    spark.sql(f"insert into {DB}.c values (50, 'n50')")
    spark.sql(f"optimize {DB}.o")  # changes no rows: still only appends
    spark.sql(f"insert into {DB}.o values (7002, 2, 4.0)")
    m = mv(spark_db, unique_key="id")
    out = m.materialize()
    assert (out.action, out.path, out.inserted) == ("refreshed", "append", 3)
    writes = [s for s in m.statements if s.split()[0] in ("INSERT", "MERGE", "CACHE")]
    assert len(writes) == 1 and writes[0].startswith("INSERT INTO") and "TABLE_CHANGES" in writes[0]
    assert last_commit(spark)["operationMetrics"]["numOutputRows"] == "3"
    assert_consistent(spark, spark_db)
    # rows the join drops: nothing to add, the watermark still advances
    spark.sql(f"insert into {DB}.o values (7003, 999, 1.0)")
    version = last_commit(spark)["version"]
    out = mv(spark_db, unique_key="id").materialize()
    assert (out.action, out.path) == ("no changes", "append")
    assert last_commit(spark)["version"] == version + 1
    assert_consistent(spark, spark_db)
    # an append that read the table, or an update: the general path
    spark.sql(f"insert into {DB}.o select id + 10000, cust, amt from {DB}.o where id < 3")
    assert mv(spark_db, unique_key="id").materialize().path == "insert"
    spark.sql(f"update {DB}.o set amt = amt + 1 where id = 7000")
    assert mv(spark_db, unique_key="id").materialize().path == "merge"
    assert_consistent(spark, spark_db)
    # without a declared key the stored rows must be probed: the general path
    mv(spark_db, "w").materialize()
    spark.sql(f"insert into {DB}.o values (7004, 3, 1.0)")
    assert mv(spark_db, "w").materialize().path == "insert"


def test_append_path_fails_loudly_when_the_appended_rows_are_gone(spark, spark_db, sources):
    """The history says 'appended', but the appended file no longer exists: no silent skip."""
    import os
    from urllib.parse import urlparse

    mv(spark_db, unique_key="id").materialize()
    version = last_commit(spark)["version"]
    spark.sql(f"insert into {DB}.o values (8000, 1, 2.0)")
    path = spark.sql(f"select input_file_name() from {DB}.o where id = 8000").collect()[0][0]
    os.remove(urlparse(path).path)
    with pytest.raises(StateError, match=r"no longer readable.*--full-refresh"):
        mv(spark_db, unique_key="id").materialize()
    assert last_commit(spark)["version"] == version


def test_appended_change_rows_are_broadcast_to_a_large_other_source(spark, spark_db, sources):
    """An unstaged change feed has no size estimate: the hint keeps the other source unshuffled."""
    mv(spark_db, unique_key="id").materialize()
    spark.sql(f"insert into {DB}.c values (51, 'n51')")
    m = mv(spark_db, unique_key="id")
    found = m.inspect()
    plan, pinned = found.plan, found.pinned
    old = {**pinned, f"{DB}.c": pinned[f"{DB}.c"] - 1}
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # every source counts as large
    try:

        def physical(broadcast):
            insert = joins.append_statement(plan, m.backing, old, pinned, ("id",), "x", broadcast=broadcast)
            return spark.sql("EXPLAIN " + render.sql(insert.expression)).collect()[0][0]

        assert "SortMergeJoin" in physical(False)
        hinted = physical(True)
        assert "BroadcastHashJoin" in hinted and "SortMergeJoin" not in hinted, hinted
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_no_net_change_advances_the_watermark_without_touching_data(spark, spark_db, sources):
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = amt where id < 10")  # pre and post images equal
    m = mv(spark_db)
    out = m.materialize()
    assert out.action == "no changes" and "no net changes" in out.message
    writes = [s for s in m.statements if s.startswith(("MERGE", "INSERT"))]
    assert writes == [render.sql(render.empty_commit(TableName(DB, "v__ivm")))]  # a MERGE ... ON FALSE
    metrics = last_commit(spark)["operationMetrics"]
    assert int(metrics["numTargetFilesAdded"]) == 0 and int(metrics["numTargetFilesRemoved"]) == 0
    assert mv(spark_db).materialize().message == "no changes"  # the watermark moved


def test_lost_change_history_fails_loudly(spark, spark_db, sources):
    mv(spark_db).materialize()
    spark.sql(f"alter table {DB}.o set tblproperties (delta.enableChangeDataFeed = false)")
    spark.sql(f"delete from {DB}.o where id < 5")
    spark.sql(f"alter table {DB}.o set tblproperties (delta.enableChangeDataFeed = true)")
    with pytest.raises(StateError, match=r"no longer readable.*--full-refresh"):
        mv(spark_db).materialize()
    assert mv(spark_db).materialize(full_refresh=True).action == "built"
    assert_consistent(spark, spark_db)


def test_recreated_source_fails_loudly(spark, spark_db, sources):
    import time

    mv(spark_db).materialize()
    time.sleep(1.1)  # the catalog's creation time has second resolution
    spark.sql(f"drop table {DB}.c")
    spark.sql(f"create table {DB}.c (cid int, name string) {CDF}")
    for i in range(3):
        spark.sql(f"insert into {DB}.c values ({i}, 'x')")
    with pytest.raises(StateError, match="dropped and created again"):
        mv(spark_db).materialize()


def test_bad_sources_and_models_write_nothing(spark, spark_db, sources):
    spark.sql(f"create table {DB}.p (id int) using parquet")
    spark.sql(f"create table {DB}.nocdf (id int) using delta")
    spark.sql(f"alter table {DB}.nocdf set tblproperties (delta.enableChangeDataFeed = false)")
    cases = [
        (f"select id from {DB}.p", SourceError, "not Delta"),
        (
            f"select id from {DB}.nocdf",
            SourceError,
            f"ALTER TABLE `{DB}`.`nocdf` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)",
        ),
        (f"select id as __ivm_x from {DB}.o", UnsupportedView, "reserved prefix"),
        (f"select id, rank() over (order by id) r from {DB}.o group by id", UnsupportedView, "over an aggregate"),
    ]
    for sql, error, text in cases:
        with pytest.raises(error, match=r".*") as info:
            mv(spark_db, "bad", sql).materialize()
        assert text in str(info.value)
        assert "\n" not in str(info.value)
        assert not table_exists(spark_db, TableName(DB, "bad"))
        assert not table_exists(spark_db, TableName(DB, "bad__ivm"))
    # SQL the analysis reads but Spark rejects (a SELECT alias in a window's PARTITION BY or in
    # WHERE) fails with Spark's error: the model's SQL as written is what Spark describes
    rejected = {
        f"select cust as k, row_number() over (partition by k order by id) as rn from {DB}.o": "LATERAL_COLUMN_ALIAS",
        f"select amt + 1 as k, id from {DB}.o where k > 1": "UNRESOLVED_COLUMN",
    }
    for sql, text in rejected.items():
        with pytest.raises(Exception, match=text):
            mv(spark_db, "bad", sql).materialize()
        assert not table_exists(spark_db, TableName(DB, "bad__ivm"))


def test_changed_definition_rebuilds_unless_the_policy_is_incremental(spark, spark_db, sources):
    mv(spark_db).materialize()
    changed = JOIN + " where o.amt > 10"
    with pytest.raises(StateError, match=r"the model or its sources' columns changed; refresh_policy 'incremental'"):
        mv(spark_db, sql=changed).materialize()
    assert_consistent(spark, spark_db)  # nothing written: still the old definition's view
    out = mv(spark_db, sql=changed, policy="auto").materialize()
    assert out.action == "built"
    assert_consistent(spark, spark_db)


def test_refresh_policy_auto_chooses_by_the_estimate_and_full_always_rebuilds(spark, spark_db, sources, monkeypatch):
    import dataclasses

    from dbt_ivm import policy

    def counts(tables=("o", "c", "v__ivm")) -> dict[str, int]:
        return {f"{DB}.{t}": spark.sql(f"SELECT count(*) FROM {DB}.{t}").collect()[0][0] for t in tables}

    sizes = counts(("o", "c")) | {f"{DB}.v__ivm": 0}
    mv(spark_db, policy="auto").materialize()  # a first build under auto counts the sizes, once
    assert read_watermark(spark_db, TableName(DB, "v__ivm")).rows == sizes
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 100 = 7")
    logs: list[str] = []
    queried = len(spark_db.log)
    out = mv(spark_db, policy="auto", log=logs.append).materialize()  # 2,000 rows: the MERGE's fixed cost
    assert out.action == "built", out.message
    assert any("refresh_policy auto: rebuild, estimated cheaper (40 change rows, 2050 source rows" in x for x in logs)
    assert not any("AS `n0`" in q for q in spark_db.log[queried:]), "sizes counted again"
    assert_consistent(spark, spark_db)
    monkeypatch.setattr(policy, "COSTS", dataclasses.replace(policy.COSTS, rebuild_fixed=1000.0))

    # The rebuild recorded the sizes its estimate counted; from them and the commits' metrics the
    # next estimates know the sizes without counting, and each records them again.
    for change in (f"delete from {DB}.o where id % 100 = 8", f"insert into {DB}.o values (6000, 1, 2.0)"):
        spark.sql(change)
        before, logs[:], queried = counts(), [], len(spark_db.log)
        out = mv(spark_db, policy="auto", log=logs.append).materialize()
        assert out.action == "refreshed", out.message
        assert not any("AS `n0`" in q for q in spark_db.log[queried:]), "sizes counted again"
        assert read_watermark(spark_db, TableName(DB, "v__ivm")).rows == before
    assert any("refresh_policy auto: incremental (1 change rows" in x for x in logs), logs
    spark.sql(f"insert into {DB}.o values (5000, 1, 2.0)")
    assert mv(spark_db, policy="full").materialize().action == "built"
    assert mv(spark_db, policy="auto").materialize().action == "no changes"  # the rebuild kept the watermark
    assert_consistent(spark, spark_db)
    # the rebuild carried the sizes on to its versions: the next estimate still counts nothing
    spark.sql(f"insert into {DB}.o values (6001, 1, 2.0)")
    before, queried = counts(), len(spark_db.log)
    assert mv(spark_db, policy="auto").materialize().action == "refreshed"
    assert not any("AS `n0`" in q for q in spark_db.log[queried:]), "sizes counted again"
    assert read_watermark(spark_db, TableName(DB, "v__ivm")).rows == before
    # a dropped view over sound stored rows is created again, not rebuilt (incremental allows it)
    spark.sql(f"drop view {DB}.v")
    spark.sql(f"insert into {DB}.o values (5001, 2, 3.0)")
    out = mv(spark_db).materialize()
    assert out.action == "refreshed" and table_exists(spark_db, TableName(DB, "v")), out.message
    assert_consistent(spark, spark_db)


def test_the_consistency_test_catches_a_view_built_from_altered_sql(spark, spark_db, sources, monkeypatch):
    """fast_mv_consistent re-runs the model's own SQL, not the engine's rewrite of it: a view
    built from altered SQL (log10 written as ln, as a faulty round trip would) fails it."""
    import dataclasses

    from sqlglot import exp

    from dbt_ivm import inspection

    sql = f"select o.id, log10(o.amt + 1) as l from {DB}.o o"
    real = inspection.analyze

    def altered(*args, **kwargs):
        plan = real(*args, **kwargs)
        query = plan.query.transform(
            lambda n: (
                exp.Anonymous(this="LN", expressions=n.expressions)
                if isinstance(n, exp.Anonymous) and n.name.lower() == "log10"
                else n
            )
        )
        return dataclasses.replace(plan, query=query)

    mv(spark_db, "l", sql).materialize()
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "l"))).count() == 0
    monkeypatch.setattr(inspection, "analyze", altered)
    mv(spark_db, "l", sql).materialize(full_refresh=True)
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "l"))).count() > 0
    monkeypatch.undo()
    assert mv(spark_db, "l", sql, policy="auto").materialize().action == "built"  # the stored definition differs
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "l"))).count() == 0


def test_an_unqualified_source_in_another_current_database_keeps_the_recreation_check(spark, spark_db, sources):
    sql = "select o.id, o.amt from o"
    spark.sql(f"use {DB}")
    try:
        mv(spark_db, "u", sql).materialize()
        spark.sql(f"drop table {DB}.o")
        spark.sql(
            f"create table {DB}.o (id int, cust int, amt double) using delta "
            "tblproperties (delta.enableChangeDataFeed = true)"
        )
        for _ in range(3):  # back at (or past) the version the view consumed
            spark.sql(f"insert into {DB}.o values (1, 1, 1.0)")
        with pytest.raises(StateError, match="dropped and created again"):
            mv(spark_db, "u", sql).materialize()
    finally:
        spark.sql("use default")


def test_negative_zero_is_one_value_with_zero(spark, spark_db, sources):
    """Documented: a view stores -0.0 as 0.0 (rows are grouped by their values, and Spark groups
    the two as one); the consistency test, like Spark's EXCEPT ALL, counts them equal."""
    sql = f"select o.id, o.amt * -1.0 as neg from {DB}.o o where o.id < 3"
    mv(spark_db, "z", sql).materialize()
    spark.sql(f"update {DB}.o set cust = cust + 1 where id = 0")
    mv(spark_db, "z", sql).materialize()
    model = {r["id"]: r["neg"] for r in spark.sql(sql).collect()}
    view = {r["id"]: r["neg"] for r in spark.sql(f"select * from {DB}.z").collect()}
    assert str(model[0]) == "-0.0" and str(view[0]) == "0.0" and model == view
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "z"))).count() == 0


def test_a_union_all_keeps_minus_zero_apart_from_zero(spark, spark_db, sources):
    """A UNION ALL keeps each row as its branch gives it, and so does its view: a row with -0.0
    and one with 0.0 are two stored rows (grouped and matched by their text), through a build and
    a refresh that removes and adds rows of both signs."""
    sql = (
        f"select o.id % 2 as k, o.amt * -1.0 as x from {DB}.o o where o.id < 3 "
        f"union all select c.cid % 2 as k, c.cid * 0.0 as x from {DB}.c c where c.cid < 2"
    )

    def signed(query: str) -> list[tuple[int, str]]:
        return sorted((r["k"], str(r["x"])) for r in spark.sql(query).collect())

    mv(spark_db, "z", sql).materialize()
    assert (
        signed(f"select * from {DB}.z")
        == signed(sql)
        == [(0, "-0.0"), (0, "-3.0"), (0, "0.0"), (1, "-1.5"), (1, "0.0")]
    )
    spark.sql(f"update {DB}.o set amt = 0 where id = 2")  # -3.0 becomes -0.0
    spark.sql(f"delete from {DB}.c where cid = 1")
    spark.sql(f"update {DB}.o set amt = 7 where id = 0")  # a -0.0 leaves, the other stays
    mv(spark_db, "z", sql).materialize()
    assert signed(f"select * from {DB}.z") == signed(sql) == [(0, "-0.0"), (0, "-7.0"), (0, "0.0"), (1, "-1.5")]
    assert_consistent(spark, spark_db, "z")


# --- aggregate views ---------------------------------------------------------------------------
# o: 2000 rows, cust = id % 50, amt = id * 1.5: group c holds ids c, c + 50, …, c + 1950.
GROUPED = (
    f"select cust, count(*) as n, sum(amt) as s, avg(amt) as a, min(amt) as lo, max(amt) as hi "
    f"from {DB}.o group by cust"
)


def test_a_mixed_change_recomputes_only_the_groups_that_lost_their_extreme(spark, spark_db, sources):
    mv(spark_db, "g", GROUPED).materialize()
    spark.sql(f"delete from {DB}.o where id in (3, 1953, 1957, 110)")  # group 3: min and max, 7: max, 10: neither
    spark.sql(f"update {DB}.o set amt = amt + 0.5 where id = 111")  # group 11: a middle value moves
    spark.sql(f"insert into {DB}.o values (5000, 12, 1.0), (5001, 99, 7.0)")  # 12: a new min; 99: a new group
    lines: list[str] = []
    m = mv(spark_db, "g", GROUPED, log=lines.append)
    outcome = m.materialize()
    assert outcome.action == "refreshed" and outcome.path == "merge"
    assert f"fast_mv {DB}.g: 6 groups touched, 2 recomputed from the sources" in lines, lines
    recompute = next(s for s in m.statements if s.startswith("CACHE TABLE `__ivm_recomputed_"))
    assert "EXISTS" in recompute  # a semi-join on the lost groups' keys, not the whole source
    assert_consistent(spark, spark_db, "g")
    row = spark.sql(f"select lo, hi, n from {DB}.g where cust = 3").collect()[0]
    assert (row.lo, row.hi, row.n) == (53 * 1.5, 1903 * 1.5, 38)


def test_a_group_is_recomputed_only_when_every_row_at_its_extreme_is_gone(spark, spark_db, sources):
    """Group 3's `id % 7` cycles 3, 4, 5, 6, 0 … over its 40 rows: six rows hold its max 6."""
    sql = f"select cust, count(*) as n, max(id % 7) as hi, min(id % 7) as lo from {DB}.o group by cust"
    mv(spark_db, "x", sql).materialize()
    holders = f"select hi, __ivm_m_1 from {DB}.x__ivm join {DB}.x on __ivm_g_0 = cust where cust = 3"
    assert tuple(spark.sql(holders).collect()[0]) == (6, 6)
    steps = [
        ([f"delete from {DB}.o where id in (153, 503)"], 0, (6, 4)),  # two of the six
        ([f"delete from {DB}.o where cust = 3 and id % 7 = 6"], 1, (5, 6)),  # the last four
        (  # every 5 deleted, and a new 5 inserted by the same refresh: the extreme stays
            [f"delete from {DB}.o where cust = 3 and id % 7 = 5", f"insert into {DB}.o values (5003, 3, 1.0)"],
            0,
            (5, 1),
        ),
    ]
    for statements, recomputed, expected in steps:
        for statement in statements:
            spark.sql(statement)
        lines: list[str] = []
        mv(spark_db, "x", sql, log=lines.append).materialize()
        assert f"fast_mv {DB}.x: 1 groups touched, {recomputed} recomputed from the sources" in lines, lines
        assert tuple(spark.sql(holders).collect()[0]) == expected
        assert_consistent(spark, spark_db, "x")


def test_a_view_stored_before_extremes_were_counted_is_rebuilt_once_saying_so(spark, spark_db, sources):
    """A MIN/MAX view built by an earlier release has no `__ivm_m_<k>` and no `dbt_ivm.state`:
    `incremental` refuses with the reason, `auto` rebuilds once, then refreshes."""
    sql = f"select cust, max(amt) as hi, sum(amt) as s from {DB}.o group by cust"
    mv(spark_db, "e", sql).materialize()
    spark.sql(f"alter table {DB}.e__ivm unset tblproperties ('dbt_ivm.state')")
    spark.sql(f"delete from {DB}.o where id % 97 = 1")
    with pytest.raises(StateError, match=r"keeps other hidden columns .* counts MIN/MAX's rows.*--full-refresh"):
        mv(spark_db, "e", sql).materialize()
    lines: list[str] = []
    assert mv(spark_db, "e", sql, log=lines.append, policy="auto").materialize().action == "built"
    assert any("building (the stored view keeps other hidden columns" in line for line in lines), lines
    assert_consistent(spark, spark_db, "e")
    spark.sql(f"delete from {DB}.o where id % 97 = 2")
    assert mv(spark_db, "e", sql).materialize().action == "refreshed"
    assert_consistent(spark, spark_db, "e")
    # a view without MIN/MAX stores what it did before: no property needed, nothing rebuilt
    sums = f"select cust, sum(amt) as s from {DB}.o group by cust"
    mv(spark_db, "f", sums).materialize()
    spark.sql(f"alter table {DB}.f__ivm unset tblproperties ('dbt_ivm.state')")
    spark.sql(f"delete from {DB}.o where id % 97 = 3")
    assert mv(spark_db, "f", sums).materialize().action == "refreshed"
    assert_consistent(spark, spark_db, "f")


def test_appends_to_an_aggregate_recompute_nothing_and_read_no_stored_group(spark, spark_db, sources):
    mv(spark_db, "g", GROUPED).materialize()
    spark.sql(f"insert into {DB}.o values (5000, 12, 1.0), (5001, 12, 9999.0), (5002, NULL, NULL)")
    lines: list[str] = []
    m = mv(spark_db, "g", GROUPED, log=lines.append)
    m.materialize()
    assert f"fast_mv {DB}.g: 2 groups touched, 0 recomputed from the sources" in lines, lines
    backing = f"`{DB}`.`g__ivm`"
    reads = [s for s in m.statements if backing in s and not s.startswith(("MERGE INTO", "DESCRIBE", "SHOW"))]
    assert reads == [], reads  # the view's groups are read by the MERGE alone
    assert_consistent(spark, spark_db, "g")
    assert spark.sql(f"select n, s, lo from {DB}.g where cust is null").collect()[0] == (1, None, None)


def test_having_hides_groups_but_keeps_their_state_and_types_match_the_model(spark, spark_db, sources):
    sql = (
        f"select cust, count(*) as n, sum(cust) as s, avg(cust) as a, cast(sum(amt) as decimal(20, 2)) as d "
        f"from {DB}.o group by cust having count(*) > 40"
    )
    mv(spark_db, "h", sql).materialize()
    assert spark.sql(f"select * from {DB}.h").count() == 0  # 40 rows per group
    spark.sql(f"insert into {DB}.o values (5000, 5, 1.0)")
    mv(spark_db, "h", sql).materialize()
    assert [tuple(r) for r in spark.sql(f"select cust, n from {DB}.h").collect()] == [(5, 41)]
    assert_consistent(spark, spark_db, "h")
    view = [(r.col_name, r.data_type) for r in spark.sql(f"describe table {DB}.h").collect()]
    model = [(r.col_name, r.data_type) for r in spark.sql(f"describe query {sql}").collect()]
    assert view == model == [("cust", "int"), ("n", "bigint"), ("s", "bigint"), ("a", "double"), ("d", "decimal(20,2)")]


def test_a_global_aggregate_keeps_its_one_row_over_no_rows(spark, spark_db, sources):
    sql = f"select count(*) as n, sum(amt) as s, min(amt) as lo, count(distinct cust) as k from {DB}.o where amt < 3"
    mv(spark_db, "t", sql).materialize()
    assert [tuple(r) for r in spark.sql(f"select * from {DB}.t").collect()] == [(2, 1.5, 0.0, 2)]
    spark.sql(f"delete from {DB}.o where amt < 3")
    mv(spark_db, "t", sql).materialize()
    assert [tuple(r) for r in spark.sql(f"select * from {DB}.t").collect()] == [(0, None, None, 0)]
    assert_consistent(spark, spark_db, "t")


def test_a_group_the_join_terms_add_and_remove_is_neither_wrong_nor_stuck(spark, spark_db):
    """One refresh inserts orders and moves their customer: the order term adds a row to EU (joined
    with the old customers) that the customer term removes again. EU's stored extreme must not be
    the value added and removed; a group that nets to nothing is not inserted."""
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.o (cid int, amt double) {CDF}")
        spark.sql(f"create table {DB}.c (id int, region string) {CDF}")
        spark.sql(f"insert into {DB}.c values (1, 'EU'), (2, 'EU'), (3, 'NA')")
        by_region = (
            f"select c.region, min(o.amt) as lo, count(*) as n from {DB}.o o join {DB}.c c on o.cid = c.id "
            "group by c.region"
        )
        regions = f"select distinct c.region from {DB}.o o join {DB}.c c on o.cid = c.id"
        mv(spark_db, "r", by_region).materialize()
        mv(spark_db, "d", regions).materialize()
        spark.sql(f"insert into {DB}.o values (1, 1.0), (2, 10.0), (3, 5.0)")
        spark.sql(f"update {DB}.c set region = 'US' where id = 1")
        for name, sql in (("r", by_region), ("d", regions)):
            assert mv(spark_db, name, sql).materialize().action == "refreshed"
            assert_consistent(spark, spark_db, name)
        rows = {tuple(r) for r in spark.sql(f"select * from {DB}.r").collect()}
        assert rows == {("EU", 10.0, 1), ("US", 1.0, 1), ("NA", 5.0, 1)}
        spark.sql(f"insert into {DB}.o values (3, 7.0)")
        spark.sql(f"update {DB}.c set region = 'SA' where id = 3")  # NA: added and removed, gone
        for name, sql in (("r", by_region), ("d", regions)):
            mv(spark_db, name, sql).materialize()
            assert_consistent(spark, spark_db, name)
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def test_the_unique_key_flip_runs_only_where_the_changed_keys_are_unique(spark, spark_db, monkeypatch):
    """A padded row flips with its match when the change's join keys are unique in the source
    before and after it (checked each refresh); where they repeat, the general compensation
    runs, and a flip there would be wrong: the consistency test sees it."""
    spark.sql(f"create database if not exists {DB}")
    for t in ("r", "s"):
        spark.sql(f"drop table if exists {DB}.{t}")
    spark.sql(f"create table {DB}.r (k int, v string) {CDF}")
    spark.sql(f"create table {DB}.s (k int, w string) {CDF}")
    spark.sql(f"insert into {DB}.r values (1, 'x'), (2, 'y'), (3, 'z')")
    spark.sql(f"insert into {DB}.s values (1, 'a'), (1, 'b'), (2, 'c')")
    sql = f"select r.k, r.v, s.w from {DB}.r r left join {DB}.s s on r.k = s.k"
    said: list[str] = []

    def refresh(statement: str) -> list[str]:
        spark.sql(statement.format(db=DB))
        said.clear()
        m = mv(spark_db, "flip", sql, log=said.append)
        m.materialize()
        assert_consistent(spark, spark_db, "flip")
        return [s for s in m.statements if s.startswith("CACHE TABLE `__ivm_delta")]

    mv(spark_db, "flip", sql).materialize()
    delta = refresh("delete from {db}.s where w = 'c'")  # the only match of k = 2 goes
    assert "__ivm_flow" in delta[0] and "LEFT SEMI JOIN" not in delta[0]
    assert any("s (k) unique: padded rows flipped" in line for line in said), said
    delta = refresh("insert into {db}.s values (3, 'd')")  # the first match of k = 3 comes
    assert "__ivm_flow" in delta[0]
    delta = refresh("delete from {db}.s where w = 'a'")  # k = 1 keeps its other match
    assert "__ivm_flow" not in delta[0] and "LEFT SEMI JOIN" in delta[0]
    assert any("s (k) repeats: general compensation" in line for line in said), said
    # A change that inserts k = 4 twice repeats it by itself: the change set says so, s is not
    # read for the check (`repeated_in_change`, asked in the key ranges' query), and the general
    # compensation runs.
    spark.sql(f"insert into {DB}.s values (4, 'g'), (4, 'h')")
    said.clear()
    counted = CountingDatabase(spark)
    mv(counted, "flip", sql, log=said.append).materialize()
    assert_consistent(spark, spark_db, "flip")
    assert any("s (k) repeats: general compensation" in line for line in said), said
    checks = [s for _, sql in counted.timings for s in unscripted(sql) if "SELECT DISTINCT `i`" in s]
    assert len(checks) == 1 and "VERSION AS OF" not in checks[0] and "__ivm_repeats" in checks[0], checks

    # Forced where the key repeats, the flip pads r's k = 2 row while (2, 'e') still matches.
    spark.sql(f"insert into {DB}.s values (2, 'e'), (2, 'f')")
    mv(spark_db, "flip", sql).materialize()
    monkeypatch.setattr(
        terms,
        "decide_flips",
        lambda refresh, narrow, *_: (frozenset(i for i in flips.flip_keys(refresh.plan) if i in refresh.staged), ""),
    )
    spark.sql(f"delete from {DB}.s where w = 'f'")
    mv(spark_db, "flip", sql).materialize()
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "flip"))).count() > 0
    spark.sql(f"drop view if exists {DB}.flip")
    for t in ("flip__ivm", "r", "s"):
        spark.sql(f"drop table if exists {DB}.{t}")


def _rows(spark, sql):
    return sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)


def test_sums_past_their_type_keep_spark_s_value_under_both_ansi_settings(spark, spark_db):
    """A DECIMAL(38, 0) group whose sum overflows (Spark's SUM: NULL without ANSI, an error with
    it) and comes back in range; a change whose sum added less sum removed overflows while the
    group's sum does not; six epoch nanoseconds, whose AVG Spark sums in DOUBLE and whose SUM
    wraps without ANSI. After every change each view equals the model's SQL, or both fail."""
    big, ns = "30000000000000000000000000000000000000", 1_700_000_000_000_000_000 // 4096 * 4096
    views = {
        "s": f"select g, sum(m) as sm, sum(ns) as sn, count(m) as c from {DB}.n group by g",
        "a": f"select g, avg(ns) as an, count(*) as n from {DB}.n group by g",
    }
    steps = [
        [
            f"insert into {DB}.n values (1, {big}, {ns}), (1, {big}, {ns + 4096}), (2, 1, 1), "
            f"(3, -5{big[1:]}, 1), (3, 2{big[1:]}, 2)"
        ],
        [  # group 1: 3 + 3 + 4.5 (E37) overflows, and its six ns sum past 2^63
            f"insert into {DB}.n values (1, 45{big[2:]}, {ns + 2 * 4096}), (1, NULL, {ns + 3 * 4096}), "
            f"(1, NULL, {ns + 4 * 4096}), (1, NULL, {ns + 5 * 4096})",
            # group 3: -5E37 becomes 6E37: the change adds 6E37 and removes -5E37 (1.1E38 apart)
            f"update {DB}.n set m = 6{big[1:]} where m = -5{big[1:]}",
        ],
        [f"delete from {DB}.n where m = 45{big[2:]}"],  # group 1 back in range: 6E37
    ]
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        for setting in ("false", "true"):
            spark.conf.set("spark.sql.ansi.enabled", setting)
            spark.sql(f"drop table if exists {DB}.n")
            for name in views:
                spark.sql(f"drop view if exists {DB}.{name}")
                spark.sql(f"drop table if exists {DB}.{name}__ivm")
            spark.sql(f"create table {DB}.n (g int, m decimal(38, 0), ns bigint) {CDF}")
            for number, step in enumerate(steps):
                for statement in step:
                    spark.sql(statement)
                for name, sql in views.items():
                    where = f"ANSI {setting}, step {number}, view {name}"
                    try:
                        expected = _rows(spark, sql)
                    except Exception as e:  # the model's own SQL fails: so does the refresh
                        assert setting == "true" and "ARITHMETIC_OVERFLOW" in str(e), (where, e)
                        with pytest.raises(Exception, match=r"ARITHMETIC_OVERFLOW|NUMERIC_VALUE_OUT_OF_RANGE"):
                            mv(spark_db, name, sql).materialize()
                        continue
                    assert mv(spark_db, name, sql).materialize().action != "no changes", where
                    assert _rows(spark, f"select * from {DB}.{name}") == expected, where
            assert _rows(spark, views["s"])[0][:2] == (1, Decimal(2 * int(big)))
            assert _rows(spark, views["s"])[2][:2] == (3, Decimal(8 * int(big) // 3))
            assert _rows(spark, views["a"])[0][1] == (5 * ns + 13 * 4096) / 5
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
        spark.sql(f"drop database if exists {DB} cascade")


def test_the_view_is_the_models_sql_where_analysis_used_to_rewrite_it(spark, spark_db):
    """Each view is built before the rows that tell the two readings apart come, and refreshed.

    Predicates run as written (ANSI off, as dbt-spark sets it): `x + 0.05 >= 0.4` folded to
    `x >= 0.4 - 0.05` compares with a DECIMAL 0.35 and keeps x = 0.35, whose DOUBLE sum is below
    0.4 (in WHERE, and in an outer join's ON: matched instead of padded); `id + 1 > 3` as `id > 2`
    keeps 2147483647, whose id + 1 wraps around.
    JOIN ... USING joins as Spark does: after `ua FULL JOIN ub USING (k)` the next USING (k)
    compares COALESCE(ua.k, ub.k), after a RIGHT join ub.k; joined on ua.k, the b7 and c7 rows of
    k = 7 (no ua row) stay apart, and the RIGHT join after it becomes an inner one."""
    tables = {
        "p": ("id int, x double", "(1, 0.5), (2, 0.1)"),
        "q": ("id int, w string", "(1, 'q1'), (3, 'q3'), (4, 'q4'), (2147483647, 'max')"),
        "ua": ("k int, v string", "(1, 'a1'), (null, 'an')"),
        "ub": ("k int, v string", "(1, 'b1'), (2, 'b2')"),
        "uc": ("k int, v string", "(2, 'c2'), (3, 'c3')"),
    }
    using = "{db}.ua {0} join {db}.ub using (k) {0} join {db}.uc using (k)"
    columns = "k, ua.v as av, ub.v as bv, uc.v as cv"
    views = {
        "pred": (f"select id, x from {DB}.p where x + 0.05 >= 0.4 and id + 1 > 3", {(4, 0.36)}),
        "pred_on": (
            f"select q.id, q.w, p.x from {DB}.q q left join {DB}.p p on p.id = q.id and p.x + 0.05 >= 0.4",
            {(1, "q1", 0.5), (3, "q3", None), (4, "q4", 0.36), (2147483647, "max", 0.5)},
        ),
        "u_full": (
            f"select {columns} from " + using.format("full", db=DB),
            {(1, "a1", "b1", None), (None, "an", None, None), (2, None, "b2", None), (7, None, "b7", "c7")}
            | {(3, None, None, "c3")},
        ),
        "u_right": (
            f"select {columns} from " + using.format("right", db=DB),
            {(3, None, None, "c3"), (7, None, "b7", "c7")},
        ),
        "u_agg": (
            "select k, count(*) as n, count(uc.v) as nc from " + using.format("full", db=DB) + " group by k",
            {(1, 1, 0), (None, 1, 0), (2, 1, 0), (7, 1, 1), (3, 1, 1)},
        ),
    }
    spark.sql(f"create database if not exists {DB}")
    try:
        for t, (cols, rows) in tables.items():
            spark.sql(f"drop table if exists {DB}.{t}")
            spark.sql(f"create table {DB}.{t} ({cols}) {CDF}")
            spark.sql(f"insert into {DB}.{t} values {rows}")
        for name, (sql, _) in views.items():
            mv(spark_db, name, sql).materialize()
        spark.sql(f"insert into {DB}.p values (3, 0.35), (4, 0.36), (2147483647, 0.5)")
        spark.sql(f"insert into {DB}.ub values (7, 'b7')")
        spark.sql(f"insert into {DB}.uc values (7, 'c7')")
        spark.sql(f"delete from {DB}.uc where k = 2")
        for name, (sql, rows) in views.items():
            assert mv(spark_db, name, sql).materialize().action == "refreshed"
            assert {tuple(r) for r in spark.sql(f"select * from {DB}.{name}").collect()} == rows, name
            assert_consistent(spark, spark_db, name)
    finally:
        for name in views:
            spark.sql(f"drop view if exists {DB}.{name}")
            spark.sql(f"drop table if exists {DB}.{name}__ivm")
        for t in tables:
            spark.sql(f"drop table if exists {DB}.{t}")


def test_the_view_keeps_the_models_top_level_order_by(spark, spark_db, sources):
    sql = f"select id, cust, amt from {DB}.o where amt > 3 order by cust desc nulls first, amt, 1"
    mv(spark_db, "ordered", sql).materialize()
    spark.sql(f"update {DB}.o set cust = null where id % 97 = 1")
    spark.sql(f"insert into {DB}.o values (100001, null, 50.0), (100002, 3, 4.5)")
    assert mv(spark_db, "ordered", sql).materialize().action is Action.REFRESHED
    assert spark.sql(f"select * from {DB}.ordered").collect() == spark.sql(sql).collect()
    assert_consistent(spark, spark_db, "ordered")


def test_an_aggregate_over_a_union_all_is_exact_when_its_branches_change_together(spark, spark_db):
    """The issue's feeds: one refresh changes both feeds and the table read by two branches (db.c,
    once joined, once alone); a delete removes a group's maximum in one branch while the other
    branch adds to the group, and a feed's only change is inserts of INT values where the union
    is DECIMAL (the change keeps the union's type)."""
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.a (d int, cust int, amt decimal(10,2)) {CDF}")
        spark.sql(f"create table {DB}.b (d int, cust int, amt int) {CDF}")
        spark.sql(f"create table {DB}.c (cid int, name string) {CDF}")
        spark.sql(f"insert into {DB}.a values (1, 1, 5.50), (1, 2, 7.25), (2, NULL, 1.00)")
        spark.sql(f"insert into {DB}.b values (1, 1, 3), (2, 3, 9)")
        spark.sql(f"insert into {DB}.c values (1, 'x'), (2, 'y'), (NULL, 'z')")
        feeds = (
            f"select feed, d, count(*) as n, sum(amt) as s, max(amt) as hi, avg(amt) as av from (select 'a' as feed, "
            f"d, amt from {DB}.a union all select 'b', d, amt from {DB}.b union all select 'c', a.d, a.amt "
            f"from {DB}.a a join {DB}.c c on a.cust = c.cid union all select 'c', cid, 0 from {DB}.c) u "
            "group by feed, d"
        )
        by_name = (
            f"with u as (select c.name, a.amt from {DB}.a a left join {DB}.c c on a.cust = c.cid union all "
            f"select name, cid from {DB}.c) select count(*) as n, max(amt) as hi, count(distinct name) as names from u"
        )
        views = {"f": feeds, "g": by_name}
        for name, sql in views.items():
            assert mv(spark_db, name, sql).materialize().action == "built"
            assert_consistent(spark, spark_db, name)
        spark.sql(f"delete from {DB}.a where amt = 7.25")  # the maximum of ('a', 1) and ('c', 1)
        spark.sql(f"insert into {DB}.a values (1, 1, 6.00), (3, NULL, 2.00)")
        spark.sql(f"insert into {DB}.b values (1, 4, 11)")  # INT into a DECIMAL union
        spark.sql(f"update {DB}.c set cid = 2 where name = 'z'")
        for name, sql in views.items():
            assert mv(spark_db, name, sql).materialize().action == "refreshed"
            assert_consistent(spark, spark_db, name)
        rows = {tuple(r) for r in spark.sql(f"select feed, d, n, s, hi from {DB}.f where d = 1").collect()}
        assert rows == {
            ("a", 1, 2, Decimal("11.50"), Decimal("6.00")),
            ("b", 1, 2, Decimal("14.00"), Decimal("11.00")),
            ("c", 1, 3, Decimal("11.50"), Decimal("6.00")),
        }
        spark.sql(f"insert into {DB}.b values (2, 5, 1)")  # one branch alone
        assert mv(spark_db, "f", feeds).materialize().action == "refreshed"
        assert_consistent(spark, spark_db, "f")
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def test_a_join_over_a_union_all_whose_branch_types_spark_widens_is_refused_before_a_build(spark, spark_db):
    """The analysis cannot type `dim + 0` or `concat(code, '')`: where Spark widens the union's key
    to STRING beside an INT branch, the build is refused before it writes, naming the column; where
    the branches agree (BIGINT), the join is built, refreshed after both sides changed, and exact."""
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.a (id int, dim int) {CDF}")
        spark.sql(f"create table {DB}.b (id int, dim bigint, code string) {CDF}")
        spark.sql(f"create table {DB}.c (cid bigint, name string) {CDF}")
        spark.sql(f"insert into {DB}.a values (1, 1), (2, NULL), (3, 2)")
        spark.sql(f"insert into {DB}.b values (1, 1, '1'), (4, 2, '02')")
        spark.sql(f"insert into {DB}.c values (1, 'x'), (2, 'y'), (NULL, 'z')")
        widened = (
            f"select f.id, c.name from (select id, dim as k from {DB}.a union all select id, concat(code, '') "
            f"from {DB}.b) f join {DB}.c c on f.k = c.cid"
        )
        with pytest.raises(UnsupportedView, match="column k of the UNION ALL f, which the join reads, is string"):
            mv(spark_db, "bad", widened).materialize()
        assert not table_exists(spark_db, TableName(DB, "bad__ivm"))
        agreed = (
            f"select f.id, f.k, c.name from (select id, dim + 0L as k from {DB}.a union all select id, dim "
            f"from {DB}.b union all select id, null from {DB}.b where code = '1') f left join {DB}.c c on f.k = c.cid"
        )
        assert mv(spark_db, "v", agreed).materialize().action == "built"
        assert_consistent(spark, spark_db)
        spark.sql(f"insert into {DB}.a values (5, 2), (5, 2)")
        spark.sql(f"update {DB}.b set code = '1' where id = 4")
        spark.sql(f"delete from {DB}.c where name = 'y'")
        assert mv(spark_db, "v", agreed).materialize().action == "refreshed"
        assert_consistent(spark, spark_db)
        rows = sorted(
            (tuple(r) for r in spark.sql(f"select id, k, name from {DB}.v where id in (4, 5)").collect()), key=str
        )
        assert rows == [(4, 2, None), (4, None, None), (5, 2, None), (5, 2, None)]
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def test_a_nan_in_a_cached_change_set_passes_a_filter_it_is_greater_than(spark, spark_db):
    """Spark skips a cached batch by its columns' bounds, which leave NaN out (`catalog.
    CACHE_PRUNING`): la's staged change holds only NaN and 0.5, so every batch of it looks below
    0.7, but NaN > 0.7. Both views read the change cached: an aggregate over a UNION ALL (#50's
    stress mismatch) and a join."""
    spark.conf.unset(CACHE_PRUNING)  # Spark's default, as a session the engine has not refreshed in
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.la (k int, g string, x double) {CDF}")
        spark.sql(f"create table {DB}.lb (k int, g string, m decimal(10,2)) {CDF}")
        spark.sql(f"insert into {DB}.la values (1, 'a', 1.0), (NULL, NULL, 2.0)")
        spark.sql(f"insert into {DB}.lb values (1, NULL, 7.05), (2, 'a', 1.25)")
        views = {
            "u": f"WITH u AS (SELECT k, g, x FROM {DB}.la UNION ALL SELECT k, g, m FROM {DB}.lb) "
            "SELECT g, sum(x) AS s, max(k) AS hk, count(*) AS n FROM u WHERE x > 0.7 OR k IS NULL GROUP BY g",
            "j": f"SELECT a.k, a.x, b.m FROM {DB}.la a JOIN {DB}.lb b ON a.k = b.k WHERE a.x > 0.7",
        }
        for name, sql in views.items():
            assert mv(spark_db, name, sql).materialize().action == "built"
        spark.sql(f"insert into {DB}.la values (1, NULL, double('NaN')), (2, 'a', 0.5)")
        for name, sql in views.items():
            assert mv(spark_db, name, sql).materialize().action == "refreshed"
            assert_consistent(spark, spark_db, name)
        assert spark.sql(f"select n from {DB}.u where g is null").collect()[0][0] == 3
        assert spark.sql(f"select count(*) from {DB}.j where isnan(x)").collect()[0][0] == 1
        assert spark.conf.get(CACHE_PRUNING) == "false"
    finally:
        spark.sql(f"drop database if exists {DB} cascade")
