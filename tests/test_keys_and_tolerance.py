"""Keys the engine trusts, judged as Spark and dbt judge them, and the consistency test's
tolerance: join keys Spark casts before it compares them, unique keys that an outer join pads
with NULL, and a float that drifted though it is small."""

from __future__ import annotations

import pytest

from dbt_ivm import consistency
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from tests.spark_sources import CDF

pytestmark = pytest.mark.spark
DB = "ivm_keys_test"


@pytest.fixture()
def db(spark):
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    yield
    spark.sql(f"drop database if exists {DB} cascade")


def mv(db, name, sql, unique_key=None, log=lambda _: None):
    return Maintainer(db, TableName(DB, name), sql, log=log, unique_key=unique_key, refresh_policy="incremental")


def differences(spark, db, name):
    return spark.sql(consistency_sql(db, TableName(DB, name))).collect()


def test_a_join_key_spark_casts_takes_no_unique_key_flip(spark, spark_db, db):
    """`a.id = p.code` with `code` a STRING compares numbers: '1' and '01' are distinct stored
    values but both match account 1. The flip judged uniqueness on the stored value, subtracted
    a padded row that was never stored, and counted 0 where the model counts 2."""
    spark.sql(f"create table {DB}.a (id int, name string) {CDF}")
    spark.sql(f"create table {DB}.p (code string, v int) {CDF}")
    spark.sql(f"insert into {DB}.a values (1, 'x'), (2, 'y'), (3, 'z')")
    spark.sql(f"insert into {DB}.p values ('1', 10), ('3', 30)")
    views = {
        "rows": f"select a.id, a.name, p.v from {DB}.a a left join {DB}.p p on a.id = p.code",
        "counts": f"select a.id, count(*) as n, count(p.v) as m from {DB}.a a left join {DB}.p p "
        "on a.id = p.code group by a.id",
    }
    said: list[str] = []
    for name, sql in views.items():
        mv(spark_db, name, sql).materialize()
    for change in (
        "insert into {db}.p values ('01', 20)",  # a second match of account 1
        "delete from {db}.p where code = '1'",  # account 1 keeps '01'
        "insert into {db}.p values ('02', 40), ('003', 50)",  # 2 gets its first match; 3 a second
        "delete from {db}.p where code in ('01', '3')",
    ):
        spark.sql(change.format(db=DB))
        for name, sql in views.items():
            said.clear()
            assert mv(spark_db, name, sql, log=said.append).materialize().action == "refreshed"
            assert differences(spark, spark_db, name) == [], (change, name)
            assert not any("padded rows flipped" in line for line in said), (name, said)
    counts = {r["id"]: (r["n"], r["m"]) for r in spark.sql(f"select * from {DB}.counts").collect()}
    assert counts == {1: (1, 0), 2: (1, 1), 3: (1, 1)}


def test_a_unique_key_holds_only_rows_whose_key_is_a_value(spark, spark_db, db):
    """As dbt's `unique` test: rows whose key is NULL share no key. Two customers without orders
    (`oid` padded with NULL) break no `unique_key='oid'`; nor do two orders without a note, on
    the append path, which cannot vouch that such a row is new and hands it to the general path."""
    spark.sql(f"create table {DB}.c (cid int, name string) {CDF}")
    spark.sql(f"create table {DB}.o (oid int, cid int, note string) {CDF}")
    spark.sql(f"insert into {DB}.c values (1, 'a'), (2, 'b')")
    spark.sql(f"insert into {DB}.o values (10, 1, 'n10')")
    outer = f"select c.cid, c.name, o.oid from {DB}.c c left join {DB}.o o on o.cid = c.cid"
    inner = f"select o.oid, o.note, c.name from {DB}.o o join {DB}.c c on o.cid = c.cid"
    mv(spark_db, "outer_v", outer, unique_key="oid").materialize()
    mv(spark_db, "inner_v", inner, unique_key="note").materialize()

    spark.sql(f"insert into {DB}.c values (3, 'c'), (4, 'd')")  # two more padded rows, oid NULL
    assert mv(spark_db, "outer_v", outer, unique_key="oid").materialize().action == "refreshed"
    assert differences(spark, spark_db, "outer_v") == []

    # only appends: the INSERT from the feeds finds rows whose note is NULL, twice the same content
    spark.sql(f"insert into {DB}.o values (11, 1, null), (11, 1, null), (12, 2, null)")
    said: list[str] = []
    out = mv(spark_db, "inner_v", inner, unique_key="note", log=said.append).materialize()
    assert out.action == "refreshed" and out.path != "append", out  # probed: not a row stored before
    assert any("unique_key (note) is NULL" in line for line in said), said
    assert differences(spark, spark_db, "inner_v") == []
    spark.sql(f"insert into {DB}.o values (11, 1, null)")  # the third copy of a stored row
    mv(spark_db, "inner_v", inner, unique_key="note").materialize()
    spark.sql(f"delete from {DB}.o where oid = 11")  # every copy goes
    mv(spark_db, "inner_v", inner, unique_key="note").materialize()
    assert differences(spark, spark_db, "inner_v") == []
    mv(spark_db, "outer_v", outer, unique_key="oid").materialize()
    assert differences(spark, spark_db, "outer_v") == []
    for name, sql, key in (("outer_v", outer, "oid"), ("inner_v", inner, "note")):
        spark.sql(f"insert into {DB}.o values (20, 1, 'k'), (20, 1, 'k')")  # a value twice still breaks it
        with pytest.raises(Exception, match=rf"unique_key \({key}\) is not unique"):
            mv(spark_db, name, sql, unique_key=key).materialize()
        spark.sql(f"delete from {DB}.o where oid = 20")


def test_the_consistency_test_sees_a_drift_below_one(spark, spark_db, db):
    """The tolerance is relative to the values compared: last digits pass, 3e-10 read as 3.49e-10
    (16 % off) does not, however small."""
    spark.sql(f"create table {DB}.t (k int, x double) using delta")
    spark.sql(f"insert into {DB}.t values (1, 3.49e-10), (2, 0.1 + 0.2), (3, 0.0), (4, 1e-300), (5, 5e-324)")
    model = (
        "select 1 as k, 3e-10 as x union all select 2, 0.3d union all select 3, -0.0d "
        "union all select 4, 1e-300 * (1 + 1e-12) union all select 5, 5e-324"
    )
    query = consistency.consistency_sql(TableName(DB, "t"), model, {"k": "int", "x": "double"})
    assert [(r["k"], r["__ivm_diff"]) for r in spark.sql(query).collect()] == [
        (1, "differs beyond the float tolerance")
    ]
