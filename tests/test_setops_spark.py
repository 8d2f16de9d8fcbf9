"""Set operations on Spark (`classes.setops`, `classes.union_leaf`, `analyze.union_join`): signed
zeros kept apart, branches changed together, a join over a UNION ALL whose types Spark widens."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dbt_ivm.catalog import table_exists
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import TableName
from tests.engine_views import DB, assert_consistent, mv
from tests.spark_sources import CDF

pytestmark = pytest.mark.spark


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
        with pytest.raises(UnsupportedView, match="column k of the UNION ALL f, which the query compares, is string"):
            mv(spark_db, "bad", widened).materialize()
        assert not table_exists(spark_db, TableName(DB, "bad__ivm"))
        # the same join under an aggregate: the join over each branch is a leaf, checked the same way
        grouped = widened.replace("select f.id, c.name", "select c.name, count(*) as n") + " group by c.name"
        with pytest.raises(UnsupportedView, match="column k of the UNION ALL f, which the query compares, is string"):
            mv(spark_db, "bad", grouped).materialize()
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
