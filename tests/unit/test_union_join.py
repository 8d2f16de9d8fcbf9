"""A join over a UNION ALL subquery or CTE (`analyze.union_join`): distributed over the union's
branches into a set operation of joins, the branches typed as the union, and what stays refused, by name."""

from __future__ import annotations

from collections import defaultdict

import pytest

from dbt_ivm import analyze
from dbt_ivm.analyze.union_join import check_types
from dbt_ivm.classes import rules_for, setops
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.explain import explain
from dbt_ivm.ir import ViewClass, ViewPlan
from dbt_ivm.render import col
from dbt_ivm.verbatim import DIALECT
from tests.unit.views import OUTER_SCHEMA, UNION_JOIN

SCHEMA = {
    **OUTER_SCHEMA,
    "db.fa": {"id": "int", "amt": "decimal(10,2)", "dim_id": "int"},
    "db.fb": {"id": "int", "amt": "int", "dim_id": "int", "code": "string"},
}
FEEDS = "select id, amt, dim_id from db.fa union all select id, amt, dim_id from db.fb"


def _distributed(sql: str) -> ViewPlan:
    plan = analyze(sql, SCHEMA)
    assert plan.view_class is ViewClass.SET_OPERATION
    assert plan.set_operation is not None and plan.set_operation.distributed
    return plan


def _branch_sql(plan: ViewPlan) -> list[str]:
    assert plan.set_operation is not None
    return [b.plan.query.sql(dialect=DIALECT) for b in plan.set_operation.branches]


def test_an_inner_join_is_the_union_all_of_the_join_over_each_branch():
    plan = _distributed(f"select f.id, f.amt, c.name from ({FEEDS}) f join db.c c on f.dim_id = c.cid where f.id > 1")
    assert plan.set_operation is not None
    branches = plan.set_operation.branches
    assert [b.plan.view_class for b in branches] == [ViewClass.INNER_JOIN, ViewClass.INNER_JOIN]
    assert [(s.index, s.alias, s.table.key) for s in plan.sources] == [
        (0, "fa", "db.fa"),
        (1, "c", "db.c"),
        (2, "fb", "db.fb"),
        (3, "c", "db.c"),
    ]
    first, second = _branch_sql(plan)
    assert "JOIN `db`.`c` AS `c` ON `fa`.`dim_id` = `c`.`cid`" in first and "`fa`.`id` > 1" in first
    assert "`fb`.`dim_id` = `c`.`cid`" in second
    assert [o.name for o in plan.outputs] == ["id", "amt", "name"]
    assert setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark") == "`c0` + `c1`"
    # the join compares dim_id and filters on id; amt is only an output, which the set operation casts
    assert plan.set_operation.distributed
    assert plan.set_operation.distributed[0].compared == ("id", "dim_id")
    assert rules_for(plan) is setops.RULES


def test_the_union_on_either_side_of_an_inner_join_in_a_cte_and_the_preserved_side_of_outer_joins():
    for sql in [
        f"select f.id, c.name from db.c c join ({FEEDS}) f on c.cid = f.dim_id",
        f"with f as ({FEEDS}) select f.id, c.name from f left join db.c c on f.dim_id = c.cid",
        f"select f.id, c.name from db.c c right join ({FEEDS}) f on c.cid = f.dim_id",
        f"select f.id, c.name, r.label from ({FEEDS}) f join db.c c on f.dim_id = c.cid left join db.r r "
        "on c.cid = r.cid",
    ]:
        plan = _distributed(sql)
        assert plan.set_operation is not None
        assert len(plan.set_operation.branches) == 2, sql


def test_select_distinct_over_the_join_is_the_union_distinct_of_the_joins():
    plan = _distributed(f"select distinct c.name, f.amt from ({FEEDS}) f join db.c c on f.dim_id = c.cid")
    assert plan.set_operation is not None
    assert not any(b.distinct for b in plan.set_operation.branches)
    copies = setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark")
    assert copies == "IF(`c0` + `c1` > 0, 1, 0)"


def test_a_null_the_join_compares_is_cast_to_the_other_branches_type_and_later_branches_take_the_first_s_names():
    plan = _distributed(UNION_JOIN)
    first, second = _branch_sql(plan)
    assert "ON `o`.`cust` = `c`.`cid`" in first
    assert "ON CAST(NULL AS INT) = `c`.`cid`" in second
    assert "2.0 AS `amt`" in second  # an output only: the set operation casts it to the model's type
    plan = _distributed(
        "select f.id, c.name from (select * from db.fa union all select id, amt, dim_id from db.fb where code = 'x' "
        "union all select id, null as amount, null as key from db.fb) f join db.c c on f.dim_id = c.cid"
    )
    assert plan.set_operation is not None and plan.set_operation.distributed
    derived = [d.sql(dialect=DIALECT) for d in plan.set_operation.distributed[0].derived]
    assert "CAST(NULL AS INT) AS `dim_id`" in derived[2] and "NULL AS `amt`" in derived[2]
    assert all("AS `dim_id`" in d for d in derived)
    plan = _distributed(
        "select f.id, c.name from (select id, dim_id + 1 as dim_id from db.fa union all select id, dim_id from db.fb "
        "union all select id, null from db.fb) f join db.c c on f.dim_id = c.cid"
    )
    assert plan.set_operation is not None and plan.set_operation.distributed
    # one known type beside a branch the analysis cannot type: the NULL is cast, the build checks the rest
    assert "CAST(NULL AS INT)" in plan.set_operation.distributed[0].derived[2].sql(dialect=DIALECT)


def test_explain_says_the_join_is_distributed():
    text = explain(UNION_JOIN, OUTER_SCHEMA)
    assert "the query over the UNION ALL u, distributed" in text and "branch 1:" in text


def _describe(overrides: dict[str, str]):
    """A DESCRIBE QUERY of the types check: every column INT but `overrides`; the query is kept."""
    seen = []

    def describe(query):
        seen.append(query.sql(dialect="spark"))
        return defaultdict(lambda: "int", overrides)

    return describe, seen


def test_the_build_refuses_a_branch_whose_type_spark_widens_where_the_join_reads_it():
    plan = _distributed(
        "select f.id, c.name from (select id, dim_id + 1 as dim_id from db.fa union all "
        "select id, code from db.fb) f join db.c c on f.dim_id = c.cid"
    )
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert plan.set_operation.distributed[0].compared == ("dim_id",)
    describe, seen = _describe({})
    check_types(plan, describe)  # the same types: accepted
    assert len(seen) == 1 and seen[0].count("CROSS JOIN") == 2  # the union and both branches, one statement
    describe, _ = _describe({"__ivm_t0_0_0": "string", "__ivm_t0_2_0": "string"})  # Spark: STRING beside INT
    with pytest.raises(UnsupportedView) as e:
        check_types(plan, describe)
    assert "column dim_id of the UNION ALL f, which the query compares, is string in the union" in e.value.construct
    assert "int in branch 0" in e.value.construct and "cast dim_id to string" in e.value.hint
    describe, seen = _describe({})
    check_types(_distributed(f"select f.amt, c.name from ({FEEDS}) f cross join db.c c"), describe)
    assert seen == []  # the join reads no column of the union but as an output: nothing to compare


def test_two_unions_joined_are_the_union_all_of_the_join_over_each_combination_of_their_branches():
    sql = (
        f"with g as (select id, dim_id from db.fa where id > 0 union all select id, dim_id from db.fb) "
        f"select f.id, g.id as gid, c.name from ({FEEDS}) f join g on f.dim_id = g.dim_id "
        "left join db.c c on g.dim_id = c.cid"
    )
    plan = _distributed(sql)
    assert plan.set_operation is not None
    assert [b.plan.view_class for b in plan.set_operation.branches] == [ViewClass.OUTER_JOIN] * 4
    tables = [[s.table.key for s in b.plan.sources] for b in plan.set_operation.branches]
    assert tables == [
        ["db.fa", "db.fa", "db.c"],
        ["db.fa", "db.fb", "db.c"],
        ["db.fb", "db.fa", "db.c"],
        ["db.fb", "db.fb", "db.c"],
    ]
    first = _branch_sql(plan)[0]
    assert "`fa_2`.`id` > 0" in first and "`fa`.`dim_id` = `fa_2`.`dim_id`" in first  # one table twice, two names
    assert [(d.alias, d.compared) for d in plan.set_operation.distributed] == [("f", ("dim_id",)), ("g", ("dim_id",))]
    copies = setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark")
    assert copies == "((`c0` + `c1`) + `c2`) + `c3`"
    assert "distributed: one branch per combination of a branch of each (f's outermost)" in explain(sql, SCHEMA)
    # the build checks both unions' compared columns in one DESCRIBE QUERY, naming the union that differs
    describe, seen = _describe({"__ivm_t1_0_0": "bigint", "__ivm_t1_2_0": "bigint"})
    with pytest.raises(UnsupportedView) as e:
        check_types(plan, describe)
    assert "column dim_id of the UNION ALL g" in e.value.construct and "int in branch 0" in e.value.construct
    assert len(seen) == 1 and seen[0].count("CROSS JOIN") == 5
    # SELECT DISTINCT over them: the UNION (distinct) of the four joins
    plan = _distributed(f"select distinct f.id from ({FEEDS}) f join ({FEEDS}) g on f.id = g.id")
    assert plan.set_operation is not None and len(plan.set_operation.branches) == 4


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            f"select c.name, f.id from ({FEEDS}) f join db.r r on f.id = r.rid right join db.c c on r.cid = c.cid",
            "null-supplied side of a RIGHT",
        ),
        (
            f"select f.id, g.id as gid from ({FEEDS}) f left join ({FEEDS}) g on f.id = g.id",
            "two UNION ALL subqueries, one on the null-supplied side",
        ),
        (f"with f as ({FEEDS}) select a.id from f a join f b on a.id = b.dim_id", "the UNION ALL CTE f read 2 times"),
        (
            f"select f.id from ({FEEDS} union all {FEEDS}) f join ({FEEDS} union all {FEEDS}) g on f.id = g.id "
            f"join ({FEEDS}) h on g.id = h.id",
            "whose branches combine 32 ways (more than 16",
        ),
        (
            "select f.id, c.name from (select id, dim_id from db.fa union all select id, code from db.fb) f "
            "join db.c c on f.dim_id = c.cid",
            "a UNION ALL column dim_id of types int and string read by the join",
        ),
        (
            "select f.id, c.name from (select distinct id, dim_id from db.fa union all select id, dim_id from db.fb) f "
            "join db.c c on f.dim_id = c.cid",
            "SELECT DISTINCT in a branch of a UNION ALL subquery",
        ),
        (
            "select f.id, c.name from (select id, dim_id from db.fa union select id, dim_id from db.fb) f "
            "join db.c c on f.dim_id = c.cid",
            "set operation UNION in a subquery or CTE",
        ),
        (
            f"select f.id, c.name from db.c c right join ({FEEDS} where code = 'x') f on c.cid = f.dim_id",
            "in the join over a branch of a UNION ALL",
        ),
        (f"select f.id, c.name from ({FEEDS}) f join db.c c on f.dim_id = c.cid limit 3", "LIMIT"),
    ],
)
def test_refused_by_name(sql, construct):
    with pytest.raises(UnsupportedView) as e:
        analyze(sql, SCHEMA)
    assert construct in e.value.construct


# A SELECT with no join over a UNION ALL: the same distribution, σπ(B1 ⊎ B2) = σπ(B1) ⊎ σπ(B2).
def test_a_select_with_no_join_over_the_union_is_the_union_all_of_the_select_over_each_branch():
    plan = _distributed(f"select id, dim_id * 2 as d2, amt from ({FEEDS}) u where dim_id > 3")
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert [b.plan.view_class for b in plan.set_operation.branches] == [ViewClass.SINGLE_SOURCE] * 2
    assert [(s.index, s.table.key) for s in plan.sources] == [(0, "db.fa"), (1, "db.fb")]
    first, second = _branch_sql(plan)
    assert "`fa`.`dim_id` * 2 AS `d2`" in first and "WHERE `fa`.`dim_id` > 3" in first
    assert "`fb`.`dim_id` * 2 AS `d2`" in second and "WHERE `fb`.`dim_id` > 3" in second
    assert [o.name for o in plan.outputs] == ["id", "d2", "amt"]
    # dim_id is filtered and computed: compared, the build checks it against Spark's types; id and
    # amt (decimal in one branch, int in the other) are plain outputs, which the set operation casts
    assert plan.set_operation.distributed[0].compared == ("dim_id",)
    assert rules_for(plan) is setops.RULES
    assert setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark") == "`c0` + `c1`"
    describe, seen = _describe({"__ivm_t0_0_0": "bigint", "__ivm_t0_2_0": "bigint"})
    with pytest.raises(UnsupportedView) as e:
        check_types(plan, describe)
    assert "column dim_id of the UNION ALL u" in e.value.construct and "int in branch 0" in e.value.construct
    assert seen[0].count("CROSS JOIN") == 2
    # a CTE read once, a star, and a union nested in parentheses (three branches)
    for sql, width in [
        (f"with u as ({FEEDS}) select * from u where u.id is not null", 2),
        (f"select * from ({FEEDS} union all (select id, amt, dim_id from db.fa where id > 2)) u", 3),
    ]:
        plan = _distributed(sql)
        assert plan.set_operation is not None and len(plan.set_operation.branches) == width, sql
        assert [o.name for o in plan.outputs] == ["id", "amt", "dim_id"], sql


def test_a_null_the_select_filters_on_is_cast_and_a_column_of_two_known_types_it_filters_on_is_refused():
    plan = _distributed(
        "select id, dim_id + 1 as next from (select id, dim_id from db.fa union all select id, null from db.fb) u "
        "where dim_id > 0"
    )
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert plan.set_operation.distributed[0].compared == ("dim_id",)
    assert "CAST(NULL AS INT) + 1 AS `next`" in _branch_sql(plan)[1]
    with pytest.raises(UnsupportedView) as e:
        analyze(
            "select id from (select id, dim_id from db.fa union all select id, code from db.fb) u where dim_id = 1",
            SCHEMA,
        )
    assert "a UNION ALL column dim_id of types int and string read by the query" in e.value.construct
    # the same column as a plain output only: the set operation casts it, nothing to compare
    plan = _distributed("select id, dim_id from (select id, dim_id from db.fa union all select id, code from db.fb) u")
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert plan.set_operation.distributed[0].compared == ()


def test_an_aggregate_or_select_distinct_over_the_union_stays_an_aggregate_over_its_leaf():
    for sql in [
        f"select distinct dim_id from ({FEEDS}) u where amt > 3",
        f"select dim_id, count(*) as n from ({FEEDS}) u group by dim_id",
        f"select count(*) as n from ({FEEDS}) u",
    ]:
        plan = analyze(sql, SCHEMA)
        assert plan.view_class is ViewClass.AGGREGATE_JOIN and plan.union is not None, sql
        assert plan.set_operation is None, sql


@pytest.mark.parametrize(
    "sql,construct",
    [
        (
            f"select id from ({FEEDS}) u where exists (select 1 from db.c c where c.cid = u.dim_id)",
            "a query over a UNION ALL subquery that is not an aggregate or a window (semi-join)",
        ),
        (
            f"select id from ({FEEDS}) u where dim_id in (select cid from db.c)",
            "a query over a UNION ALL subquery that is not an aggregate or a window (semi-join)",
        ),
        (f"with u as ({FEEDS}) select id from u where id in (select dim_id from u)", "UNION ALL in a subquery or CTE"),
        (f"with u as ({FEEDS}), v as (select id from u) select id from u", "the UNION ALL CTE u read 2 times"),
        (
            "select id from (select id from db.fa union all select id from (select id from db.fb union all "
            "select id from db.fa) x) u",
            "a query over a UNION ALL subquery branch of a set operation",
        ),
        (f"select id from ({FEEDS}) u limit 3", "LIMIT, in the query over a branch of a UNION ALL"),
    ],
)
def test_refused_over_the_union_alone_by_name(sql, construct):
    with pytest.raises(UnsupportedView) as e:
        analyze(sql, SCHEMA)
    assert construct in e.value.construct


NULL_SIDE = (
    f"select c.name, f.amt, f.id + 1 as nx from db.c c left join ({FEEDS.replace('db.fa', 'db.fa where id > 0', 1)}) "
    "f on f.dim_id = c.cid and f.id > 1 where c.name > 'a' or f.id is null"
)


def test_the_union_on_the_null_supplied_side_is_the_inner_joins_and_one_padded_outer_join():
    plan = _distributed(NULL_SIDE)
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert plan.set_operation.distributed[0].padded == 2
    branches = plan.set_operation.branches
    assert [b.plan.view_class for b in branches] == [ViewClass.INNER_JOIN, ViewClass.INNER_JOIN, ViewClass.OUTER_JOIN]
    first, second, padded = _branch_sql(plan)
    assert "FROM `db`.`c` AS `c` JOIN `db`.`fa` AS `fa` ON (`fa`.`dim_id` = `c`.`cid` AND `fa`.`id` > 1)" in first
    assert "AND `fa`.`id` > 0" in first and "WHERE `c`.`name` > 'a' OR `fa`.`id` IS NULL" in first
    assert "JOIN `db`.`fb` AS `fb` ON `fb`.`dim_id` = `c`.`cid` AND `fb`.`id` > 1" in second
    # each branch a LEFT JOIN item under a fresh alias, its WHERE in ON; the union's columns NULL
    assert padded == (
        "SELECT `c`.`name` AS `name`, NULL AS `amt`, CAST(NULL AS INT) + 1 AS `nx` FROM `db`.`c` AS `c` "
        "LEFT JOIN `db`.`fa` AS `f_b0` ON (`f_b0`.`dim_id` = `c`.`cid` AND `f_b0`.`id` > 1) AND `f_b0`.`id` > 0 "
        "LEFT JOIN `db`.`fb` AS `f_b1` ON `f_b1`.`dim_id` = `c`.`cid` AND `f_b1`.`id` > 1 "
        "WHERE (`c`.`name` > 'a' OR CAST(NULL AS INT) IS NULL) AND `f_b0`.`dim_id` IS NULL AND `f_b1`.`dim_id` IS NULL"
    )
    copies = setops.multiplicity(plan.set_operation.tree, lambda i: col(f"c{i}")).sql(dialect="spark")
    assert copies == "(`c0` + `c1`) + `c2`"
    assert "branch 2: the rows that match no row of f" in explain(NULL_SIDE, SCHEMA)
    # written LEFT OUTER JOIN (or RIGHT OUTER): the matched copies are inner joins, no bare OUTER JOIN
    for outer in (
        NULL_SIDE.replace("left join", "left outer join"),
        f"select c.name from ({FEEDS}) f right outer join db.c c on f.dim_id = c.cid",
    ):
        assert outer != NULL_SIDE
        for sql in _branch_sql(_distributed(outer))[:2]:
            assert "OUTER" not in sql and " JOIN `db`." in sql, sql


def test_the_union_mirrored_after_inner_joins_and_with_aliases_taken():
    plan = _distributed(f"select c.name, f.amt from ({FEEDS}) f right join db.c c on f.dim_id = c.cid order by f.amt")
    assert "FROM `db`.`c` AS `c` LEFT JOIN `db`.`fa` AS `f_b0`" in _branch_sql(plan)[2]
    assert "ORDER" not in _branch_sql(plan)[2]
    plan = _distributed(
        f"select f_b0.name, f.id, r.label from db.c f_b0 join db.r r on r.cid = f_b0.cid "
        f"left join ({FEEDS}) f on f_b0.cid = f.dim_id"
    )
    padded = _branch_sql(plan)[2]
    assert "JOIN `db`.`r` AS `r` ON `r`.`cid` = `f_b0`.`cid` LEFT JOIN `db`.`fa` AS `f_b0_1`" in padded
    assert "`f_b0_1`.`dim_id` IS NULL AND `f_b1`.`dim_id` IS NULL" in padded


FULL = (
    f"select c.name, f.amt, coalesce(f.id, c.cid) as k from db.c c full outer join "
    f"({FEEDS.replace('db.fa', 'db.fa where id > 0', 1)}) f on f.dim_id = c.cid and f.id > 1 "
    "where c.name > 'a' or f.id is null"
)


def test_a_full_join_with_the_union_is_each_branch_preserved_and_the_padded_rows():
    """`D ⟗ (B1 ⊎ B2)`: each branch on the preserved side of a LEFT JOIN with D (its rows, matched
    or not), and D's rows that match no row of any branch, padded: either order of the FULL JOIN."""
    plan = _distributed(FULL)
    assert plan.set_operation is not None and plan.set_operation.distributed
    assert plan.set_operation.distributed[0].padded == 2
    assert [b.plan.view_class for b in plan.set_operation.branches] == [ViewClass.OUTER_JOIN] * 3
    first, second, padded = _branch_sql(plan)
    assert "FROM `db`.`fa` AS `fa` LEFT OUTER JOIN `db`.`c` AS `c` ON `fa`.`dim_id` = `c`.`cid` AND `fa`.`id` > 1" in (
        first
    )
    assert "WHERE (`c`.`name` > 'a' OR `fa`.`id` IS NULL) AND `fa`.`id` > 0" in first  # the branch's WHERE merged
    assert second.startswith("SELECT `c`.`name` AS `name`, `fb`.`amt` AS `amt`, COALESCE(`fb`.`id`, `c`.`cid`) AS `k`")
    assert "FROM `db`.`fb` AS `fb` LEFT OUTER JOIN `db`.`c` AS `c`" in second
    assert padded.startswith(
        "SELECT `c`.`name` AS `name`, NULL AS `amt`, COALESCE(CAST(NULL AS INT), `c`.`cid`) AS `k` "
        "FROM `db`.`c` AS `c` LEFT JOIN `db`.`fa` AS `f_b0` "
        "ON (`f_b0`.`dim_id` = `c`.`cid` AND `f_b0`.`id` > 1) AND `f_b0`.`id` > 0 "
    )
    assert padded.endswith("AND `f_b0`.`dim_id` IS NULL AND `f_b1`.`dim_id` IS NULL")
    mirrored = _branch_sql(_distributed(f"select c.name, f.id from ({FEEDS}) f full join db.c c on f.dim_id = c.cid"))
    assert "FROM `db`.`fa` AS `fa` LEFT JOIN `db`.`c` AS `c`" in mirrored[0]
    assert "FROM `db`.`c` AS `c` LEFT JOIN `db`.`fa` AS `f_b0`" in mirrored[2]
    # `c.*` keeps its columns where they are; `*` would read the union's by position: refused below
    plan = _distributed(f"select c.*, f.id from db.c c full join ({FEEDS}) f on f.dim_id = c.cid")
    assert [o.name for o in plan.outputs] == [*SCHEMA["db.c"], "id"]


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        (
            f"select c.name, f.id from db.c c full join ({FEEDS}) f on f.dim_id = c.cid join db.r r on r.cid = c.cid",
            "in a FULL JOIN with another join",
        ),
        (
            f"select c.name, f.id from db.r r join db.c c on r.cid = c.cid full join ({FEEDS}) f on f.dim_id = c.cid",
            "in a FULL JOIN with another join",
        ),
        (
            f"select c.name, f.id from ({FEEDS}) f join db.r r on f.id = r.rid full join db.c c on r.cid = c.cid",
            "a UNION ALL subquery in a FULL JOIN",
        ),
        (f"select * from db.c c full join ({FEEDS}) f on f.dim_id = c.cid", "SELECT * over"),
        (f"select c.name, f.id from db.c c full join ({FEEDS}) f using (id)", "joined without ON"),
        (f"select c.name, f.id from db.c c full join ({FEEDS}) f on f.dim_id > c.cid", "has no equality"),
        (f"select c.name, f.id from db.c c left join ({FEEDS}) f on f.dim_id > c.cid", "has no equality"),
        (
            f"select c.name, f.id from db.c c left join ({FEEDS}) f on f.dim_id = c.cid or f.id = c.cid",
            "has no equality",
        ),
        (
            "select c.name, f.id from db.c c left join (select id, amt, dim_id from db.fa union all "
            "select id, null, null from db.fb) f on f.dim_id = c.cid",
            "of branch 1's table",
        ),
        (
            "select c.name, f.id from db.c c left join (select a.id, a.amt, a.dim_id from db.fa a join db.c x "
            "on a.dim_id = x.cid union all select id, amt, dim_id from db.fb) f on f.dim_id = c.cid",
            "branch 0 of a UNION ALL subquery on the null-supplied side",
        ),
        (
            f"select c.name, f.id, r.label from db.c c left join db.r r on r.cid = c.cid left join ({FEEDS}) f "
            "on f.dim_id = c.cid",
            "with an outer join or a later join",
        ),
        (
            f"select c.name, f.id, r.label from db.c c left join ({FEEDS}) f on f.dim_id = c.cid left join db.r r "
            "on r.cid = c.cid",
            "with an outer join or a later join",
        ),
        (
            f"select c.name, f.id from ({FEEDS}) f right join db.c c on f.dim_id = c.cid join db.r r on r.cid = c.cid",
            "null-supplied side of a RIGHT JOIN with another join",
        ),
        (f"select c.name, f.id from db.c c left join ({FEEDS}) f using (id)", "joined without ON"),
        (f"select c.name, dim_id from db.c c left join ({FEEDS}) f on f.dim_id = c.cid", "an unqualified column"),
        (f"select c.name, f.* from db.c c left join ({FEEDS}) f on f.dim_id = c.cid", "SELECT * over"),
        (
            "select c.name, f.v + 1 as w from db.c c left join (select dim_id, id + 1 as v from db.fa union all "
            "select dim_id, id * 2 from db.fb) f on f.dim_id = c.cid",
            "column v of a UNION ALL subquery on the null-supplied side",
        ),
    ],
)
def test_what_the_null_supplied_side_refuses_by_name(sql, construct):
    with pytest.raises(UnsupportedView, match="fast_mv cannot maintain") as e:
        analyze(sql, SCHEMA)
    assert construct in str(e.value)
