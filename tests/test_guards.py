"""A change set is applied exactly once, whatever runs at the same time; a broken declaration
or a changed session is loud. Each race is forced through `Maintainer.before_commit`, the hook
between the read of the stored state and the one write."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from dbt_ivm.errors import StateError
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from tests.spark_sources import CDF, orders_and_customers

pytestmark = pytest.mark.spark
DB = "ivm_guard_test"
JOIN = f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid"
LOST = "another run of .* committed first"


@pytest.fixture()
def sources(spark):
    with orders_and_customers(spark, DB, orders=200, customers=20):
        yield


def mv(db, sql: str = JOIN, unique_key=None, hook: Callable[[], None] | None = None) -> Maintainer:
    m = Maintainer(db, TableName(DB, "v"), sql, unique_key=unique_key, refresh_policy="incremental")
    if hook is not None:

        def once() -> None:
            m.before_commit = lambda: None
            hook()

        m.before_commit = once
    return m


def differences(spark, db) -> int:
    return spark.sql(consistency_sql(db, TableName(DB, "v"))).count()


def stored_rows(spark) -> int:
    return spark.sql(f"select sum(__ivm_count) from {DB}.v__ivm").collect()[0][0] or 0


# Each change reaches a different refresh path of the interrupted run (a MERGE's: the OPTIMIZE
# and full-refresh races below).
PATHS = {
    "insert": f"insert into {DB}.o values (1000, 1, 9.5), (1001, 2, 8.5)",
    "net zero": f"update {DB}.o set amt = amt where id < 10",  # pre and post images cancel
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_refresh_that_lost_the_race_to_another_refresh_writes_nothing(spark, spark_db, sources, path):
    mv(spark_db).materialize()
    spark.sql(PATHS[path])

    def other_refresh() -> None:  # more changes, consumed by another run before this one writes
        spark.sql(f"delete from {DB}.o where id % 7 = 1")
        assert mv(spark_db).materialize().action == "refreshed"

    with pytest.raises(StateError, match=LOST):
        mv(spark_db, hook=other_refresh).materialize()
    assert differences(spark, spark_db) == 0
    assert mv(spark_db).materialize().action == "no changes"  # nothing applied twice, nothing lost
    assert differences(spark, spark_db) == 0


def test_the_append_path_loses_the_race_too(spark, spark_db, sources):
    key = ("id",)
    mv(spark_db, unique_key=key).materialize()
    spark.sql(f"insert into {DB}.o values (1000, 1, 9.5)")

    def other_refresh() -> None:
        assert mv(spark_db, unique_key=key).materialize().path == "append"

    m = mv(spark_db, unique_key=key, hook=other_refresh)
    with pytest.raises(StateError, match=LOST):
        m.materialize()
    assert any(s.startswith("INSERT") for s in m.statements)
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 201


def test_an_optimize_between_two_refreshes_reads_does_not_let_both_apply(spark, spark_db, sources):
    """The token is the read watermark's, not the table's newest version + 1: a commit without a
    watermark (OPTIMIZE) between the two reads used to give them different tokens."""
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = -amt where id % 10 = 3")
    second = mv(spark_db)

    def optimize_then_second_refresh() -> None:
        spark.sql(f"optimize {DB}.v__ivm")
        second.materialize()

    with pytest.raises(StateError, match=LOST):
        mv(spark_db, hook=optimize_then_second_refresh).materialize()
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 200


def test_a_full_refresh_between_a_refresh_read_and_its_write(spark, spark_db, sources):
    """The old change set must not land on the rebuilt table, nor its older watermark win."""
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = amt * 2 where id % 10 = 3")

    def rebuild() -> None:
        spark.sql(f"insert into {DB}.o values (1000, 1, 9.5)")
        assert mv(spark_db).materialize(full_refresh=True).action == "built"

    with pytest.raises(StateError, match=LOST):
        mv(spark_db, hook=rebuild).materialize()
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 201
    assert mv(spark_db).materialize().action == "no changes"


def test_a_refresh_between_a_full_refresh_read_and_its_write_does_not_hide_the_rebuild(spark, spark_db, sources):
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = amt * 2 where id % 10 = 3")

    def refresh() -> None:
        assert mv(spark_db).materialize().action == "refreshed"

    assert mv(spark_db, hook=refresh).materialize(full_refresh=True).action == "built"
    assert differences(spark, spark_db) == 0
    spark.sql(f"delete from {DB}.o where id < 50")
    assert mv(spark_db).materialize().action == "refreshed"
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 150


def concurrent_rounds(spark, spark_db, rounds: int, seed: int = 7) -> dict[str, int]:
    """Two engine threads on one session refresh the same view while the sources change; every
    third round one of them is a --full-refresh. Every round ends consistent, or with a clear
    error that the next run repairs."""
    import random

    rng = random.Random(seed)
    outcomes = {"refreshed": 0, "no changes": 0, "built": 0, "lost the race": 0}
    errors: list[BaseException] = []  # the runs' unexpected errors: every round asserts there are none
    mv(spark_db).materialize()
    for n in range(rounds):
        spark.sql(f"update {DB}.o set amt = amt + 1 where id % 13 = {rng.randrange(13)}")
        spark.sql(f"insert into {DB}.o values ({1000 + n}, {rng.randrange(20)}, {rng.random():.3f})")

        def run(full: bool) -> None:
            try:
                outcomes[mv(spark_db).materialize(full_refresh=full).action] += 1
            except StateError as e:
                assert "committed first" in str(e), e
                outcomes["lost the race"] += 1
            except BaseException as e:  # reported below
                errors.append(e)

        def writer() -> None:
            spark.sql(f"delete from {DB}.o where id % 17 = {rng.randrange(17)} and id > 100")

        threads = [
            threading.Thread(target=run, args=(False,)),
            threading.Thread(target=run, args=(n % 3 == 1,)),
            threading.Thread(target=writer),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert differences(spark, spark_db) == 0, f"round {n}"
    mv(spark_db).materialize()
    assert differences(spark, spark_db) == 0
    return outcomes


def test_two_refreshes_at_once_with_writers(spark, spark_db, sources):
    outcomes = concurrent_rounds(spark, spark_db, rounds=2)  # two refreshes, then a refresh and a rebuild
    assert sum(outcomes.values()) == 4


@pytest.mark.stress
def test_two_refreshes_at_once_with_writers_stress(spark, spark_db, sources, request):
    rounds = request.config.getoption("--rounds") or 20
    outcomes = concurrent_rounds(spark, spark_db, rounds=rounds, seed=request.config.getoption("--seed") or 7)
    print(f"\n{rounds} rounds of two runs at once: {outcomes}")


def test_a_unique_key_that_the_data_breaks_across_refreshes_is_loud_and_repaired(spark, spark_db, sources):
    """(1, 10) re-delivered is appended without a probe (a second stored copy); a later delete and
    re-insert of id 1 nets to -1, which the MERGE applied to both copies: the row was lost."""
    sql = f"select k.id, k.val from {DB}.k k"
    spark.sql(f"create table {DB}.k (id int, val int) {CDF}")
    spark.sql(f"insert into {DB}.k values (1, 10), (2, 20)")
    key = ("id",)
    mv(spark_db, sql, unique_key=key).materialize()
    spark.sql(f"insert into {DB}.k values (1, 10)")
    assert mv(spark_db, sql, unique_key=key).materialize().path == "append"
    assert differences(spark, spark_db) == 0  # two copies, as the model has
    spark.sql(f"delete from {DB}.k where id = 1")
    spark.sql(f"insert into {DB}.k values (1, 10)")
    with pytest.raises(StateError, match=r"unique_key \(id\) is not unique .* rebuilt"):
        mv(spark_db, sql, unique_key=key).materialize()
    assert differences(spark, spark_db) == 0
    assert spark.sql(f"select * from {DB}.v where id = 1").count() == 1
    assert mv(spark_db, sql, unique_key=key).materialize().action == "no changes"


def test_a_session_in_another_time_zone_rebuilds(spark, spark_db, sources):
    sql = f"select t.id, cast(t.ts as date) as d, date_format(t.ts, 'HH') as h from {DB}.t t"
    spark.sql(f"create table {DB}.t (id int, ts timestamp) {CDF}")
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.sql(f"insert into {DB}.t values (1, timestamp'2024-05-17 20:00:00'), (2, timestamp'2024-05-17 10:00:00')")
        assert mv(spark_db, sql).materialize().action == "built"
        assert differences(spark, spark_db) == 0
        spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
        spark.sql(f"insert into {DB}.t values (3, timestamp'2024-05-18 23:30:00')")
        logs: list[str] = []
        m = Maintainer(spark_db, TableName(DB, "v"), sql, log=logs.append)  # auto: rebuilds
        assert m.materialize().action == "built"
        assert any("spark.sql.session.timeZone 'UTC' → 'Asia/Tokyo'" in line for line in logs), logs
        assert differences(spark, spark_db) == 0  # the model's SQL, in Tokyo
        days = {r["id"]: str(r["d"]) for r in spark.sql(f"select * from {DB}.v").collect()}
        assert days[1] == "2024-05-18"  # 20:00 UTC is the next morning in Tokyo
        assert mv(spark_db, sql).materialize().action == "no changes"
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def storage_version(spark) -> int:
    return spark.sql(f"describe history {DB}.v__ivm limit 1").collect()[0]["version"]


def runs(spark_db, policy: str) -> tuple[Maintainer, list[str]]:
    logs: list[str] = []
    return Maintainer(spark_db, TableName(DB, "v"), JOIN, log=logs.append, refresh_policy=policy), logs


def test_commits_on_the_storage_that_fast_mv_did_not_write_are_judged(spark, spark_db, sources):
    """A commit after the watermark's that may have changed the stored rows (a RESTORE, a DELETE
    by hand) fails an incremental refresh and rebuilds under auto; one that keeps them (an
    OPTIMIZE, a RESTORE back to the watermark's own version) lets the refresh proceed."""
    mv(spark_db).materialize()
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 10 = 3")
    assert mv(spark_db).materialize().action == "refreshed"
    restore_to = storage_version(spark)
    spark.sql(f"delete from {DB}.o where id < 30")
    assert mv(spark_db).materialize().action == "refreshed"

    # OPTIMIZE keeps the rows: the refresh proceeds
    spark.sql(f"optimize {DB}.v__ivm")
    assert spark.sql(f"describe history {DB}.v__ivm limit 1").collect()[0]["operation"] == "OPTIMIZE"
    spark.sql(f"insert into {DB}.o values (1000, 1, 9.5)")
    assert mv(spark_db).materialize().action == "refreshed"
    assert differences(spark, spark_db) == 0

    # a RESTORE brings back rows the refreshes since had changed: the watermark no longer describes them
    spark.sql(f"restore table {DB}.v__ivm to version as of {restore_to}")
    spark.sql(f"insert into {DB}.o values (1001, 2, 8.5)")
    version = storage_version(spark)
    with pytest.raises(StateError, match=rf"RESTORE to version {restore_to} at v{version}.*--full-refresh"):
        mv(spark_db).materialize()
    assert storage_version(spark) == version  # nothing written
    m, logs = runs(spark_db, "auto")
    assert m.materialize().action == "built"
    assert any(f"RESTORE to version {restore_to}" in line for line in logs), logs
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 172

    # a DELETE by hand, then a RESTORE to the watermark's own version: the rows are its rows again
    good = storage_version(spark)
    spark.sql(f"delete from {DB}.v__ivm where id < 50")
    spark.sql(f"update {DB}.o set amt = amt * 2 where id % 10 = 4")
    with pytest.raises(StateError, match=rf"DELETE at v{good + 1}.*--full-refresh"):
        mv(spark_db).materialize()
    m, logs = runs(spark_db, "auto")
    assert m.materialize().action == "built" and any("DELETE at" in line for line in logs), logs
    assert differences(spark, spark_db) == 0
    good = storage_version(spark)
    spark.sql(f"delete from {DB}.v__ivm where id < 50")
    spark.sql(f"restore table {DB}.v__ivm to version as of {good}")
    spark.sql(f"delete from {DB}.o where id = 1000")
    assert mv(spark_db).materialize().action == "refreshed"
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 171


def test_a_source_dropped_and_created_again_rebuilds_under_auto(spark, spark_db, sources):
    import time

    mv(spark_db).materialize()
    time.sleep(1.1)  # the catalog's creation time has second resolution
    spark.sql(f"drop table {DB}.c")
    spark.sql(f"create table {DB}.c (cid int, name string) {CDF}")
    spark.sql(f"insert into {DB}.c select id, concat('m', id) from range(10)")
    with pytest.raises(StateError, match=r"dropped and created again.*--full-refresh"):
        mv(spark_db).materialize()
    m, logs = runs(spark_db, "auto")
    assert m.materialize().action == "built" and any("dropped and created again" in x for x in logs), logs
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 100


def test_a_source_replaced_by_create_or_replace_is_rebuilt_under_auto_and_read_whole_under_incremental(
    spark, spark_db, sources
):
    """dbt's `table` materialization upstream of a fast_mv replaces its table on every run."""
    replace = (
        f"create or replace table {DB}.c {CDF} as select cast(id as int) as cid, concat('{{}}', id) as name "
        "from range(15)"
    )
    mv(spark_db).materialize()
    spark.sql(replace.format("r"))
    m, logs = runs(spark_db, "auto")
    assert m.materialize().action == "built"
    assert any("a source was replaced" in line and "CREATE OR REPLACE" in line for line in logs), logs
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 150

    spark.sql(replace.format("s"))
    spark.sql(f"update {DB}.o set amt = amt + 1 where id % 10 = 3")
    m, logs = runs(spark_db, "incremental")
    assert m.materialize().action == "refreshed"
    assert any("was replaced" in line and "whole change feed" in line for line in logs), logs
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 150


def test_a_change_history_with_a_gap_rebuilds_under_auto_and_fails_under_incremental(spark, spark_db, sources):
    mv(spark_db).materialize()
    spark.sql(f"alter table {DB}.o set tblproperties (delta.enableChangeDataFeed = false)")
    spark.sql(f"delete from {DB}.o where id < 20")
    spark.sql(f"alter table {DB}.o set tblproperties (delta.enableChangeDataFeed = true)")
    spark.sql(f"insert into {DB}.o values (1000, 1, 9.5)")
    version = storage_version(spark)
    with pytest.raises(StateError, match=r"no longer readable.*--full-refresh"):
        mv(spark_db).materialize()
    assert storage_version(spark) == version  # nothing written
    m, logs = runs(spark_db, "auto")
    assert m.materialize().action == "built"
    assert any("no longer readable" in line for line in logs), logs
    assert differences(spark, spark_db) == 0 and stored_rows(spark) == 181
