"""The engine on Spark, without dbt: plans that touch only what the change needs, and bad
state that fails loudly instead of producing a wrong view. A view class's own tests are in
`test_<class>_spark.py` (aggregates, set operations, windows, semi-joins, calculated)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from benchmarks.run import CountingDatabase, execution_metrics, next_execution, unscripted
from dbt_ivm import layout, render
from dbt_ivm.catalog import CACHE_PRUNING, read_watermark, table_exists
from dbt_ivm.classes import changes, flips, identities, joins, terms
from dbt_ivm.commit import commit_metadata
from dbt_ivm.errors import ConfigError, SourceError, StateError, UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Action, Maintainer, consistency_sql, explain_view
from tests.engine_views import DB, JOIN, assert_consistent, last_commit, mv, refreshed
from tests.spark_sources import CDF, session_settings

pytestmark = pytest.mark.spark


def merge_files(spark, since):
    """The target files of the first MERGE Spark ran after execution `since`, before and after
    Delta's data skipping (its SQL metrics: the commit's history does not record them)."""
    files: dict[int, dict[str, int]] = {}
    for execution, _, name, value in execution_metrics(spark, since):
        if name.startswith("number of target files ") and "skipping" in name:
            files.setdefault(execution, {})[name.removeprefix("number of target files ")] = int(value)
    assert files, "no MERGE ran"
    return files[min(files)]


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
    # a row lost by hand is a commit fast_mv did not write: `test_guards` (its history tells);
    # here the damage is in commits that carry a watermark (as a bug of the engine's would): the MERGE refuses it
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
    built = spark.sql(f"DESCRIBE DETAIL {DB}.ev__ivm").collect()[0]["numFiles"]
    assert built >= 10  # 12 or 13: each sorted partition of the write ends in a smaller file
    assert "storage: sorted by (at) at its last build" in explain_view(spark_db, TableName(DB, "ev"))
    assert spark.conf.get(layout.MAX_RECORDS_CONF) == "0"  # the session's own settings are back
    assert spark.conf.get(layout.SORT_AGGREGATE_CONF) == "false"
    assert spark.conf.get(layout.EXCLUDED_RULES_CONF, None) is None
    # id 5 and 102: NULL timestamps, all in the first file; id 2999: the newest row, past its
    # file's maximum in milliseconds. Single rows: where the range partitioner cuts the build's
    # two partitions is sampled, so a run of neighbouring rows may straddle two files.
    spark.sql(f"update {DB}.e set v = v + 1 where id = 2999 or id = 5")
    spark.sql(f"delete from {DB}.e where id = 102")
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
    assert merge_files(spark, since) == {"before skipping": built, "after skipping": 2}
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
    # o's change is of a column the view does not read (`amt`): it nets to nothing, and its term
    # reads none of kc's files while kc's own change (a renamed customer) is refreshed. Without
    # adaptive execution too (a cluster may turn it off), which otherwise skips the read of an
    # empty change set's join only once the cached change set turns out empty
    spark.sql(f"update {DB}.o set amt = amt + 1 where id in (9001, 9002)")
    spark.sql(f"update {DB}.kc set name = 'renamed' where cid = 2990")
    since = next_execution(spark)
    m = mv(spark_db, "vk", sql)
    with session_settings(spark, {"spark.sql.adaptive.enabled": "false"}):
        assert m.materialize().action == "refreshed"
    assert "`cid` BETWEEN NULL AND NULL" in "\n".join(m.statements)
    read = [
        (node, int(value))
        for _, node, metric, value in execution_metrics(spark, since)
        if node.startswith("Scan parquet") and node.endswith(".kc") and metric == "number of files read"
    ]
    assert sum(files for _, files in read) == 0, read
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


def test_appends_under_a_unique_key_are_one_insert_straight_from_the_feeds(spark, spark_db, sources):
    """Only appends since the last refresh: nothing staged, netted or probed, one INSERT. (A key
    that is not unique fails the refresh: `TestFastMvAppendPath`, `test_keys_and_tolerance`.)"""
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
    assert stored_reads([s for sql in m.statements for s in unscripted(sql)]) == []  # no probe of the stored rows
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
        (
            f"select distinct id, rank() over (order by id) r from {DB}.o group by id, cust",
            UnsupportedView,
            "DISTINCT and GROUP BY",
        ),
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


def test_a_parenthesized_on_counts_matches_by_every_condition_that_reads_both_sides(spark, spark_db):
    """`(s.k = r.k AND s.w <> r.v)`: the counted compensation counts s's matches by key alone only
    where no other condition reads both sides (`outer_terms.counted_on`), parentheses or not. It
    used to take the grouped conjunct for its equality: (1, 'a') matched no s row, a new s row
    (1, 'b') matches it, and counted by k the old (1, 'a') made it a second match, so the padded
    row stayed beside the match."""
    spark.sql(f"create database if not exists {DB}")
    for t in ("r", "s"):
        spark.sql(f"drop table if exists {DB}.{t}")
    spark.sql(f"create table {DB}.r (k int, v string) {CDF}")
    spark.sql(f"create table {DB}.s (k int, w string) {CDF}")
    spark.sql(f"insert into {DB}.r values (1, 'a'), (2, 'b')")
    spark.sql(f"insert into {DB}.s values (1, 'a'), (2, 'c')")
    sql = f"select r.k, r.v, s.w from {DB}.r r left join {DB}.s s on (s.k = r.k and s.w <> r.v)"
    mv(spark_db, "grouped", sql).materialize()
    for change in ("insert into {db}.s values (1, 'b'), (1, 'a')", "delete from {db}.s where w = 'b'"):
        spark.sql(change.format(db=DB))
        assert mv(spark_db, "grouped", sql).materialize().action == "refreshed"
        assert_consistent(spark, spark_db, "grouped")
    spark.sql(f"drop view if exists {DB}.grouped")
    for t in ("grouped__ivm", "r", "s"):
        spark.sql(f"drop table if exists {DB}.{t}")


def test_a_key_that_is_a_condition_is_compared_whole(spark, spark_db):
    """A window's PARTITION BY `NOT flag` and a GROUP BY `flag OR other`: the refresh compares the
    whole key with the touched ones (`Verbatim.Generator` parenthesizes it). Written bare, the
    partitions' semi-join read `NOT (flag <=> p)` and recomputed the NULL partition's row beside
    its stored copy; the group recompute read `(g <=> flag) OR other`, dropped the row (FALSE,
    NULL, 3) from group NULL and took 5 for its minimum."""
    spark.sql(f"create database if not exists {DB}")
    spark.sql(f"drop table if exists {DB}.a")
    spark.sql(f"create table {DB}.a (k int, flag boolean, other boolean, x int) {CDF}")
    spark.sql(
        f"insert into {DB}.a values (1, null, null, 5), (2, true, null, 7), (3, false, null, 1), (4, false, null, 3)"
    )
    views = {
        "by_not": f"select k, row_number() over (partition by not flag order by k) as rn from {DB}.a",
        "by_or": f"select flag or other as grp, min(x) as lo, count(*) as n from {DB}.a group by flag or other",
    }
    for name, sql in views.items():
        mv(spark_db, name, sql).materialize()
    for change in ("insert into {db}.a values (5, true, null, 9)", "delete from {db}.a where x = 1"):
        spark.sql(change.format(db=DB))
        for name, sql in views.items():
            assert mv(spark_db, name, sql).materialize().action == "refreshed", name
            assert_consistent(spark, spark_db, name)
    for name in views:
        spark.sql(f"drop view if exists {DB}.{name}")
        spark.sql(f"drop table if exists {DB}.{name}__ivm")
    spark.sql(f"drop table if exists {DB}.a")


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
