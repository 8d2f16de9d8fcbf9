"""Aggregate views on Spark (`classes.aggregate`): groups recomputed only where their extreme left,
appends that read no stored group, HAVING, the global aggregate, sums past their type."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dbt_ivm import quick
from dbt_ivm.catalog import describe_query
from dbt_ivm.classes.aggregate import state_types
from dbt_ivm.errors import StateError
from tests.engine_views import DB, assert_consistent, mv
from tests.spark_sources import CDF

pytestmark = pytest.mark.spark


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


def test_a_refresh_reads_its_state_s_types_from_the_storage_s_columns(spark, spark_db):
    """A refresh decides which sums it guards (overflow, NaN, Spark's rounding: `recompute_rules`)
    from the stored state's types, read from the storage's columns in the inspection's one DESCRIBE
    QUERY (`Inspection.storage_types`): for every numeric argument, over one source, a join and a
    UNION ALL, they are the types a DESCRIBE QUERY of `state_types` gives."""
    types = {"t": "tinyint", "i": "int", "b": "bigint", "f": "float", "d": "double"}
    types |= {"p": "decimal(10,2)", "q": "decimal(30,8)", "r": "decimal(38,10)"}
    row = "(1, 1, 1, 1, 1.5, 2.5, 1.25, 1.125, 1.0625), (2, -3, 40000, 9000000000, -0.5, 1e300, 99.99, 0.5, 7.5)"
    sums = ", ".join(f"sum(n.{c}) as s_{c}, avg(n.{c}) as a_{c}" for c in types)
    views = {
        "one": f"select g, {sums}, sum(p * q) as pq, max(d) as hi, stddev(i) as sd from {DB}.n n group by g",
        "joined": f"select k.name, {sums}, min(n.r) as lo from {DB}.n n join {DB}.k k on n.g = k.g group by k.name",
        "leaf": (
            f"select g, sum(i) as si, sum(r) as sr, avg(f) as af from (select g, i, r, f from {DB}.n "
            f"union all select g, i * 2, r, f from {DB}.n) u group by g"
        ),
    }
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    try:
        spark.sql(f"create table {DB}.n (g int, {', '.join(f'{c} {t}' for c, t in types.items())}) {CDF}")
        spark.sql(f"create table {DB}.k (g int, name string) {CDF}")
        spark.sql(f"insert into {DB}.n values {row}")
        spark.sql(f"insert into {DB}.k values (1, 'a'), (2, 'b')")
        for name, sql in views.items():
            mv(spark_db, name, sql).materialize()
        spark.sql(f"update {DB}.n set i = i + 1, r = r - 1 where g = 1")
        for name, sql in views.items():
            m = mv(spark_db, name, sql)
            i = m.inspect(quick.check(spark_db, m.model, m.change_feed, m.configuration))  # type: ignore[arg-type]
            described = describe_query(spark_db, state_types(i.plan))
            assert i.storage_types is not None and {a.value for a in i.plan.aggregates} <= set(described), name
            assert {c: i.storage_types.get(c) for c in described} == described, name
            spark_db.log.clear()
            assert m.materialize().action == "refreshed", name
            assert sum(s.startswith("DESCRIBE QUERY") for s in spark_db.log) == 1, (name, spark_db.log)
            assert_consistent(spark, spark_db, name)
    finally:
        spark.sql(f"drop database if exists {DB} cascade")
