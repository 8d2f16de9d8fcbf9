"""An aggregate or a window over a join with a UNION ALL subquery (`analyze.union_leaf_join`): the
join over each branch of the union read as one leaf; what analysis accepts, the type check of the
columns the join compares, the refresh's statements, and what it refuses, by name."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze
from dbt_ivm.analyze.union_join import check_types
from dbt_ivm.classes import aggregate, windows
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import UNION_PLACEHOLDER, ViewClass
from tests.unit.test_union_join import FEEDS, SCHEMA

OLD = {"db.fa": 1, "db.fb": 2, "db.c": 3}
NEW = {"db.fa": 4, "db.fb": 2, "db.c": 5}
AGGREGATE = (
    f"select c.name, count(*) as n, sum(f.amt) as s, max(f.id) as hi from ({FEEDS}) f join db.c c "
    "on f.dim_id = c.cid where f.id > 1 group by c.name"
)


def test_an_aggregate_over_the_join_reads_the_union_all_of_the_join_over_each_branch():
    plan = analyze(AGGREGATE, SCHEMA)
    assert plan.view_class is ViewClass.AGGREGATE_JOIN and plan.union is not None
    assert [(s.index, s.table.key) for s in plan.sources] == [(0, "db.fa"), (1, "db.c"), (2, "db.fb"), (3, "db.c")]
    assert [b.plan.view_class for b in plan.union.branches] == [ViewClass.INNER_JOIN] * 2
    # each column the aggregate reads, under a name of its own; the join's ON and WHERE in each branch
    assert plan.union.columns == ("c_name", "f_amt", "f_id")
    sql = plan.normalized_sql
    assert sql.count("JOIN `db`.`c`") == 2 and sql.count("> 1") == 2 and UNION_PLACEHOLDER not in sql
    assert [o.name for o in plan.outputs] == ["name", "n", "s", "hi"]
    # the join compares dim_id (ON) and id (WHERE): each branch must give them the union's type
    assert plan.union.distributed is not None and plan.union.distributed.compared == ("id", "dim_id")


def test_a_window_over_the_join_in_a_cte_with_the_union_on_the_preserved_side_of_a_left_join():
    plan = analyze(
        f"with u as ({FEEDS}) select f.*, c.name, max(f.amt) over (partition by c.cid) as hi, "
        "row_number() over (partition by c.cid order by f.id, f.amt) as rn from u f left join db.c c "
        "on f.dim_id = c.cid",
        SCHEMA,
    )
    assert plan.view_class is ViewClass.WINDOW and plan.union is not None
    assert [b.plan.view_class for b in plan.union.branches] == [ViewClass.OUTER_JOIN] * 2
    assert [o.name for o in plan.outputs] == ["id", "amt", "dim_id", "name", "hi", "rn"]
    build = windows.build_select(plan, NEW).sql(dialect="spark")
    assert "`db`.`fa` VERSION AS OF 4" in build and build.count("`db`.`c` VERSION AS OF 5") == 2
    touched = windows.touched_select(plan, OLD, NEW, {0: "__ivm_chg_fa", 1: "__ivm_chg_c", 3: "__ivm_chg_c2"})
    assert touched is not None
    text = touched.sql(dialect="spark")
    assert "`__ivm_chg_fa`" in text and "`__ivm_chg_c`" in text and "`__ivm_chg_c2`" in text
    assert windows.touched_select(plan, OLD, OLD, {}) is None


def test_the_aggregate_s_refresh_has_a_term_per_moved_source_of_each_branch():
    plan = analyze(AGGREGATE, SCHEMA)
    delta = aggregate.delta_select(plan, OLD, {**OLD, "db.fb": 6})
    assert delta is not None and delta.sql(dialect="spark").count("TABLE_CHANGES") == 1
    both = aggregate.delta_select(plan, OLD, NEW)  # fa in one branch, c in both
    assert both is not None and both.sql(dialect="spark").count("TABLE_CHANGES") == 3


def test_a_null_the_join_compares_is_cast_and_spark_s_types_are_checked_before_a_build():
    plan = analyze(
        "select c.name, count(*) as n from (select id, dim_id from db.fa union all select id, null from db.fb) f "
        "join db.c c on f.dim_id = c.cid group by c.name",
        SCHEMA,
    )
    assert plan.union is not None and plan.union.distributed is not None
    assert "CAST(NULL AS INT)" in plan.normalized_sql
    described = []

    def describe(query):
        described.append(query)
        return {e.alias_or_name: "int" for e in query.expressions}

    check_types(plan, describe)
    assert len(described) == 1

    def widened(query):
        return {e.alias_or_name: "bigint" if e.alias_or_name.endswith("_0_0") else "int" for e in query.expressions}

    with pytest.raises(UnsupportedView, match="column dim_id of the UNION ALL f, which the query compares"):
        check_types(plan, widened)


def test_a_count_that_reads_no_column_and_names_that_would_take_the_engine_s_prefix():
    plan = analyze(f"select count(*) as n from ({FEEDS}) f join db.c c on f.dim_id = c.cid", SCHEMA)
    assert plan.union is not None and plan.union.columns == ("f_id",)  # the leaf needs one column
    plan = analyze(
        "select _.ivm_x, count(*) as n from (select id as ivm_x, dim_id from db.fa union all select id, dim_id "
        "from db.fb) _ join db.c c on _.dim_id = c.cid group by _.ivm_x",
        SCHEMA,
    )
    assert plan.union is not None and plan.union.columns == ("ivm_x",)


def test_names_that_would_collide_are_told_apart():
    plan = analyze(
        "select f.id, g.x_id, count(*) as n from (select id, dim_id as x_id from db.fa union all "
        "select id, dim_id from db.fb) f join (select cid as id, name as x_id from db.c) g on f.id = g.id "
        "group by f.id, g.x_id",
        SCHEMA,
    )
    assert plan.union is not None and len(set(c.lower() for c in plan.union.columns)) == len(plan.union.columns)
    assert [o.name for o in plan.outputs] == ["id", "x_id", "n"]


def test_a_lambda_a_filter_an_ordinal_group_and_having_read_the_leaf_s_names():
    plan = analyze(
        "select c.name, sum(aggregate(array(f.id, f.dim_id), 0, (acc, x) -> acc + x + c.cid)) as s, "
        f"count(*) filter (where f.id > 0) as n from ({FEEDS}) f join db.c c on f.dim_id = c.cid "
        "group by 1 having max(f.id) > 2",
        SCHEMA,
    )
    sql = plan.normalized_sql
    assert "(`acc`, `x`) -> `acc` + `x` + `f`.`c_cid`" in sql and "FILTER(WHERE `f`.`f_id` > 0)" in sql
    assert sql.endswith("GROUP BY `f`.`c_name` HAVING MAX(`f`.`f_id`) > 2")


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            f"select f.id, count(*) as n from ({FEEDS}) f join ({FEEDS}) g on f.id = g.id group by f.id",
            "an aggregate or a window over a join of two UNION ALL subqueries",
        ),
        (
            f"select c.name, count(f.id) as n from db.c c left join ({FEEDS}) f on f.dim_id = c.cid group by c.name",
            "an aggregate or a window over an outer join that pads the UNION ALL subquery",
        ),
        (
            "select c.name, count(*) as n from (select id, dim_id from db.fa union all select id, code from db.fb) f "
            "join db.c c on f.dim_id = c.cid group by c.name",
            "a UNION ALL column dim_id of types int and string read by the join",
        ),
        (  # a derived table naming its columns: the plain path's refusal (the names would be lost)
            "select id, name from (select f.id, c.name, row_number() over (partition by c.name order by f.id) as rn "
            f"from ({FEEDS}) f join db.c c on f.dim_id = c.cid) d(name, id, rn) where rn = 1",
            "set operation UNION ALL in a subquery or CTE",
        ),
        (  # the raw tree's refusals, before normalization merges or names anything
            f"select c.name, count(*) as n from ({FEEDS}) f left join (db.c c join (select cid, name from db.c "
            "where cid > 1) r on c.cid = r.cid) on f.dim_id = c.cid group by c.name",
            "a derived table or CTE inside a parenthesized join",
        ),
        (f"select c.name, count(*) from ({FEEDS}) f join db.c c on f.dim_id = c.cid group by c.name", "without a name"),
        (
            f"select c.name, count(*) as n from ({FEEDS}) f join db.c c on f.dim_id = c.cid "
            "where f.id in (select cid from db.c) group by c.name",
            "GROUP BY over rows a subquery tests, in the join over a branch of a UNION ALL",
        ),
        (
            f"select c.name, count(f.id) as n from db.c c full join ({FEEDS}) f on f.dim_id = c.cid group by c.name",
            "an outer join that pads the UNION ALL subquery",
        ),
        (  # a subquery outside the join: the distributed join's own refusal
            f"select c.name, count(*) as n, (select max(cid) from db.c) as m from ({FEEDS}) f join db.c c "
            "on f.dim_id = c.cid group by c.name",
            "scalar subquery",
        ),
        (
            f"select c.name, count(*) as n from ({FEEDS}) f join db.c c on f.dim_id = c.cid group by c.name limit 3",
            "LIMIT",
        ),
    ],
)
def test_refused_by_name(sql, construct):
    with pytest.raises(UnsupportedView) as e:
        analyze(sql, SCHEMA)
    assert construct in e.value.construct


def test_keep_the_latest_over_the_join_in_a_subquery_or_ctes_stores_only_the_rows_it_keeps():
    windowed = "select f.id, c.name, row_number() over (partition by c.name order by f.id desc) as rn"
    for sql in [
        f"select id, name from ({windowed} from ({FEEDS}) f join db.c c on f.dim_id = c.cid) d where rn = 1",
        f"with u as ({FEEDS}), d as ({windowed} from u f join db.c c on f.dim_id = c.cid) "
        "select id, name from d where rn = 1",
        # Spark reads a derived table without an alias too
        f"select id, name from ({windowed} from ({FEEDS}) f join db.c c on f.dim_id = c.cid) where rn = 1",
    ]:
        plan = analyze(sql, SCHEMA)
        assert plan.view_class is ViewClass.WINDOW and plan.union is not None, sql
        assert plan.union.distributed is not None and plan.union.distributed.compared == ("dim_id",), sql
        assert windows.stored_filter(plan) is not None, sql  # `rn = 1`: one row per key stored
        assert plan.normalized_sql.count("JOIN `db`.`c`") == 2 and plan.normalized_sql.endswith("`rn` = 1"), sql
