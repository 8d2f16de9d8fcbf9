"""Window views (`analyze.windows`, `classes.windows`): what analysis accepts, the partition a
refresh recomputes, and what it refuses, by name."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze, render
from dbt_ivm.classes import rules_for, windows
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.explain import explain
from dbt_ivm.ir import Role, ViewClass
from dbt_ivm.verbatim import DIALECT
from tests.unit.views import BACKING, LATEST, RANKED, WINDOW_SCHEMA

H = "from db.h"
BY_KEY = "partition by key order by eff, id"


@pytest.mark.parametrize(
    "sql,partition,columns",
    [
        (f"select id, row_number() over ({BY_KEY}) as rn {H}", ["`h`.`key`"], ["id", "rn"]),
        (
            f"select id, rank() over (partition by key order by eff) as r, dense_rank() over (partition by key "
            f"order by eff) as d, percent_rank() over (partition by key order by eff) as p, cume_dist() over "
            f"(partition by key order by eff) as c, ntile(4) over ({BY_KEY}) as n {H}",
            ["`h`.`key`"],
            ["id", "r", "d", "p", "c", "n"],
        ),
        (
            f"select id, lag(val, 2, 'none') over ({BY_KEY}) as l, lead(eff) over ({BY_KEY}) as e, "
            f"first_value(val) ignore nulls over ({BY_KEY}) as f, nth_value(val, 2) over ({BY_KEY}) as n {H}",
            ["`h`.`key`"],
            ["id", "l", "e", "f", "n"],
        ),
        (
            f"select id, last_value(val, true) over (partition by key order by eff, id rows between unbounded "
            f"preceding and current row) as filled {H}",
            ["`h`.`key`"],
            ["id", "filled"],
        ),
        # the partition every window shares: a partition of it is a union of each window's
        (
            f"select id, rank() over (partition by key, val order by eff) as r, count(*) over (partition by val, "
            f"key) as n, sum(id) over (partition by key) as s {H}",
            ["`h`.`key`"],
            ["id", "r", "n", "s"],
        ),
        # no PARTITION BY shared: the whole view is one partition
        (
            f"select id, rank() over (partition by key order by eff) as r, sum(id) over () as total {H}",
            [],
            ["id", "r", "total"],
        ),
        (LATEST, ["`h`.`key`"], ["key", "val"]),
        (RANKED, ["`c`.`name`"], ["id", "name", "r", "s"]),
        # SCD-2 end dates and the current flag, as a CTE read by a projection
        (
            f"with v as (select key, eff, lead(eff) over ({BY_KEY}) as next_eff {H}) "
            "select key, eff, next_eff as end_eff, case when next_eff is null then true else false end as cur from v",
            ["`h`.`key`"],
            ["key", "eff", "end_eff", "cur"],
        ),
        # DISTINCT over the windows' rows: equal rows share a partition (its key is in the SELECT list)
        (
            f"select distinct key, min(eff) over (partition by key) as first_eff, "
            f"max(eff) over (partition by key) as last_eff {H}",
            ["`h`.`key`"],
            ["key", "first_eff", "last_eff"],
        ),
        ("select distinct key, rank() over (order by key) as r from db.h", [], ["key", "r"]),  # one partition
        # the partition's column qualified on one side only, or in a star
        (
            "select distinct h.key, min(eff) over (partition by key) as first_eff from db.h h",
            ["`h`.`key`"],
            ["key", "first_eff"],
        ),
        (
            "select distinct key, min(h.eff) over (partition by h.key) as first_eff from db.h h",
            ["`h`.`key`"],
            ["key", "first_eff"],
        ),
        (
            "select distinct h.*, count(*) over (partition by h.key) as n from db.h h",
            ["`h`.`key`"],
            ["id", "key", "eff", "val", "n"],
        ),
    ],
)
def test_accepted_window_views(sql, partition, columns):
    plan = analyze(sql, WINDOW_SCHEMA)
    assert plan.view_class is ViewClass.WINDOW
    assert plan.windows is not None
    assert [p.sql(dialect=DIALECT) for p in plan.windows.partition_by] == partition
    assert [o.name for o in plan.outputs] == columns
    keys = [h.name for h in plan.hidden if h.role is Role.PARTITION_KEY]
    assert keys == [f"__ivm_p_{i}" for i in range(len(partition))]
    assert analyze(plan.normalized_sql, WINDOW_SCHEMA).normalized_sql == plan.normalized_sql  # a fixpoint


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            "select distinct key, count(*) as n, rank() over (order by count(*)) as r from db.h group by key",
            "window functions together with DISTINCT and GROUP BY or aggregates",
        ),
        ("select key, sum(sum(id)) as s, rank() over (order by key) as r from db.h group by key", "nested aggregate"),
        (
            f"select distinct eff, min(eff) over (partition by key) as first_eff {H}",
            "DISTINCT over rows of several partitions (a PARTITION BY expression the windows share is not in",
        ),
        (f"select distinct on (key) key, rank() over ({BY_KEY}) as r {H}", "DISTINCT ON"),
        (  # another table's column of the same name
            "select distinct c.cid, count(*) over (partition by h.key) as n from db.h h join db.c c on h.key = c.cid",
            "DISTINCT over rows of several partitions",
        ),
        (
            "select distinct c.*, count(*) over (partition by h.key) as n from db.h h join db.c c on h.key = c.cid",
            "DISTINCT over rows of several partitions",
        ),
        (f"select id, first_value(val) over (partition by key) as f {H}", "without ORDER BY"),
        (f"select id, lag(val) over (partition by key) as f {H}", "without ORDER BY"),
        (f"select id, rank() over w as r {H} window w as (partition by key order by eff)", "a named window"),
        (f"select id {H} qualify row_number() over ({BY_KEY}) = 1", "QUALIFY"),
        (
            f"select key, max(rn) as n from (select key, row_number() over ({BY_KEY}) as rn {H}) s group by key",
            "GROUP BY in the query over window functions' rows",
        ),
        (
            f"select s.key from (select key, row_number() over ({BY_KEY}) as rn {H}) s join db.c c on s.key = c.cid",
            "a subquery or CTE with window functions",
        ),
        (f"select id, sum(id) over ({BY_KEY}) as __ivm_s {H}", "reserved prefix"),
    ],
)
def test_refused_window_views(sql, construct):
    with pytest.raises(UnsupportedView) as info:
        analyze(sql, WINDOW_SCHEMA)
    assert construct in str(info.value)
    assert info.value.hint


def test_explain_names_the_partition_or_the_whole_view():
    text = explain(LATEST, WINDOW_SCHEMA)
    assert "class: window" in text
    assert "recomputes the partitions (PARTITION BY `h`.`key`)" in text
    assert "__ivm_p_0: partition key of `h`.`key`" in text
    whole = explain(f"select id, row_number() over (order by eff, id) as pos {H}", WINDOW_SCHEMA)
    assert "recomputes the whole view" in whole and "one partition" in whole
    assert "partition by: `h`.`key`" in text
    assert "partition by: none shared by every window: the whole view is one partition" in whole
    assert "keep-the-first: only the partitions where a removed row has the kept row's ORDER BY values" in text
    assert "__ivm_o_0: ORDER BY value of the row a keep-the-first keeps of `h`.`eff`" in text
    grouped = explain(
        f"select key, count(*) as n, rank() over (partition by key order by val) as r {H} group by 1, val",
        WINDOW_SCHEMA,
    )
    assert "windows over the groups of GROUP BY `h`.`key`, `h`.`val`: a recomputed partition is aggregated" in grouped


def test_the_outer_query_reads_the_stored_rows():
    """`ref()` applies the query over the window's rows (`WHERE rn = 1`) to the stored rows; the
    storage keeps only the rows that WHERE keeps (one per key, not every version), computed after
    the windows: a refresh recomputes partitions whole from the sources, never from the storage."""
    plan = analyze(LATEST, WINDOW_SCHEMA)
    view = windows.view_select(plan, BACKING).sql(dialect=DIALECT)
    assert view.endswith("WHERE `s`.`rn` = 1")
    assert "FROM `db`.`v__ivm` LATERAL VIEW EXPLODE(SEQUENCE(1, `__ivm_count`))" in view
    build = windows.build_select(plan, {"db.h": 2}).sql(dialect=DIALECT)
    assert build.index("ROW_NUMBER()") < build.index("WHERE `s`.`rn` = 1")  # filtered after the window
    delta = windows.delta_select(plan, BACKING, {"db.h": 3}, "parts").sql(dialect=DIALECT)
    recomputed = delta[: delta.index("UNION ALL")]
    assert recomputed.index("LEFT SEMI JOIN") < recomputed.index("WHERE `s`.`rn` = 1")  # whole partitions first
    assert rules_for(plan) is windows.RULES


def test_a_partition_key_that_is_a_condition_is_compared_whole():
    """`PARTITION BY NOT flag` (or `a > 0 AND b > 0`): the touched partitions' semi-join compares
    the whole key, `(NOT o.flag) IS NOT DISTINCT FROM p`, not `NOT (o.flag IS NOT DISTINCT FROM p)`."""
    for key in ("not o.amt > 3", "o.amt > 3 and o.cust > 1", "o.amt > 3 or o.cust > 1"):
        plan = analyze(
            f"select o.id, row_number() over (partition by {key} order by o.id) as rn from db.o o", WINDOW_SCHEMA
        )
        delta = windows.delta_select(plan, BACKING, {"db.o": 3}, "parts").sql(dialect=DIALECT)
        assert "IS NOT DISTINCT FROM (" in delta or ") IS NOT DISTINCT FROM" in delta, delta


def test_distinct_windows_store_one_row_per_distinct_row_and_net_the_change_rows_undistinct():
    """SELECT DISTINCT with windows whose PARTITION BY key is in the SELECT list: the build and a
    recomputed partition apply DISTINCT (each stored row counted once), while the rows that find
    the touched partitions keep their multiplicities, so a change row and its cancelling copy net."""
    plan = analyze(
        f"select distinct key, min(eff) over (partition by key) as first_eff, max(id) over (partition by key) as n {H}",
        WINDOW_SCHEMA,
    )
    built = render.sql(windows.build_select(plan, {"db.h": 3}))
    assert "FROM (SELECT DISTINCT `h`.`key` AS `key`, MIN(`h`.`eff`) OVER (PARTITION BY `h`.`key`)" in built
    touched = render.sql(windows.touched_select(plan, {"db.h": 3}, {"db.h": 5}, {0: "chg0"}))
    assert touched.count("DISTINCT") == 1 and touched.startswith("SELECT DISTINCT `__ivm_p_0` FROM")
    assert "HAVING SUM(`__ivm_d`) <> 0" in touched


@pytest.mark.parametrize(
    "sql,first",
    [
        (LATEST, ["`h`.`eff` DESC", "`h`.`id`"]),
        (  # `1 = rn`, a CTE, NULLS FIRST
            "with d as (select key, val, row_number() over (partition by key order by eff desc nulls first) as rn "
            f"{H}) select key, val from d where 1 = rn",
            ["`h`.`eff` DESC NULLS FIRST"],
        ),
        # not a keep-the-first: the query keeps more than rn = 1, another window, RANK, no outer query
        (f"select key, val from (select key, val, row_number() over ({BY_KEY}) as rn {H}) s where rn <= 1", []),
        (f"select key from (select key, row_number() over ({BY_KEY}) as rn {H}) s where rn = 1 and key > 0", []),
        (f"select key from (select key, row_number() over ({BY_KEY}) as rn {H}) s where rn = 2", []),
        (
            f"select key from (select key, row_number() over ({BY_KEY}) as rn, lead(eff) over ({BY_KEY}) as n {H}) s "
            "where rn = 1",
            [],
        ),
        (f"select key from (select key, rank() over ({BY_KEY}) as rn {H}) s where rn = 1", []),
        # no PARTITION BY (one partition), an ORDER BY expression (its type may not be storable)
        (f"select key from (select key, row_number() over (order by eff, id) as rn {H}) s where rn = 1", []),
        (
            f"select key from (select key, row_number() over (partition by key order by eff - id) as rn {H}) s "
            "where rn = 1",
            [],
        ),
        (f"select id, row_number() over ({BY_KEY}) as rn {H}", []),
    ],
)
def test_a_keep_the_first_stores_its_kept_rows_order_by_values(sql, first):
    plan = analyze(sql, WINDOW_SCHEMA)
    assert plan.windows is not None
    assert [o.sql(dialect=DIALECT) for o in plan.windows.first] == first
    orders = [h.name for h in plan.hidden if h.role is Role.ORDER_KEY]
    assert orders == [f"__ivm_o_{i}" for i in range(len(first))]
    assert windows.kept_first(plan) == bool(first)
    assert all(o in windows.stored_columns(plan) for o in orders)


def test_a_keep_the_first_recomputes_only_partitions_whose_kept_row_a_removed_row_may_be():
    """The touched partitions' flag: a removed row (net count below 0) with the kept row's ORDER
    BY values, or no kept row to compare with; the others take the first of their kept row and the
    added rows, by the model's ORDER BY over the stored values, without reading the source."""
    plan = analyze(LATEST, WINDOW_SCHEMA)
    changes = windows.first_changes(plan, {"db.h": 3}, {"db.h": 4}, {0: "chg0"})
    assert changes is not None
    assert render.sql(changes).startswith("SELECT `key`, `val`, `rn`, `__ivm_p_0`, `__ivm_o_0`, `__ivm_o_1`, `__ivm_d`")
    parts = render.sql(windows.first_parts(plan, changes, BACKING))
    assert "MAX(IF(`__ivm_c`.`__ivm_d` < 0 AND (`__ivm_s`.`__ivm_count` IS NULL OR (" in parts
    assert "`__ivm_c`.`__ivm_o_0` IS NOT DISTINCT FROM `__ivm_s`.`__ivm_o_0`" in parts
    settled = render.sql(windows.first_delta(plan, BACKING, {"db.h": 4}, "parts", changes, False))
    assert "VERSION AS OF" not in settled  # no source read: the kept rows and the change rows only
    assert "ROW_NUMBER() OVER (PARTITION BY `__ivm_p_0` ORDER BY `__ivm_o_0` DESC, `__ivm_o_1`)" in settled
    both = render.sql(windows.first_delta(plan, BACKING, {"db.h": 4}, "parts", changes, True))
    assert "`db`.`h` VERSION AS OF 4" in both and "`__ivm_t`.`__ivm_r` = 1" in both
    assert windows.first_changes(plan, {"db.h": 3}, {"db.h": 3}, {}) is None


def test_windows_over_groups_find_their_partitions_in_the_change_rows_and_recompute_whole_groups():
    """A window over a GROUP BY's groups: the touched partitions are the group key's values in the
    FROM's change rows (not grouped: a change row is no group), and a recomputed partition's
    source rows are kept by the semi-join before they are grouped, so each group is whole; a
    PARTITION BY expression with an aggregate is no key (the view is one partition)."""
    sql = (
        "select key, val, count(*) as n, rank() over (partition by key order by count(*) desc) as r, "
        f"sum(sum(id)) over (partition by key) as total {H} group by key, val having count(*) > 1"
    )
    plan = analyze(sql, WINDOW_SCHEMA)
    assert [p.sql(dialect=DIALECT) for p in plan.windows.partition_by] == ["`h`.`key`"]
    assert plan.windows.first == ()
    touched = render.sql(windows.touched_select(plan, {"db.h": 3}, {"db.h": 5}, {0: "chg0"}))
    assert "COUNT(*)" not in touched and "GROUP BY `h`." not in touched
    delta = render.sql(windows.delta_select(plan, BACKING, {"db.h": 5}, "parts"))
    semi = delta.index("LEFT SEMI JOIN `parts`")
    assert semi < delta.index("GROUP BY `h`.`key`, `h`.`val` HAVING COUNT(*) > 1") < delta.index("UNION ALL")
    by_count = analyze(
        f"select key, count(*) as n, rank() over (partition by count(*) order by key) as r {H} group by key",
        WINDOW_SCHEMA,
    )
    assert by_count.windows.partition_by == ()
    kept = analyze(
        "select key, n from (select key, count(*) as n, row_number() over (partition by key order by count(*)) "
        f"as rn {H} group by key, val) s where rn = 1",
        WINDOW_SCHEMA,
    )
    assert kept.windows.first == ()  # a keep-the-first of groups is recomputed: its ORDER BY is an aggregate


def test_windows_over_groups_partition_only_by_a_group_by_expression_as_written():
    """Another function of the group keys is no partition key: `CAST(x AS STRING)` tells a change
    row's -0.0 from its group's 0.0, so the touched key would select part of a group; the view is
    then one partition. A windowed aggregate over a grouped subquery merges (`SUM(n) OVER`)."""
    schema = {**WINDOW_SCHEMA, "db.d": {"id": "int", "k": "int", "x": "double"}}
    cast = analyze(
        "select x, count(*) as n, rank() over (partition by cast(x as string) order by count(*)) as r from db.d "
        "group by x",
        schema,
    )
    assert cast.windows.partition_by == ()
    plain = analyze(
        "select x, count(*) as n, rank() over (partition by x order by count(*)) as r from db.d group by 1", schema
    )
    assert [p.sql(dialect=DIALECT) for p in plain.windows.partition_by] == ["`d`.`x`"]
    summed = analyze(
        "select s.key, sum(s.n) over (partition by s.key) as kn from (select key, val, count(*) as n from db.h "
        "group by key, val) s",
        WINDOW_SCHEMA,
    )
    assert "SUM(COUNT(*)) OVER (PARTITION BY `h`.`key`) AS `kn`" in summed.normalized_sql


@pytest.mark.parametrize(
    "sql",
    [
        # the inner HAVING would filter DISTINCT's coarser groups, not GROUP BY's
        "select s.p, rank() over (order by s.p) as r from (select distinct key % 2 as p from db.h group by key "
        "having count(*) > 1) s",
        "select s.p from (select distinct key % 2 as p from db.h group by key having count(*) > 1) s",
    ],
)
def test_distinct_with_group_by_under_a_query_over_its_rows_is_refused(sql):
    with pytest.raises(UnsupportedView) as info:
        analyze(sql, WINDOW_SCHEMA)
    assert "DISTINCT together with GROUP BY or HAVING in a subquery or CTE" in str(info.value)
