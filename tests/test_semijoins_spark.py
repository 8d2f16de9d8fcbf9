"""Semi-join views on Spark (`classes.semijoins`): a refresh recomputes exactly the keys its change
touched, on both sides of an EXISTS and a NOT IN, and every key when a NOT IN's subquery gains a
NULL."""

from __future__ import annotations

import pytest

from dbt_ivm import render
from dbt_ivm.classes import changes, semijoins
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from tests.spark_sources import CDF

pytestmark = pytest.mark.spark
DB = "ivm_semijoins_test"
EXISTS = f"select r.id, r.v from {DB}.r r where exists (select 1 from {DB}.s s where s.k = r.k and s.w <> 'x')"
NOT_IN = f"select id, v from {DB}.r where k not in (select k from {DB}.s where w <> 'x')"


@pytest.fixture()
def sources(spark):
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    spark.sql(f"create table {DB}.r (id int, k int, v string) {CDF}")
    spark.sql(f"create table {DB}.s (k int, w string) {CDF}")
    # keys 0..9 and NULL, 20 rows each; the subquery holds keys 0, 1, 2, 6, 7, 8 (twice)
    spark.sql(f"insert into {DB}.r select id, if(id % 11 = 10, null, id % 11), concat('v', id) from range(220)")
    spark.sql(f"insert into {DB}.s select k, 'a' from (select explode(array(0, 1, 2, 6, 7, 8, 8)) as k)")
    try:
        yield
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def _versions(spark) -> dict[str, int]:
    return {f"{DB}.{t}": int(spark.sql(f"describe history {DB}.{t} limit 1").collect()[0]["version"]) for t in "rs"}


def _mv(db, name, sql, log):
    return Maintainer(db, TableName(DB, name), sql, log=log, refresh_policy="incremental")


def _touched(spark, spark_db, sql, old, new) -> set:
    """The keys the refresh of `sql` would recompute, `everything` as the key 'all'."""
    plan = _mv(spark_db, "probe", sql, print).inspect().plan
    staged = {}
    for s in plan.sources:
        if old[s.table.key] != new[s.table.key]:
            staged[s.index] = f"__ivm_test_chg_{s.index}"
            select = changes.change_select(s, old[s.table.key] + 1, new[s.table.key])
            spark.sql(render.cache_as(staged[s.index], select))
    try:
        touched = semijoins.touched_select(plan, old, new, staged)
        assert touched is not None
        rows = spark.sql(render.sql(touched)).collect()
    finally:
        for name in staged.values():
            spark.sql(render.release(name))
    return {"all" if r["__ivm_all"] else r["__ivm_p_0"] for r in rows}


def test_a_refresh_recomputes_exactly_the_keys_its_change_touched(spark, spark_db, sources):
    lines: list[str] = []
    for name, sql in (("present", EXISTS), ("absent", NOT_IN)):
        _mv(spark_db, name, sql, lines.append).materialize()
    before = _versions(spark)
    spark.sql(f"update {DB}.r set v = 'changed' where id = 12")  # key 1
    spark.sql(f"update {DB}.r set k = 3 where id = 13")  # moves from key 2 to key 3
    spark.sql(f"insert into {DB}.s values (4, 'a'), (5, 'x')")  # key 4; key 5 fails the subquery's WHERE
    spark.sql(f"delete from {DB}.s where k = 7")  # key 7
    spark.sql(f"update {DB}.s set w = w where k = 6")  # no change: touches nothing
    after = _versions(spark)

    assert _touched(spark, spark_db, EXISTS, before, after) == {1, 2, 3, 4, 7}
    assert _touched(spark, spark_db, NOT_IN, before, after) == {1, 2, 3, 4, 7, None}  # NULL: an empty set keeps it
    lines.clear()
    assert _mv(spark_db, "present", EXISTS, lines.append).materialize().path == "merge"
    assert _mv(spark_db, "absent", NOT_IN, lines.append).materialize().path == "merge"
    assert f"fast_mv {DB}.present: 5 keys recomputed" in lines
    assert f"fast_mv {DB}.absent: 6 keys recomputed" in lines

    # a NULL in the subquery's keys: no row matches it under EXISTS, and every NOT IN test is NULL
    before = after
    spark.sql(f"insert into {DB}.s values (null, 'a')")
    after = _versions(spark)
    assert _touched(spark, spark_db, EXISTS, before, after) == set()
    assert "all" in _touched(spark, spark_db, NOT_IN, before, after)
    lines.clear()
    assert _mv(spark_db, "present", EXISTS, lines.append).materialize().action == "no changes"
    assert f"fast_mv {DB}.present: no key touched" in lines
    _mv(spark_db, "absent", NOT_IN, lines.append).materialize()
    assert f"fast_mv {DB}.absent: the whole view recomputed" in lines
    assert spark.sql(f"select count(*) from {DB}.absent").collect()[0][0] == 0
    for name in ("present", "absent"):
        assert spark.sql(consistency_sql(spark_db, TableName(DB, name))).count() == 0
