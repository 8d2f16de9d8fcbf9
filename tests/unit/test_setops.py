"""Set-operation views (`analyze.setops`, `classes.setops`): what analysis accepts, the rows'
multiplicity from the branches' counts, and what it refuses, by name."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze
from dbt_ivm.classes import rules_for, setops
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.explain import explain
from dbt_ivm.ir import Role, ViewClass
from dbt_ivm.render import col
from dbt_ivm.verbatim import DIALECT
from tests.unit.views import BACKING, NESTED_SETOPS, OUTER_SCHEMA, SCHEMA, SETOPS, SIGNED


def _multiplicity(sql: str) -> str:
    plan = analyze(sql, OUTER_SCHEMA)
    assert plan.set_operation is not None
    return setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark")


@pytest.mark.parametrize(
    "operation,copies",
    [
        ("union all", "`c0` + `c1`"),
        ("union", "IF(`c0` + `c1` > 0, 1, 0)"),
        ("intersect all", "LEAST(`c0`, `c1`)"),
        ("intersect", "IF(`c0` > 0 AND `c1` > 0, 1, 0)"),
        ("except all", "GREATEST(`c0` - `c1`, 0)"),
        ("except", "IF(`c0` > 0 AND `c1` = 0, 1, 0)"),
        ("minus", "IF(`c0` > 0 AND `c1` = 0, 1, 0)"),
    ],
)
def test_each_set_operation_is_a_function_of_the_branches_counts(operation, copies):
    assert _multiplicity(f"select cust from db.o {operation} select cid from db.c") == copies


def test_nested_set_operations_follow_spark_s_precedence_and_a_distinct_branch_counts_once():
    # ((o UNION c) EXCEPT ALL DISTINCT r) UNION ALL (o INTERSECT r): INTERSECT binds tighter
    assert _multiplicity(NESTED_SETOPS) == (
        "GREATEST(IF(`c0` + `c1` > 0, 1, 0) - IF(`c2` > 0, 1, 0), 0) + IF(`c3` > 0 AND `c4` > 0, 1, 0)"
    )


def test_branches_keep_their_own_plans_and_the_view_numbers_every_source():
    plan = analyze(SETOPS, OUTER_SCHEMA)
    assert plan.view_class is ViewClass.SET_OPERATION
    assert plan.set_operation is not None
    branches = plan.set_operation.branches
    assert [b.plan.view_class for b in branches] == [ViewClass.INNER_JOIN, ViewClass.OUTER_JOIN]
    assert [b.offset for b in branches] == [0, 2]
    assert [(s.index, s.alias) for s in plan.sources] == [(0, "o"), (1, "c"), (2, "r"), (3, "c")]
    assert [o.name for o in plan.outputs] == ["id", "name"]  # the first branch's names
    assert [(h.name, h.role) for h in plan.hidden] == [
        ("__ivm_c0", Role.BRANCH_COUNT),
        ("__ivm_c1", Role.BRANCH_COUNT),
    ]
    # a branch's plan at refresh reads the view's sources, numbered from 0 as its terms number them
    second = setops.branch_plan(plan, branches[1])
    assert [(s.index, s.alias, s.table.key) for s in second.sources] == [(0, "r", "db.r"), (1, "c", "db.c")]
    assert "UNION ALL" in plan.normalized_sql
    assert rules_for(plan) is setops.RULES


def test_the_model_s_ctes_reach_every_branch():
    plan = analyze(
        "with big as (select id, cust from db.o where amt > 1) select id from big union select cust from big",
        OUTER_SCHEMA,
    )
    assert plan.set_operation is not None
    assert all(b.plan.sources[0].table.key == "db.o" for b in plan.set_operation.branches)


def test_a_changed_definition_changes_the_hash():
    one = analyze("select cust from db.o union select cid from db.c", OUTER_SCHEMA)
    other = analyze("select cust from db.o union all select cid from db.c", OUTER_SCHEMA)
    assert one.definition_hash != other.definition_hash


def test_a_union_all_tells_minus_zero_from_zero_by_text_and_every_other_set_operation_as_spark():
    """Spark groups and compares -0.0 as 0.0: where the view keeps every row (UNION ALL of plain
    branches), a floating-point column is grouped and matched by its text, its value carried."""
    types = {"id": "int", "amt": "double"}
    bag = analyze(SIGNED, SCHEMA)
    build = setops.build_select(bag, {"db.o": 1, "db.c": 1}, types).sql(dialect=DIALECT)
    assert "ANY_VALUE(`amt`) AS `amt`" in build and build.endswith("GROUP BY `id`, CAST(`amt` AS STRING)")
    delta = setops.delta_select(bag, {"db.o": 1, "db.c": 1}, {"db.o": 2, "db.c": 1}, {0: "chg"}, types)
    assert delta is not None and "GROUP BY `id`, CAST(`amt` AS STRING) HAVING" in delta.sql(dialect=DIALECT)
    merge = setops.merge_statement(bag, BACKING, "d", types).sql(dialect=DIALECT)
    assert "AND CAST(`t`.`amt` AS STRING) IS NOT DISTINCT FROM CAST(`s`.`amt` AS STRING) WHEN" in merge
    compared = [
        SIGNED.replace("union all", "union"),
        SIGNED.replace("select id", "select distinct id"),
        SIGNED + " intersect all select id, amt from db.o",
    ]
    for sql in compared:
        plan = analyze(sql, SCHEMA)
        built = setops.build_select(plan, {"db.o": 1, "db.c": 1}, types).sql(dialect=DIALECT)
        assert "CAST(`amt` AS STRING)" not in built and "ANY_VALUE" not in built, sql
        assert "AS STRING" not in setops.merge_statement(plan, BACKING, "d", types).sql(dialect=DIALECT)
    assert "CAST" not in setops.build_select(bag, {"db.o": 1, "db.c": 1}).sql(dialect=DIALECT)  # no types: none


def test_explain_names_each_branch_and_the_multiplicity():
    text = explain(SETOPS, OUTER_SCHEMA)
    assert "class: set-operation" in text
    assert "branch 0, inner-join" in text and "branch 1, outer-join" in text
    assert "`__ivm_c0` + `__ivm_c1`" in text


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            "select cust, count(*) as n from db.o group by cust union all select cid, 1 from db.c",
            "an aggregate branch of a set operation",
        ),
        (
            "select id, row_number() over (partition by cust order by id) as rn from db.o "
            "union all select cid, 1 from db.c",
            "a window branch of a set operation",
        ),
        (
            "select c.name, u.cust from db.c c left join (select cust from db.o union all select cid from db.c) u "
            "on u.cust > c.cid",
            "a UNION ALL subquery on the null-supplied side of a LEFT JOIN whose ON has no equality",
        ),
        (
            "with u as (select cust from db.o union select cid from db.c) select u.cust, c.name from u "
            "join db.c c on u.cust = c.cid",
            "set operation UNION in a subquery or CTE",
        ),
        ("select cust from db.o union all select cid, name from db.c", "set operation branches with 1 and 2 columns"),
        ("select cust from db.o union all select cid from db.c order by 1", "ORDER BY on a set operation"),
        ("select cust from db.o union all (select cid from db.c limit 3)", "LIMIT"),
        ("select cust from db.o union all select cid from db.c sort by cust", "SORT BY on a set operation"),
        ("(select cust from db.o union select cid from db.c) limit 2", "LIMIT after a parenthesized query"),
        ("(select cust from db.o) order by cust", "ORDER BY after a parenthesized query"),
        ("select cust from db.o union all by name select cid as cust from db.c", "a set operation with BY NAME"),
        ("select cust from db.o union all select cust from db.o where id in (select cid from db.c)", "subquery"),
    ],
)
def test_refused_by_name(sql, construct):
    with pytest.raises(UnsupportedView) as e:
        analyze(sql, OUTER_SCHEMA)
    assert construct in e.value.construct


def test_a_subquery_set_operation_points_at_a_separate_model():
    with pytest.raises(UnsupportedView) as e:
        analyze(
            "select c.name, count(*) as n from db.c c left join (select cust from db.o union all select cid from db.c) "
            "u on u.cust = c.cid group by c.name",
            OUTER_SCHEMA,
        )
    assert "its own fast_mv model" in e.value.hint
