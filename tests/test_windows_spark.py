"""Window views on Spark (`classes.windows`): a refresh recomputes exactly the partitions its
change touched, before and after, and no other."""

from __future__ import annotations

import pytest

from dbt_ivm import render
from dbt_ivm.classes import changes, windows
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from tests.spark_sources import CDF

pytestmark = pytest.mark.spark
DB = "ivm_windows_test"
LATEST = (
    f"select key, val from (select key, val, row_number() over (partition by key order by eff desc, id) as rn "
    f"from {DB}.h) s where rn = 1"
)
ONE_PARTITION = f"select id, row_number() over (order by eff, id) as pos from {DB}.h"
RANKED = f"select id, key, val, row_number() over (partition by key order by eff, id) as pos from {DB}.h"
# windows over the groups: the touched partitions are the group key's values in the change rows
GROUPS = (
    f"select key, left(val, 2) as prefix, count(*) as n, rank() over (partition by key order by count(*) desc, "
    f"left(val, 2)) as r from {DB}.h group by key, left(val, 2) having count(*) > 0"
)


@pytest.fixture()
def history(spark):
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    spark.sql(f"create table {DB}.h (id int, key int, eff int, val string) {CDF}")
    # keys 0..9 and NULL, 20 rows each
    spark.sql(f"insert into {DB}.h select id, if(id % 11 = 10, null, id % 11), id, concat('v', id) from range(220)")
    try:
        yield
    finally:
        spark.sql(f"drop database if exists {DB} cascade")


def _version(spark) -> int:
    return int(spark.sql(f"describe history {DB}.h limit 1").collect()[0]["version"])


def _mv(db, name, sql, log):
    return Maintainer(db, TableName(DB, name), sql, log=log, refresh_policy="incremental")


def test_a_refresh_recomputes_exactly_the_partitions_its_change_touched(spark, spark_db, history):
    """The partitions a change touches, before and after, are recomputed, and no other; a
    keep-the-first recomputes only those whose kept row the change removes, and settles the
    others by their kept row and the added rows (`windows.first_parts`)."""
    lines: list[str] = []
    for name, sql in (("latest", LATEST), ("whole", ONE_PARTITION), ("ranked", RANKED), ("groups", GROUPS)):
        _mv(spark_db, name, sql, lines.append).materialize()
    before = _version(spark)
    spark.sql(f"update {DB}.h set val = 'changed' where id = 12")  # key 1
    spark.sql(f"update {DB}.h set key = 3 where id = 13")  # moves from key 2 to key 3
    spark.sql(f"delete from {DB}.h where key = 4")  # key 4 emptied
    spark.sql(f"insert into {DB}.h values (1000, null, 1000, 'new')")  # the NULL key
    spark.sql(f"update {DB}.h set val = val where key = 5")  # no change: touches nothing
    after = _version(spark)

    # the partitions the change touched, as the refresh computes them; for the keep-the-first,
    # which of them to recompute: key 4's latest row is deleted, the others keep theirs (the
    # NULL key's new row is later than its latest: settled by comparing the two)
    old, new = {f"{DB}.h": before}, {f"{DB}.h": after}
    ranked = _mv(spark_db, "ranked", RANKED, lines.append).inspect().plan
    latest = _mv(spark_db, "latest", LATEST, lines.append).inspect().plan
    assert ranked.sources[0].columns == latest.sources[0].columns  # one change set serves both
    spark.sql(render.cache_as("__ivm_test_chg", changes.change_select(latest.sources[0], before + 1, after)))
    try:
        touched = windows.touched_select(ranked, old, new, {0: "__ivm_test_chg"})
        assert touched is not None
        keys = {r[0] for r in spark.sql(render.sql(touched)).collect()}
        first = windows.first_changes(latest, old, new, {0: "__ivm_test_chg"})
        assert first is not None
        parts = windows.first_parts(latest, first, TableName(DB, "latest__ivm"))
        flags = {r[0]: r[1] for r in spark.sql(render.sql(parts)).collect()}
    finally:
        spark.sql(render.release("__ivm_test_chg"))
    assert keys == {1, 2, 3, 4, None}
    assert flags == {1: 0, 2: 0, 3: 0, 4: 1, None: 0}

    lines.clear()
    outcome = _mv(spark_db, "ranked", RANKED, lines.append).materialize()
    assert f"fast_mv {DB}.ranked: 5 partitions recomputed" in lines
    assert outcome.path == "merge"
    _mv(spark_db, "groups", GROUPS, lines.append).materialize()
    assert f"fast_mv {DB}.groups: 5 partitions recomputed" in lines
    outcome = _mv(spark_db, "latest", LATEST, lines.append).materialize()
    assert f"fast_mv {DB}.latest: 1 partition recomputed, 4 settled by their kept rows" in lines
    assert outcome.path == "merge"
    whole = _mv(spark_db, "whole", ONE_PARTITION, lines.append)
    whole.materialize()
    assert f"fast_mv {DB}.whole: the one partition recomputed" in lines
    for name in ("latest", "whole", "ranked", "groups"):
        assert spark.sql(consistency_sql(spark_db, TableName(DB, name))).count() == 0

    # a keep-the-first whose change removes no kept row reads no source row for its partitions
    spark.sql(f"delete from {DB}.h where id = 14")  # an old row of key 3
    spark.sql(f"insert into {DB}.h values (2000, 5, 2000, 'later')")  # key 5's new latest
    lines.clear()
    _mv(spark_db, "latest", LATEST, lines.append).materialize()
    assert f"fast_mv {DB}.latest: 0 partitions recomputed, 2 settled by their kept rows" in lines
    assert spark.sql(consistency_sql(spark_db, TableName(DB, "latest"))).count() == 0
    assert spark.sql(f"select val from {DB}.latest where key = 5").collect()[0][0] == "later"

    # a change that nets to nothing touches no partition: nothing is recomputed
    spark.sql(f"update {DB}.h set val = val where key = 6")
    lines.clear()
    outcome = _mv(spark_db, "latest", LATEST, lines.append).materialize()
    assert f"fast_mv {DB}.latest: no partition touched" in lines
    assert outcome.action == "no changes"
