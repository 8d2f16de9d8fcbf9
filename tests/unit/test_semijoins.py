"""Semi-join views (`analyze.subqueries`, `classes.semijoins`): what analysis accepts, the key a
refresh recomputes by, how each correlation compares, and what it refuses, by name."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze
from dbt_ivm.classes import rules_for, semijoins
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.explain import explain
from dbt_ivm.ir import Comparison, Role, ViewClass
from dbt_ivm.verbatim import DIALECT, to_sql
from tests.unit.views import OUTER_SCHEMA, SCHEMA, SEMI

TYPED = {**SCHEMA, "db.t": {"k": "bigint", "s": "string", "d": "decimal(10,2)"}}


def _texts(exprs) -> list[str]:
    return [e.sql(dialect=DIALECT) for e in exprs]


@pytest.mark.parametrize(
    "sql,keys,comparisons",
    [
        (
            "select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust)",
            ["`o`.`cust`"],
            [["="]],
        ),
        (
            "select o.id from db.o o where not exists (select 1 from db.c c where c.cid <=> o.cust and c.name = 'a')",
            ["`o`.`cust`"],
            [["<=>"]],
        ),
        ("select id from db.o where cust in (select cid from db.c)", ["`o`.`cust`"], [["="]]),
        # NOT IN (and IN anywhere but a WHERE conjunct) is three-valued
        ("select id from db.o where cust not in (select cid from db.c)", ["`o`.`cust`"], [["in"]]),
        ("select id from db.o where note = 'a' or cust in (select cid from db.c)", ["`o`.`cust`"], [["in"]]),
        # several correlation columns: all of them are the key
        (
            "select o.id from db.o o where exists (select 1 from db.o p where p.cust = o.cust and p.id = o.id)",
            ["`o`.`cust`", "`o`.`id`"],
            [["=", "="]],
        ),
        (
            "select id from db.o where (cust, id) in (select cid, cid from db.c)",
            ["`o`.`cust`", "`o`.`id`"],
            [["=", "="]],
        ),
        # a correlated NOT IN is keyed by its correlation; its value is compared three-valued
        (
            "select o.id from db.o o where o.id not in (select c.cid from db.c c where c.name = o.note)",
            ["`o`.`note`"],
            [["=", "in"]],
        ),
        # two tests: the key both correlate on
        (SEMI, ["`o`.`cust`"], [["="], ["=", "in"]]),
        # uncorrelated: one key
        ("select id from db.o where exists (select 1 from db.c where name = 'a')", [], [[]]),
        # over a join, an outer one included
        (
            "select o.id, c.name from db.o o left join db.c c on o.cust = c.cid "
            "where not exists (select 1 from db.r r where r.cid = o.cust)",
            ["`o`.`cust`"],
            [["="]],
        ),
    ],
)
def test_semi_join_views_are_keyed_by_their_correlations(sql, keys, comparisons):
    plan = analyze(sql, OUTER_SCHEMA)
    assert plan.view_class is ViewClass.SEMI_JOIN and plan.subqueries is not None
    assert _texts(plan.subqueries.partition_by) == keys
    assert [[p.comparison.value for p in t.pairs] for t in plan.subqueries.tests] == comparisons
    assert [h.role for h in plan.hidden] == [Role.PARTITION_KEY] * len(keys) + [Role.MULTIPLICITY]
    assert rules_for(plan) is semijoins.RULES


def test_the_outer_query_without_its_tests_and_each_test_uncorrelated():
    plan = analyze(SEMI, OUTER_SCHEMA)
    assert plan.subqueries is not None
    assert (
        to_sql(plan.subqueries.outer)
        == "SELECT `o`.`id` AS `id`, `o`.`amt` AS `amt` FROM `db`.`o` AS `o` WHERE `o`.`amt` > 1"
    )
    exists, not_in = plan.subqueries.tests
    assert to_sql(exists.select) == ("SELECT `c`.`cid` AS `__ivm_k_0` FROM `db`.`c` AS `c` WHERE `c`.`name` <> 'x'")
    assert to_sql(not_in.select).startswith("SELECT `r`.`cid` AS `__ivm_k_0`, `r`.`cid` AS `__ivm_k_1`")
    # the outer sources first, then each test's, numbered on
    assert [(s.index, s.alias) for s in plan.sources] == [(0, "o"), (1, "c"), (2, "r")]
    assert (exists.sources, not_in.sources) == ((1,), (2,))


def test_a_subquery_table_named_as_an_outer_one_gets_its_own_alias():
    plan = analyze("select id from db.o where cust not in (select id from db.o where note = 'b')", SCHEMA)
    assert [s.alias for s in plan.sources] == ["o", "o_2"]
    assert "FROM `db`.`o` AS `o_2` WHERE `o_2`.`note` = 'b'" in to_sql(plan.query)


def test_keys_of_other_types_are_not_searched_by_the_inner_values():
    """A correlation of two types compares as Spark converts them: its key is not searched by the
    subquery's values (the view is one key), except integers of two widths."""
    integral = analyze("select id from db.o where cust in (select k from db.t)", TYPED)
    assert integral.subqueries is not None and _texts(integral.subqueries.partition_by) == ["`o`.`cust`"]
    for other in ("s", "d"):
        plan = analyze(f"select id from db.o where cust in (select {other} from db.t)", TYPED)
        assert plan.subqueries is not None and plan.subqueries.partition_by == ()
        assert not plan.subqueries.tests[0].pairs[0].keyed


@pytest.mark.parametrize(
    "sql,message",
    [
        ("select o.id from db.o o where exists (select 1 from db.c c where c.cid > o.cust)", "correlated condition"),
        (
            "select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust or c.name = o.note)",
            "correlated condition",
        ),
        (
            "select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust + c.cid)",
            "correlated condition",
        ),
        (
            "select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust and "
            "exists (select 1 from db.c d where d.cid = o.id))",
            "a subquery inside a subquery",
        ),
        ("select id, exists (select 1 from db.c) as e from db.o", "in the SELECT list"),
        ("select o.id from db.o o join db.c c on c.cid in (select cid from db.c)", "in a JOIN condition"),
        ("select id from db.o where amt > (select max(amt) from db.o)", "scalar subquery"),
        ("select id from db.o where cust in (select max(cid) from db.c group by name)", "GROUP BY inside a subquery"),
        ("select id from db.o where cust in (select max(cid) from db.c)", "an aggregate or window inside a subquery"),
        ("select id from db.o where (cust, id) not in (select cid, cid from db.c)", "a multi-column NOT IN"),
        (
            "select o.id from db.o o where o.id in (select c.cid + o.cust from db.c c)",
            "the outer query's column",
        ),
        (
            "select o.cust, count(*) as n from db.o o where exists (select 1 from db.c c where c.cid = o.cust) "
            "group by o.cust",
            "GROUP BY over rows a subquery tests",
        ),
        (
            "select o.id, row_number() over (partition by o.cust order by o.id) as rn from db.o o "
            "where exists (select 1 from db.c c where c.cid = o.cust)",
            "over rows a subquery tests",
        ),
        (
            "select o.id from db.o o left join (select c.cid from db.c c where c.cid in (select cid from db.r)) x "
            "on o.cust = x.cid",
            "could not be merged",
        ),
    ],
)
def test_refused_by_name(sql, message):
    with pytest.raises(UnsupportedView, match=message):
        analyze(sql, OUTER_SCHEMA)


@pytest.mark.parametrize(
    "sql,as_join,instead",
    [
        (
            "select id from db.o where amt > (select max(amt) from db.o)",
            "select o.id from db.o o cross join (select max(amt) as top from db.o) m where o.amt > m.top",
            "select o.id from db.o o cross join db.m m where o.amt > m.top",
        ),
        (
            "select id from db.o where cust in (select max(cid) from db.c group by name)",
            "select o.id from db.o o join (select max(cid) as top from db.c group by name) m on o.cust = m.top",
            "select id from db.o where cust in (select top from db.m)",
        ),
    ],
)
def test_a_subquery_that_aggregates_is_refused_with_what_is_accepted_instead(sql, as_join, instead):
    """The hint is not "write it as a join": a join to a grouped subquery is refused too. A model
    of its own (`db.m`: the subquery's one row, or its groups) read by ref() is accepted."""
    with pytest.raises(UnsupportedView, match=r"fast_mv model of its own and read that model with ref\(\)"):
        analyze(sql, OUTER_SCHEMA)
    with pytest.raises(UnsupportedView, match="a grouped subquery or CTE"):
        analyze(as_join, OUTER_SCHEMA)
    accepted = analyze(instead, {**OUTER_SCHEMA, "db.m": {"top": "double"}})
    assert accepted.view_class in (ViewClass.INNER_JOIN, ViewClass.SEMI_JOIN)


@pytest.mark.parametrize(
    "sql,hint,instead",
    [
        (
            "select id from db.o where cust = any (select cid from db.c)",
            r"write `x = ANY \(subquery\)` as `x IN \(subquery\)`",
            "select id from db.o where cust in (select cid from db.c)",
        ),
        (
            "select id from db.o where cust <> all (select cid from db.c)",
            r"`x <> ALL \(subquery\)` as `x NOT IN \(subquery\)`",
            "select id from db.o where cust not in (select cid from db.c)",
        ),
        (
            "select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust and "
            "exists (select 1 from db.c d where d.cid = o.id))",
            r"the inner query, with its own EXISTS or IN, in a fast_mv model of its own",
            "select o.id from db.o o where exists (select 1 from db.m c where c.cid = o.cust)",
        ),
    ],
)
def test_any_all_and_nested_subqueries_are_refused_with_what_is_accepted_instead(sql, hint, instead):
    """Not "write it as a join" (Spark parses no ANY/ALL over a subquery; a nested test's join
    would be refused too): the hint names a form the analyzer accepts."""
    with pytest.raises(UnsupportedView, match=hint):
        analyze(sql, SCHEMA)
    accepted = analyze(instead, {**SCHEMA, "db.m": {"cid": "int"}})
    assert accepted.view_class is ViewClass.SEMI_JOIN


def test_a_table_read_where_the_refresh_would_not_follow_it_is_refused(monkeypatch):
    """The last guard of `analyze`: were a subquery's SELECT taken for no subquery (as ALL's was,
    which sqlglot leaves unwrapped), its table would be read and never followed: refused."""
    from dbt_ivm.analyze import refusals

    monkeypatch.setattr(refusals, "check_subquery", lambda node: None)
    with pytest.raises(UnsupportedView, match=r"table db\.c read where fast_mv would not follow its changes"):
        analyze("select id from db.o where cust > all (select cid from db.c)", SCHEMA)


def test_a_test_over_a_window_or_aggregate_relation_is_refused_as_such():
    """Not as a FROM subquery that could not be merged: the message names the test and the
    relation, and says to chain two models."""
    windowed = (
        "with w as (select id, cust, row_number() over (partition by cust order by id) rn from db.o) "
        "select * from w where cust in (select cid from db.c)"
    )
    with pytest.raises(UnsupportedView) as refused:
        analyze(windowed, SCHEMA)
    assert str(refused.value) == (
        "fast_mv cannot maintain this model: a subquery predicate (`w`.`cust` IN (SELECT `c`.`cid` AS `cid` FROM "
        "`db`.`c` AS `c`)) over 'w', a CTE or derived table that computes windows at line 1, column 118; split it "
        "into two fast_mv models, chained: the query of 'w' in one, and in a second that reads the first with ref() "
        "the query that tests its rows (a fast_mv can read another fast_mv: README, Chains), or use "
        "materialized='table'"
    )
    aggregated = [
        "with g as (select cust, count(*) n from db.o group by cust) "
        "select * from g where cust in (select cid from db.c)",
        "select * from (select distinct cust from db.o) g where exists (select 1 from db.c where cid = g.cust)",
        "select g.* from (select cust, max(id) m from db.o group by cust) g join db.c on cid = g.cust "
        "where cust not in (select cid from db.c)",
    ]
    for sql in aggregated:
        with pytest.raises(UnsupportedView, match="over 'g', a CTE or derived table that aggregates its rows"):
            analyze(sql, SCHEMA)
    merged = analyze("select * from (select id, cust from db.o) g where cust in (select cid from db.c)", SCHEMA)
    assert merged.view_class is ViewClass.SEMI_JOIN  # a relation merged into the query is no such relation


def test_explain_names_the_keys_and_what_each_source_touches():
    text = explain(SEMI, OUTER_SCHEMA)
    assert "class: semi-join" in text
    assert "__ivm_p_0: partition key of `o`.`cust`" in text
    assert "o: recomputes the keys (`o`.`cust`) of the rows it adds or removes" in text
    assert "c: recomputes the keys its changed rows correlate on in EXISTS(" in text
    whole = explain("select id from db.o where exists (select 1 from db.c where name = 'a')", SCHEMA)
    assert "the whole view: its tests share no correlation key" in whole
    three_valued = explain("select id from db.o where cust not in (select cid from db.c)", SCHEMA)
    assert "every key when a changed value is NULL" in three_valued


def test_the_null_aware_key_touches_the_null_key_and_everything_on_a_null_value():
    plan = analyze("select id from db.o where cust not in (select cid from db.c)", SCHEMA)
    touched = semijoins.touched_select(plan, {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}, {1: "chg"})
    assert touched is not None
    text = to_sql(touched)
    assert "`__ivm_k_0` IS NULL AS `__ivm_all`" in text and "NULL AS `__ivm_p_0`, FALSE AS `__ivm_all`" in text
    # a strict correlation's NULL matches nothing: such a changed row touches no key
    exists = analyze("select o.id from db.o o where exists (select 1 from db.c c where c.cid = o.cust)", SCHEMA)
    touched = semijoins.touched_select(exists, {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}, {1: "chg"})
    assert touched is not None and "WHERE NOT `__ivm_k_0` IS NULL" in to_sql(touched)
    assert semijoins.touched_select(exists, {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 1}, {}) is None
    assert Comparison.NULL_AWARE.value == "in"
