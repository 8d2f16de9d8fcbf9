"""An aggregate or a window over a UNION ALL subquery (`analyze.union_leaf`, `classes.union_leaf`): what
analysis accepts, the leaf's rows and change, and what it refuses, by name."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dbt_ivm import analyze
from dbt_ivm.classes import aggregate, union_leaf, windows
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.explain import explain
from dbt_ivm.ir import UNION_PLACEHOLDER, ViewClass
from tests.unit.views import OUTER_SCHEMA, UNION_AGG

OLD, NEW = {"db.o": 3, "db.c": 5}, {"db.o": 4, "db.c": 7}


def test_the_union_is_one_leaf_whose_branches_keep_their_plans_and_number_every_source():
    plan = analyze(UNION_AGG, OUTER_SCHEMA)
    assert plan.view_class is ViewClass.AGGREGATE_JOIN
    assert plan.union is not None
    assert plan.union.alias == "u" and plan.union.columns == ("feed", "cust", "amt")  # the first branch's
    assert [b.plan.view_class for b in plan.union.branches] == [ViewClass.INNER_JOIN, ViewClass.SINGLE_SOURCE]
    assert [b.offset for b in plan.union.branches] == [0, 2]
    assert [(s.index, s.alias, s.table.key) for s in plan.sources] == [
        (0, "o", "db.o"),
        (1, "c", "db.c"),
        (2, "c", "db.c"),
    ]
    # the aggregate reads the placeholder; the model's query holds the union in its place
    assert UNION_PLACEHOLDER in plan.query.sql() and UNION_PLACEHOLDER not in plan.normalized_sql
    assert "UNION ALL" in plan.normalized_sql
    assert [o.name for o in plan.outputs] == ["feed", "cust", "n", "s", "hi"]


def test_a_cte_and_a_where_over_the_union_and_a_global_aggregate():
    plan = analyze(
        "with u as (select cust, amt from db.o union all select cid, 2.0 from db.c where cid > 1) "
        "select count(*) as n, max(amt) as hi from u where amt > 1",
        OUTER_SCHEMA,
    )
    assert plan.union is not None and plan.is_global
    assert plan.where is not None and "amt" in plan.where.sql()


def test_avg_over_an_integral_union_column_sums_exactly():
    plan = analyze(
        "select name, avg(cust) as a, avg(amt) as b from (select cust, amt, note as name from db.o union all "
        "select cid, 1.0, name from db.c) u group by name",
        OUTER_SCHEMA,
    )
    assert [a.exact for a in plan.aggregates] == [True, False]


def test_each_branch_s_change_reads_only_its_own_sources_and_the_leaf_keeps_its_types():
    """A change to db.o only: the branch over db.c has no term, and the typed empty read of the whole
    leaf (`WHERE FALSE`) gives the change the leaf's widened types."""
    plan = analyze(UNION_AGG, OUTER_SCHEMA)
    delta = aggregate.delta_select(plan, OLD, {"db.o": 4, "db.c": 5})
    assert delta is not None
    sql = delta.sql(dialect="spark")
    assert sql.count("TABLE_CHANGES") == 1 and "TABLE_CHANGES('`db`.`o`', 4, 4)" in sql
    assert "WHERE FALSE" in sql
    # both sources moved: three terms, one per occurrence (db.c twice: once in each branch)
    both = aggregate.delta_select(plan, OLD, NEW)
    assert both is not None and both.sql(dialect="spark").count("TABLE_CHANGES") == 3
    assert aggregate.delta_select(plan, OLD, OLD) is None


def test_the_leaf_at_the_pinned_versions_reads_every_branch_at_them():
    plan = analyze(UNION_AGG, OUTER_SCHEMA)
    relation = union_leaf.leaf_relations(plan, NEW)["u"].sql(dialect="spark")
    assert relation.count("VERSION AS OF 7") == 2 and relation.count("VERSION AS OF 4") == 1
    # branches under positional names, renamed once above the UNION ALL (a Spark optimizer bug)
    assert "`__ivm_u0` AS `feed`" in relation
    current = union_leaf.over_leaf(plan, exp.select("*").from_(exp.to_table(f"{UNION_PLACEHOLDER}").as_("u")))
    assert "VERSION AS OF" not in current.sql(dialect="spark")


def test_explain_names_the_leaf_and_its_branches():
    text = explain(UNION_AGG, OUTER_SCHEMA)
    assert "u = UNION ALL of:" in text and "branch 1:" in text


def test_a_window_over_the_union_recomputes_the_partitions_of_the_leaf_s_change():
    plan = analyze(
        "select cust, amt, lead(amt) over (partition by cust order by amt) as nxt, row_number() over "
        "(partition by cust order by amt) as rn from (select cust, amt from db.o union all select cid, 2.0 "
        "from db.c where cid > 1) u",
        OUTER_SCHEMA,
    )
    assert plan.view_class is ViewClass.WINDOW and plan.union is not None
    assert [(s.index, s.table.key) for s in plan.sources] == [(0, "db.o"), (1, "db.c")]
    assert UNION_PLACEHOLDER not in plan.normalized_sql
    build = windows.build_select(plan, NEW).sql(dialect="spark")
    assert "`db`.`o` VERSION AS OF 4" in build and "`db`.`c` VERSION AS OF 7" in build
    assert UNION_PLACEHOLDER not in build
    # only o moved: the partitions of o's change rows, through the leaf (typed by a read of the whole leaf)
    touched = windows.touched_select(plan, OLD, {**OLD, "db.o": 4}, {0: "__ivm_chg_o"})
    assert touched is not None
    text = touched.sql(dialect="spark")
    assert text.startswith("SELECT DISTINCT `__ivm_p_0` FROM") and "`__ivm_chg_o`" in text
    assert UNION_PLACEHOLDER not in text and "WHERE FALSE" in text
    assert windows.touched_select(plan, OLD, OLD, {}) is None  # nothing moved


def test_keep_the_latest_over_the_union_in_a_subquery_or_ctes_stores_only_the_rows_it_keeps():
    union = "select cust, amt from db.o union all select cid, 2.0 from db.c"
    for sql in [
        "select cust, amt from (select cust, amt, row_number() over (partition by cust order by amt desc) as rn "
        f"from ({union}) u) d where rn = 1",
        f"with u as ({union}), d as (select cust, amt, row_number() over (partition by cust order by amt desc) "
        "as rn from u) select cust, amt from d where rn = 1",
        # Spark reads a derived table without an alias too
        "select cust, amt from (select cust, amt, row_number() over (partition by cust order by amt desc) as rn "
        f"from ({union}) u) where rn = 1",
    ]:
        plan = analyze(sql, OUTER_SCHEMA)
        assert plan.view_class is ViewClass.WINDOW and plan.union is not None, sql
        assert windows.stored_filter(plan) is not None, sql  # `rn = 1`: one row per key stored
        assert not plan.windows.first and not windows.kept_first(plan), sql  # a leaf's partitions: recomputed
        assert UNION_PLACEHOLDER in plan.query.sql() and UNION_PLACEHOLDER not in plan.normalized_sql, sql
        assert "UNION ALL" in plan.normalized_sql and plan.normalized_sql.endswith("`rn` = 1"), sql


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            "select cust from (select cust from db.o union all select cid from db.c) u "
            "where exists (select 1 from db.r r where r.cid = u.cust)",
            "a query over a UNION ALL subquery that is not an aggregate or a window (semi-join)",
        ),
        (
            "select cust, count(*) as n from (select cust from db.o union select cid from db.c) u group by cust",
            "set operation UNION in a subquery or CTE",
        ),
        (
            "select cust, count(*) as n from (select distinct cust from db.o union all select cid from db.c) u "
            "group by cust",
            "SELECT DISTINCT in a branch of a UNION ALL subquery",
        ),
        (
            "select cust, count(*) as n from (select cust, count(*) as k from db.o group by cust union all "
            "select cid, 1 from db.c) u group by cust",
            "an aggregate branch of a set operation",
        ),
        (
            "select cust, count(*) as n from (select cust from db.o union all select cid from db.c) u(cust) "
            "group by cust",
            "set operation UNION ALL in a subquery or CTE",
        ),
        (
            "with u as (select cust from db.o union all select cid from db.c) select a.cust, count(*) as n "
            "from u a join u b on a.cust = b.cust group by a.cust",
            "the UNION ALL CTE u read 2 times",
        ),
    ],
)
def test_refused_by_name(sql, construct):
    with pytest.raises(UnsupportedView) as e:
        analyze(sql, OUTER_SCHEMA)
    assert construct in e.value.construct
