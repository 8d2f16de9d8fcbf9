"""Table-driven tests of `analyze`: no Spark, a few seconds.

The cases live in tests/unit/cases.py (the Spark equivalence test reuses them).
"""

from __future__ import annotations

import dataclasses

import pytest

from dbt_ivm.analyze import analyze, check_constructs, normalize, parse, source_tables
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import (
    HIDDEN_PREFIX,
    AggregateFunction,
    InnerGroup,
    JoinNode,
    Leaf,
    OuterJoin,
    Role,
    Side,
    ViewClass,
    ViewPlan,
)
from tests.unit.cases import ACCEPTED, REFUSED, SCHEMAS

SIDE_TAG = {Side.PRESERVED: "P", Side.NULL_SUPPLIED: "N", Side.BOTH: "B"}


def tree_text(plan: ViewPlan, node: JoinNode | None = None) -> str:
    """'inner(o, c)', 'left(o, inner(c, r))', 'full(a, b)'; a leaf is its source's alias."""
    node = plan.tree if node is None else node
    if isinstance(node, Leaf):
        return plan.sources[node.source].alias
    if isinstance(node, InnerGroup):
        return "inner(" + ", ".join(tree_text(plan, c) for c in node.children) + ")"
    assert isinstance(node, OuterJoin)
    return f"{node.kind.value}({tree_text(plan, node.preserved)}, {tree_text(plan, node.null_supplied)})"


def sides_text(plan: ViewPlan) -> str:
    return " ".join(f"{s.alias}:{SIDE_TAG[s.side]}" for s in plan.sources)


def hidden_text(plan: ViewPlan) -> str:
    assert all(h.name.startswith(HIDDEN_PREFIX) for h in plan.hidden)
    return " ".join(h.name[len(HIDDEN_PREFIX) :] for h in plan.hidden)


def test_the_table_is_big_enough_and_ids_are_unique():
    ids = [c.id for c in ACCEPTED + REFUSED]
    assert len(ids) >= 110
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.id)
def test_accepted(case):
    plan = analyze(case.sql, SCHEMAS[case.schema])
    assert plan.view_class is case.view_class
    assert tree_text(plan) == case.tree
    assert sides_text(plan) == case.sides
    assert hidden_text(plan) == case.hidden
    if case.columns is not None:
        assert tuple(o.name for o in plan.outputs) == case.columns
    for text in case.normalized_has:
        assert text in plan.normalized_sql


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.id)
def test_normalized_sql_is_a_fixpoint(case):
    """The normalized SQL analyzes to the same plan: nothing was left half-normalized."""
    plan = analyze(case.sql, SCHEMAS[case.schema])
    again = analyze(plan.normalized_sql, SCHEMAS[case.schema])
    assert again.normalized_sql == plan.normalized_sql
    assert again.view_class is plan.view_class
    assert tree_text(again) == tree_text(plan)
    assert again.hidden == plan.hidden


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.id)
def test_refused(case):
    with pytest.raises(UnsupportedView) as info:
        analyze(case.sql, SCHEMAS[case.schema])
    message = str(info.value)
    assert case.message in message
    assert message.startswith("fast_mv cannot maintain this model: ")
    assert "; " in message and info.value.hint  # says what to do instead


# --- details of the plan that the table does not show -------------------------------------------

SHOP = SCHEMAS["shop"]


@pytest.mark.parametrize(
    "sql",
    [
        "select distinct status, count(*) as n from eq_shop.orders group by status",
        "select distinct customer_id, status, max(amount) as m from eq_shop.orders group by 2, customer_id "
        "having count(*) > 1",
        "select distinct count(*) as n, sum(amount) as s from eq_shop.orders",
    ],
)
def test_a_distinct_over_rows_distinct_already_is_the_plan_without_it(sql):
    """Each group is one row (every GROUP BY expression selected), or a global aggregate's one row:
    the view is maintained exactly as the same SQL without DISTINCT, every refresh path included."""
    assert analyze(sql, SHOP) == analyze(sql.replace("select distinct", "select"), SHOP)


def test_refusal_gives_the_position():
    with pytest.raises(UnsupportedView) as info:
        analyze("select id\nfrom eq_shop.orders\nlimit 3", SHOP)
    assert info.value.position is not None and info.value.position.startswith("line 3, column ")
    assert "drop the LIMIT" in str(info.value)


def test_source_columns_are_the_used_ones_with_types():
    plan = analyze(
        "select o.id, c.name from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id where o.amount > 0",
        SHOP,
    )
    assert plan.sources[0].columns == (("id", "int"), ("customer_id", "int"), ("amount", "decimal(10,2)"))
    assert plan.sources[1].columns == (("id", "int"), ("name", "string"))
    assert [str(t) for t in plan.tables] == ["eq_shop.orders", "eq_shop.customers"]


def test_star_uses_every_column():
    plan = analyze("select * from eq_shop.regions", SHOP)
    assert plan.sources[0].columns == (("id", "int"), ("name", "string"))


def test_self_join_is_two_sources_of_one_table():
    plan = analyze("select a.id, b.id as bid from eq_shop.orders a join eq_shop.orders b on a.id = b.id", SHOP)
    assert [s.index for s in plan.sources] == [0, 1]
    assert len(plan.tables) == 1
    assert [s.rid for s in plan.sources] == ["__ivm_rid_0", "__ivm_rid_1"]


def test_aggregate_ir():
    plan = analyze(
        "select status, count(*) as n, sum(amount) as total, avg(amount) as mean, "
        "count(customer_id) as nc, max(amount) - min(amount) as spread, count(distinct region_id) as regions "
        "from eq_shop.orders group by status having count(*) > 1 and sum(amount) > 0",
        SHOP,
    )
    got = [(a.function, a.argument.sql("spark") if a.argument is not None else None) for a in plan.aggregates]
    assert got == [
        (AggregateFunction.COUNT_STAR, None),
        (AggregateFunction.SUM, "`orders`.`amount`"),
        (AggregateFunction.AVG, "`orders`.`amount`"),
        (AggregateFunction.COUNT, "`orders`.`customer_id`"),
        (AggregateFunction.MAX, "`orders`.`amount`"),
        (AggregateFunction.MIN, "`orders`.`amount`"),
        (AggregateFunction.RECOMPUTED, None),
    ]
    assert [g.sql("spark") for g in plan.group_by] == ["`orders`.`status`"]
    assert plan.having is not None and plan.having.sql("spark") == "COUNT(*) > 1 AND SUM(`orders`.`amount`) > 0"
    roles = [(h.name, h.role) for h in plan.hidden]
    assert roles == [
        ("__ivm_g_0", Role.GROUP_KEY),
        ("__ivm_count", Role.GROUP_COUNT),
        ("__ivm_nn_1", Role.NON_NULL_COUNT),
        ("__ivm_a_1", Role.SUM),
        ("__ivm_nn_2", Role.NON_NULL_COUNT),
        ("__ivm_a_2", Role.SUM),
        ("__ivm_nn_3", Role.NON_NULL_COUNT),
        ("__ivm_a_4", Role.EXTREME),
        ("__ivm_a_5", Role.EXTREME),
        ("__ivm_a_6", Role.VALUE),
    ]
    assert not plan.is_global


def test_distinct_is_a_group_per_row_with_a_count():
    plan = analyze("select distinct status, region_id from eq_shop.orders", SHOP)
    assert plan.distinct and plan.view_class is ViewClass.AGGREGATE
    assert plan.aggregates == () and [g.sql("spark") for g in plan.group_by] == [
        "`orders`.`status`",
        "`orders`.`region_id`",
    ]
    assert [h.name for h in plan.hidden] == ["__ivm_g_0", "__ivm_g_1", "__ivm_count"]
    assert analyze("select count(*) as n from eq_shop.orders", SHOP).is_global


def test_outer_join_null_intolerance():
    plan = analyze("select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id", SHOP)
    assert isinstance(plan.tree, OuterJoin) and plan.tree.null_intolerant
    plan = analyze(
        "select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id or c.id is null", SHOP
    )
    assert isinstance(plan.tree, OuterJoin) and not plan.tree.null_intolerant


def test_right_join_keeps_its_on_predicate():
    plan = analyze("select o.id from eq_shop.orders o right join eq_shop.customers c on o.customer_id = c.id", SHOP)
    assert isinstance(plan.tree, OuterJoin)
    assert plan.tree.kind == "left"
    assert plan.tree.on.sql("spark") == "`o`.`customer_id` = `c`.`id`"
    assert "RIGHT JOIN" in plan.normalized_sql


def test_outer_to_inner_rewrites_the_query_too():
    plan = analyze(
        "select o.id, c.name from eq_shop.orders o full join eq_shop.customers c "
        "on o.customer_id = c.id where o.amount > 0",
        SHOP,
    )
    assert "LEFT JOIN" in plan.normalized_sql and "FULL" not in plan.normalized_sql
    assert plan.where is not None


def test_inner_group_keeps_its_predicates():
    plan = analyze(
        "select o.id from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id "
        "join eq_shop.regions r on c.region_id = r.id",
        SHOP,
    )
    assert isinstance(plan.tree, InnerGroup)
    assert [p.sql("spark") for p in plan.tree.predicates] == [
        "`o`.`customer_id` = `c`.`id`",
        "`c`.`region_id` = `r`.`id`",
    ]


def test_where_is_kept_apart():
    plan = analyze("select id from eq_shop.orders where amount > 5 and status = 'paid'", SHOP)
    assert plan.where is not None
    assert plan.where.sql("spark") == "`orders`.`amount` > 5 AND `orders`.`status` = 'paid'"


def test_definition_hash_follows_meaning_not_spelling():
    a = analyze("select id, amount from eq_shop.orders where amount > 1", SHOP)
    b = analyze("SELECT ID as id, AMOUNT as amount FROM EQ_SHOP.ORDERS WHERE Orders.Amount > 1", SHOP)
    c = analyze("select id, amount from eq_shop.orders where amount > 2", SHOP)
    d = analyze("select id, amount from eq_shop.orders where 1 + 0 < amount", SHOP)  # runs as written
    assert a.definition_hash == b.definition_hash
    assert a.definition_hash != c.definition_hash
    assert a.definition_hash != d.definition_hash


def test_source_tables():
    sql = (
        "with x as (select id from eq_shop.orders) select /*+ BROADCAST(c) */ x.id, c.name "
        "from x join eq_shop.customers c on x.id = c.id join EQ_SHOP.Orders o2 on o2.id = x.id"
    )
    assert [t.key for t in source_tables(sql)] == ["eq_shop.orders", "eq_shop.customers"]


def test_public_helpers_on_their_own():
    tree = parse("select id from eq_shop.orders")
    check_constructs(tree)
    normalized = normalize(tree, SHOP)
    assert normalized.sql("spark") == "SELECT `orders`.`id` AS `id` FROM `eq_shop`.`orders` AS `orders`"
    assert tree.sql("spark") == "SELECT id FROM eq_shop.orders"  # normalize works on a copy
    with pytest.raises(UnsupportedView, match="LIMIT"):
        check_constructs(parse("select id from eq_shop.orders limit 1"))


def test_schema_keys_are_case_and_quote_insensitive():
    schema = {"`EQ_SHOP`.`Orders`": {"ID": "int", "Amount": "double"}}
    plan = analyze("select id, amount from eq_shop.orders", schema)
    assert plan.sources[0].columns == (("ID", "int"), ("Amount", "double"))


@pytest.mark.parametrize(
    "sql",
    [
        "select t.a from db.t t join db.u u on t.a = u.a",
        "select a from db.t union all select a from db.u",
        "select count(*) as n from (select a from db.t union all select a from db.u) x",
    ],
)
def test_a_source_with_no_columns_is_refused_by_name_not_by_sqlglot_s_schema_error(sql):
    with pytest.raises(UnsupportedView, match=r"source db\.u has no columns"):
        analyze(sql, {"db.t": {"a": "int"}, "db.u": {}})
    assert analyze("select a from db.t", {"db.t": {"a": "int"}, "db.u": {}}).outputs  # an unread one is no matter


def test_mixed_schema_depths_are_refused():
    with pytest.raises(UnsupportedView, match="with and without a database"):
        analyze("select id from eq_shop.orders", {"eq_shop.orders": {"id": "int"}, "regions": {"id": "int"}})


def test_plan_is_frozen_and_query_is_not_shared_with_the_input():
    sql = "select id from eq_shop.orders where amount > 1"
    tree = parse(sql)
    plan = analyze(sql, SHOP)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.view_class = ViewClass.AGGREGATE  # type: ignore[misc]
    normalized = normalize(tree, SHOP)
    assert normalized is not tree and tree.sql("spark") == "SELECT id FROM eq_shop.orders WHERE amount > 1"
    plan.query.set("where", None)  # another plan of the same SQL is not affected
    assert analyze(sql, SHOP).where is not None and "WHERE" in analyze(sql, SHOP).normalized_sql


def test_a_parsed_tree_analyzes_as_its_sql_and_is_left_as_it_was():
    """A caller that parsed the model (for its source tables) hands `analyze` the tree: one parse."""
    sql = "select o.id, c.name from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id"
    tree = parse(sql)
    before = tree.sql("spark")
    assert source_tables(tree) == source_tables(sql)
    plan, again = analyze(tree, SHOP), analyze(sql, SHOP)
    assert plan.normalized_sql == again.normalized_sql and plan.sources == again.sources
    assert tree.sql("spark") == before


def test_comments_and_a_trailing_semicolon_are_fine():
    """dbt's compiled models often start with comments; some end with a semicolon."""
    plan = analyze("-- large orders\nselect id /* the key */ from eq_shop.orders -- done\n;", SHOP)
    assert plan.view_class is ViewClass.SINGLE_SOURCE
    assert [o.name for o in plan.outputs] == ["id"]


def test_having_alone_aggregates_globally():
    plan = analyze("select count(*) as n from eq_shop.orders having count(*) > 0", SHOP)
    assert plan.view_class is ViewClass.AGGREGATE and plan.group_by == ()


@pytest.mark.parametrize(
    "sql",
    [
        "select sum(n) as s from (select status, count(*) as n from eq_shop.orders group by status) t",
        "select status, max(n) as most from (select status, customer_id, count(*) as n from eq_shop.orders "
        "group by status, customer_id) t group by status",
        "select c.name, t.n from eq_shop.customers c join "
        "(select customer_id, count(*) as n from eq_shop.orders group by customer_id) t on t.customer_id = c.id",
    ],
)
def test_an_aggregate_over_an_aggregate_says_split_it_into_two_models(sql):
    with pytest.raises(UnsupportedView) as info:
        analyze(sql, SHOP)
    assert "split it into two fast_mv models" in info.value.hint and "Chains" in info.value.hint


def test_a_calculated_select_keeps_the_aggregates_state_and_computes_in_the_view():
    """The outer query's expressions are written over the aggregate's: the state is the
    aggregate's (the inner column the outer query does not read is not kept), the outer WHERE
    is HAVING after the inner one."""
    plan = analyze(
        "with g as (select status, sum(amount) as total, count(*) as n, max(id) as unused from eq_shop.orders "
        "group by status having min(id) > 0) select status, total / n as mean from g where n > 1",
        SHOP,
    )
    assert [o.name for o in plan.outputs] == ["status", "mean"]
    assert [a.call.sql(dialect="spark") for a in plan.aggregates] == [
        "SUM(`orders`.`amount`)",
        "COUNT(*)",
        "MIN(`orders`.`id`)",
    ]
    assert plan.having is not None and plan.having.sql(dialect="spark") == "MIN(`orders`.`id`) > 0 AND (COUNT(*) > 1)"


def test_the_top_level_order_by_is_kept_as_an_order_of_the_models_columns():
    from dbt_ivm import render
    from dbt_ivm.ir import Ordering

    case = next(c for c in ACCEPTED if c.id == "order_by")
    plan = analyze(case.sql, SCHEMAS[case.schema])
    assert plan.order == (Ordering("name", True, True), Ordering("amt"), Ordering("id"))
    assert "ORDER BY" not in plan.normalized_sql  # the storage has no order
    unordered = analyze(case.sql.split(" order by")[0], SCHEMAS[case.schema])
    assert unordered.order == () and unordered.definition_hash != plan.definition_hash
    view = render.sql(render.ordered(parse("select id, amt, name from v"), plan.order))
    assert view.endswith("ORDER BY `name` DESC NULLS FIRST, `amt` ASC, `id` ASC"), view
    last = render.sql(render.ordered(parse("select id from v"), (Ordering("id", False, False),)))
    assert last.endswith("ORDER BY `id` ASC NULLS LAST"), last
