"""The model SQL cases of `analyze`: accepted ones with their class, join tree, PSNS sides and
hidden columns; refused ones with the construct their message must name.

Shared by tests/unit/test_analyze.py (no Spark) and
integration_tests/test_normalize_equivalence.py (the normalized SQL of every accepted case
must return the same multiset as the model's SQL on Spark).

Notation:
  tree    "inner(o, c)", "left(o, inner(c, r))", "full(a, b)"; a leaf is the source's alias.
          left(P, N): P is the preserved side, N the null-supplied side (RIGHT JOIN is
          rewritten to LEFT with the sides swapped).
  sides   "o:P c:N": each source's PSNS side, P preserved, N null-supplied,
          B both (a side of a full outer join).
  hidden  the hidden column names without the "__ivm_" prefix, in plan order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dbt_ivm.ir import ViewClass

SINGLE = ViewClass.SINGLE_SOURCE
INNER = ViewClass.INNER_JOIN
OUTER = ViewClass.OUTER_JOIN
AGG = ViewClass.AGGREGATE
AGG_JOIN = ViewClass.AGGREGATE_JOIN
WINDOW = ViewClass.WINDOW

# Each schema lives in its own database, so the Spark test can create it without clashing.
SCHEMAS: dict[str, dict[str, dict[str, str]]] = {
    # the example project's shop, widened to six tables for the n-way joins
    "shop": {
        "eq_shop.orders": {
            "id": "int",
            "customer_id": "int",
            "amount": "decimal(10,2)",
            "status": "string",
            "region_id": "int",
            "created": "date",
        },
        "eq_shop.customers": {"id": "int", "name": "string", "region_id": "int", "tier": "string"},
        "eq_shop.regions": {"id": "int", "name": "string"},
        "eq_shop.items": {"order_id": "int", "sku": "string", "qty": "int", "price": "double"},
        "eq_shop.products": {"sku": "string", "title": "string", "category_id": "int"},
        "eq_shop.categories": {"id": "int", "label": "string"},
    },
    # Oracle fast refresh posts (seeds 000, 001, 002)
    "oracle": {
        "eq_ora.test_t1": {"pk1": "int", "j1_2": "int", "x1": "string"},
        "eq_ora.test_t2": {"pk2": "int", "j2_1": "int", "j2_3": "int", "x2": "string"},
        "eq_ora.test_t3": {"pk3": "int", "j3_2": "int", "x3": "string"},
        "eq_ora.test_outer": {"pk": "int", "jouter": "int", "x": "string"},
        "eq_ora.test_inner": {"pk": "int", "jinner": "int", "x": "string"},
        "eq_ora.test_master": {"whe": "int", "gby": "int", "dat": "int"},
    },
    # pg_ivm transition tables post (seed 003): R, S, T
    "pg": {
        "eq_pg.r": {"i": "int", "x": "int"},
        "eq_pg.s": {"i": "int", "j": "int", "y": "int"},
        "eq_pg.t": {"j": "int", "z": "int"},
    },
    # Nica, "Immediate Materialized Views with Outerjoins" (seed 004): R, S, T, W, R1, R2
    "nica": {f"eq_nica.{t}": {"k": "int", "a": "int", "b": "string"} for t in ("r", "s", "t", "w", "r1", "r2")},
    # identifiers that need quotes: reserved words, spaces, mixed case
    "odd": {
        "eq_odd.select": {"from": "int", "Order Id": "int", "Group": "string", "MixedCase": "int"},
        "eq_odd.MixedTable": {"Key": "int", "where": "string"},
    },
    # a source whose column uses fast_mv's reserved prefix
    "reserved": {"eq_res.t": {"id": "int", "__ivm_flag": "int"}},
}


@dataclass(frozen=True)
class Accepted:
    id: str
    sql: str
    view_class: ViewClass
    tree: str
    sides: str
    hidden: str
    schema: str = "shop"
    columns: tuple[str, ...] | None = None  # output column names, when the case is about them
    normalized_has: tuple[str, ...] = field(default=())  # substrings of the normalized SQL


@dataclass(frozen=True)
class Refused:
    id: str
    sql: str
    message: str  # a substring of the refusal: the construct's name
    schema: str = "shop"


def ok(id, sql, view_class, tree, sides, hidden, schema="shop", columns=None, normalized_has=()):
    return Accepted(id, sql, view_class, tree, sides, hidden, schema, columns, tuple(normalized_has))


def no(id, sql, message, schema="shop"):
    return Refused(id, sql, message, schema)


RID1 = "rid_0 count"
RID2 = "rid_0 rid_1 count"
RID3 = "rid_0 rid_1 rid_2 count"

ACCEPTED: list[Accepted] = [
    # --- single source: stars, columns, aliases ----------------------------------------
    ok(
        "star",
        "select * from eq_shop.orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        columns=("id", "customer_id", "amount", "status", "region_id", "created"),
    ),
    ok("table_star", "select o.* from eq_shop.orders o", SINGLE, "o", "o:P", RID1),
    ok(
        "star_and_expression",
        "select *, amount * 2 as double_amount from eq_shop.orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "unqualified_columns",
        "select id, amount from eq_shop.orders where status = 'paid'",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "aliases",
        "select o.id as order_id, o.amount * 2 as double_amount, upper(o.status) as status_code "
        "from eq_shop.orders as o",
        SINGLE,
        "o",
        "o:P",
        RID1,
        columns=("order_id", "double_amount", "status_code"),
    ),
    ok(
        "example_large_orders",
        "select id as order_id, customer_id, amount, amount * 1.2 as amount_with_tax, "
        "upper(status) as status_code from eq_shop.orders where amount >= 100 or status is null",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok("no_columns_used", "select 1 as one from eq_shop.orders", SINGLE, "orders", "orders:P", RID1),
    ok(
        "case_expression",
        "select id, case when amount > 100 then 'big' when amount is null then 'none' else 'small' end "
        "as size from eq_shop.orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "in_list_and_between",
        "select id from eq_shop.orders where status in ('paid', 'sent') and amount between 10 and 500",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "like_any",
        "select id from eq_shop.orders where status like any ('p%', 's%') and status not like 'x%'",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "mixed_case_names",
        "select ID, Amount as TotalAmount, STATUS from EQ_SHOP.Orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        columns=("ID", "TotalAmount", "STATUS"),
    ),
    ok("parenthesized_query", "(select id, status from eq_shop.orders)", SINGLE, "orders", "orders:P", RID1),
    ok(
        "hint",
        "select /*+ BROADCAST(c) */ o.id, c.name from eq_shop.orders o "
        "join eq_shop.customers c on o.customer_id = c.id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    # --- predicates and expressions run as written: nothing folded or rearranged --------
    ok(
        "fold_arithmetic",
        "select id, 1 + 2 as three, 'a' || 'b' as ab from eq_shop.orders where 1 = 1 and id > 3 - 2",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("1 + 2 AS `three`", "'a' || 'b' AS `ab`", "WHERE 1 = 1 AND `orders`.`id` > 3 - 2"),
    ),
    ok(
        "fold_false",
        "select id from eq_shop.orders where 1 = 0",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("WHERE 1 = 0",),
    ),
    ok("fold_or_true", "select id from eq_shop.orders where status = 'x' or 2 > 1", SINGLE, "orders", "orders:P", RID1),
    ok(
        "fold_not",
        "select id from eq_shop.orders where not (1 = 1) or status = 'paid'",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("WHERE NOT (1 = 1) OR `orders`.`status` = 'paid'",),
    ),
    ok(
        "fold_case_true",
        "select case when 1 = 1 then id else 0 end as v from eq_shop.orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "fold_decimal_output",
        "select id, 1.5 + 1 as d, 2 * 3.0 as e, amount * 1 as a from eq_shop.orders where amount > 1.5 + 1",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("1.5 + 1 AS `d`", "WHERE `orders`.`amount` > 1.5 + 1"),
    ),
    ok(
        "fold_case_output",
        "select case when 1 = 1 then id else 1.5 end as v from eq_shop.orders "
        "where case when 1 = 1 then id else 1.5 end > 1",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("CASE WHEN 1 = 1 THEN", "WHERE CASE WHEN 1 = 1 THEN `orders`.`id` ELSE 1.5 END > 1"),
    ),
    ok(
        "fold_int_overflow",
        "select id, 2147483647 + 1 as wrapped from eq_shop.orders where id > 2147483647 + 1",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("WHERE `orders`.`id` > 2147483647 + 1",),
    ),
    ok(
        "double_arithmetic_predicate",  # folded, 0.4 - 0.05 is a DECIMAL: rows near the bound differ
        "select order_id, price from eq_shop.items where price + 0.05 >= 0.4 and 0.4 <= 0.05 + price",
        SINGLE,
        "items",
        "items:P",
        RID1,
        normalized_has=("WHERE `items`.`price` + 0.05 >= 0.4 AND 0.4 <= 0.05 + `items`.`price`",),
    ),
    ok(
        "int_arithmetic_predicate",  # id + 1 > 3 is not id > 2 where id + 1 wraps around
        "select o.id from eq_shop.orders o join eq_shop.customers c on c.id + 1 = o.customer_id + 1 "
        "where o.id + 1 > 3 and not (o.id - 1 <= 1)",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
        normalized_has=(
            "ON `c`.`id` + 1 = `o`.`customer_id` + 1",
            "WHERE `o`.`id` + 1 > 3 AND NOT (`o`.`id` - 1 <= 1)",
        ),
    ),
    ok(
        "fold_date",
        "select id, date '2024-01-01' + interval 1 day as d from eq_shop.orders "
        "where created >= date '2024-01-01' + interval 1 day",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "fold_null_semantics",
        "select id, status = status as same, (status = 'x' and not status = 'x') as never "
        "from eq_shop.orders where id = id",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "lambda",
        "select id, transform(array(id, customer_id), x -> x + 1) as arr from eq_shop.orders",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    # --- CTEs and FROM subqueries that are select-project-join: merged ----------------------
    ok(
        "cte",
        "with paid as (select id, amount from eq_shop.orders where status = 'paid') "
        "select id, amount from paid where amount > 10",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        normalized_has=("FROM `eq_shop`.`orders` AS `orders` WHERE",),
    ),
    ok(
        "cte_chain",
        "with a as (select id, customer_id, amount from eq_shop.orders), "
        "b as (select id, amount from a where customer_id is not null) select * from b where amount > 1",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "subquery",
        "select t.id, t.amt from (select id, amount as amt from eq_shop.orders where amount > 0) t where t.id > 1",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        columns=("id", "amt"),
    ),
    ok(
        "subquery_nested",
        "select * from (select * from (select id, amount from eq_shop.orders where amount > 0) a where id > 1) b",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
    ),
    ok(
        "subquery_star_keeps_spelling",
        "select * from (select Amount as Amt, STATUS from eq_shop.orders) x",
        SINGLE,
        "orders",
        "orders:P",
        RID1,
        columns=("Amt", "STATUS"),
    ),
    ok(
        "cte_join",
        "with a as (select id, customer_id from eq_shop.orders), "
        "b as (select a.id, c.name from a join eq_shop.customers c on a.customer_id = c.id) select * from b",
        INNER,
        "inner(orders, c)",
        "orders:P c:P",
        RID2,
    ),
    ok(
        "subquery_joined",
        "select x.id, y.name from eq_shop.orders x join (select id, name from "
        "eq_shop.customers where tier = 'gold') y on x.customer_id = y.id",
        INNER,
        "inner(x, customers)",
        "x:P customers:P",
        RID2,
    ),
    ok(
        "subquery_constant_inner_side",
        "select o.id, k.kind from eq_shop.orders o join "
        "(select id, 'vip' as kind from eq_shop.customers) k on o.customer_id = k.id",
        INNER,
        "inner(o, customers)",
        "o:P customers:P",
        RID2,
    ),
    ok(
        "cte_self_join",
        "with x as (select id, customer_id from eq_shop.orders where amount > 0) "
        "select a.id, b.id as other_id from x a join x b on a.customer_id = b.customer_id",
        INNER,
        "inner(orders, orders_2)",
        "orders:P orders_2:P",
        RID2,
    ),
    ok(
        "subquery_left_join_strict",
        "select o.id, x.uname from eq_shop.orders o left join "
        "(select id, upper(name) as uname from eq_shop.customers) x on o.customer_id = x.id",
        OUTER,
        "left(o, customers)",
        "o:P customers:N",
        RID2,
    ),
    ok(
        "subquery_nested_calls",
        "select * from (select upper(upper(c.name)) as k from eq_shop.customers c) s",
        SINGLE,
        "c",
        "c:P",
        RID1,
        normalized_has=("UPPER(UPPER(`c`.`name`)) AS `k`",),
    ),
    ok(  # dbt_utils.generate_surrogate_key(['id', 'name']) in a CTE
        "cte_surrogate_key",
        "with keyed as (select md5(cast(concat(coalesce(cast(c.id as string), '_dbt_utils_surrogate_key_null_'), "
        "'-', coalesce(cast(c.name as string), '_dbt_utils_surrogate_key_null_')) as string)) as customer_sk, "
        "c.id, c.tier from eq_shop.customers c) "
        "select o.id, k.customer_sk, k.tier from eq_shop.orders o join keyed k on o.customer_id = k.id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
        normalized_has=("MD5(CAST(CONCAT(COALESCE(CAST(`c`.`id` AS STRING), '_dbt_utils_surrogate_key_null_')",),
    ),
    ok(  # the point-in-time join to a range (an SCD-2 dimension's validity)
        "between_join_range",
        "select o.id, r.name from eq_shop.orders o join eq_shop.regions r "
        "on o.region_id = r.id and o.customer_id between r.id - 3 and r.id + 3 and o.amount > 0",
        INNER,
        "inner(o, r)",
        "o:P r:P",
        RID2,
        normalized_has=("BETWEEN `r`.`id` - 3 AND `r`.`id` + 3 AND `o`.`amount` > 0",),
    ),
    ok(  # the filter joins the ON: rows it drops are padded, as the subquery's absence pads them
        "null_supplied_subquery_where",
        "select o.id, x.name from eq_shop.orders o left join "
        "(select id, name from eq_shop.customers where tier = 'gold') x on o.customer_id = x.id",
        OUTER,
        "left(o, customers)",
        "o:P customers:N",
        RID2,
        normalized_has=("ON `o`.`customer_id` = `customers`.`id` AND `customers`.`tier` = 'gold'",),
    ),
    ok(  # dbt's inlined ephemeral model
        "ephemeral_cte_left_join",
        "with __dbt__cte__gold as (select c.id, upper(c.name) as name, c.region_id from eq_shop.customers c "
        "where c.tier = 'gold' and c.region_id is not null) "
        "select o.id, g.name, r.name as region from eq_shop.orders o left join __dbt__cte__gold g "
        "on o.customer_id = g.id left join eq_shop.regions r on g.region_id = r.id",
        OUTER,
        "left(left(o, c), r)",
        "o:P c:N r:N",
        RID3,
        normalized_has=("= `c`.`id` AND `c`.`tier` = 'gold' AND NOT `c`.`region_id` IS NULL LEFT JOIN",),
    ),
    ok(
        "ephemeral_cte_in_cte_left_join",
        "with __dbt__cte__gold as (select id, name from eq_shop.customers where tier = 'gold'), "
        "orders_gold as (select o.id, g.name from eq_shop.orders o left join __dbt__cte__gold g "
        "on o.customer_id = g.id where o.amount > 0) select * from orders_gold",
        OUTER,
        "left(o, customers)",
        "o:P customers:N",
        RID2,
    ),
    ok(  # a merged AND or OR keeps its grouping where the outer query reads its name
        "cte_boolean_projections",
        "with c as (select id, tier = 'gold' or name is null as vip, region_id > 0 and tier is not null as ok "
        "from eq_shop.customers) select o.id, c.ok = true as ok_true from eq_shop.orders o join c "
        "on o.customer_id = c.id and c.vip and c.ok where not c.ok or o.amount > 0",
        INNER,
        "inner(o, customers)",
        "o:P customers:P",
        RID2,
        normalized_has=(
            "(`customers`.`region_id` > 0 AND NOT `customers`.`tier` IS NULL) = TRUE AS `ok_true`",
            "AND (`customers`.`tier` = 'gold' OR `customers`.`name` IS NULL) AND `customers`.`region_id` > 0 AND",
            "WHERE NOT (`customers`.`region_id` > 0 AND NOT `customers`.`tier` IS NULL) OR",
        ),
    ),
    ok(
        "subquery_preserved_constant",
        "select o.id, o.k, x.name from (select id, customer_id, 'k' as k "
        "from eq_shop.orders where amount > 0) o left join eq_shop.customers x on o.customer_id = x.id",
        OUTER,
        "left(orders, x)",
        "orders:P x:N",
        RID2,
    ),
    # --- aggregates without a rule: recomputed per touched group
    ok(
        "count_distinct",
        "select status, count(distinct customer_id) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "sum_distinct",
        "select status, sum(distinct amount) as s from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "collect_set",
        "select status, collect_set(id) as ids from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "percentile",
        "select status, percentile(amount, 0.5) as p from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "approx_count_distinct",
        "select status, approx_count_distinct(id) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "stddev",
        "select status, stddev(amount) as sd from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "try_sum",
        "select status, try_sum(amount) as s from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok("try_sum_global", "select try_sum(amount) as s from eq_shop.orders", AGG, "orders", "orders:P", "count a_0"),
    ok(
        "count_if",
        "select status, count_if(amount > 0) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "any_aggregate",
        "select status, any(amount > 0) as b from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "bool_and",
        "select status, bool_and(amount > 0) as b from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    ok(
        "aggregate_filter",
        "select status, count(*) filter (where amount > 0) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count a_0",
    ),
    # --- a calculated SELECT over an aggregate: merged, the outer query over the groups ---------
    ok(
        "subquery_group_by",
        "select * from (select status, count(*) as n from eq_shop.orders group by status) t",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
        columns=("status", "n"),
    ),
    ok(
        "subquery_distinct",
        "select t.id from (select distinct id from eq_shop.orders) t",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
        normalized_has=("GROUP BY `orders`.`id`",),
    ),
    ok(
        "calculated_ratio_case_cast",
        "with g as (select status, sum(amount) as total, count(*) as n, count(customer_id) as nc "
        "from eq_shop.orders group by status) "
        "select n as orders, status as st, total / nc as per_customer, cast(total as bigint) as whole, "
        "case when n > 1 then 'many' else 'one' end as size from g where total > 0 or nc = 0",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_1 a_1 nn_2",
        columns=("orders", "st", "per_customer", "whole", "size"),
        normalized_has=("HAVING (", "SUM(`orders`.`amount`) / COUNT(`orders`.`customer_id`)"),
    ),
    ok(
        "calculated_over_having_and_join",
        "select t.name, (t.total + 1) * 2 as doubled, -t.total as negated from (select c.name, sum(o.amount) as total "
        "from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id group by c.name "
        "having count(*) > 1) t where t.name <> 'x'",
        AGG_JOIN,
        "inner(o, c)",
        "o:P c:P",
        "g_0 count nn_0 a_0",
        normalized_has=("(SUM(`o`.`amount`) + 1) * 2", "-SUM(`o`.`amount`) AS `negated`", "COUNT(*) > 1 AND ("),
    ),
    ok(
        "calculated_over_global",
        "select t.total / t.n as mean, t.n from (select sum(amount) as total, count(*) as n from eq_shop.orders) t "
        "where t.n > 0",
        AGG,
        "orders",
        "orders:P",
        "count nn_0 a_0",
    ),
    ok(
        "calculated_chain_of_ctes",
        "with a as (select region_id, status, max(amount) as top, min(amount) as low from eq_shop.orders "
        "group by region_id, status), b as (select region_id, top - low as spread from a) "
        "select region_id, spread from b where spread is not null",
        AGG,
        "orders",
        "orders:P",
        "g_0 g_1 count a_0 m_0 a_1 m_1",
        columns=("region_id", "spread"),
    ),
    # --- DISTINCT and aggregates ----------------------------------------------------------
    ok("distinct", "select distinct status from eq_shop.orders", AGG, "orders", "orders:P", "g_0 count"),
    ok("distinct_star", "select distinct * from eq_shop.regions", AGG, "regions", "regions:P", "g_0 g_1 count"),
    ok(
        "distinct_join",
        "select distinct c.name from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id",
        AGG_JOIN,
        "inner(o, c)",
        "o:P c:P",
        "g_0 count",
    ),
    ok(
        "aggregates_all",
        "select status, count(*) as n, count(customer_id) as nc, sum(amount) as total, "
        "avg(amount) as mean, min(created) as first_day, max(amount) as top from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_1 nn_2 a_2 nn_3 a_3 a_4 m_4 a_5 m_5",
    ),
    # GROUP BY ALL: every SELECT expression without an aggregate call (constants group nothing)
    ok(
        "group_by_all",
        "select status, customer_id + 1 as c1, 7 as seven, count(*) as n, sum(amount) as s "
        "from eq_shop.orders group by all having count(*) > 0",
        AGG,
        "orders",
        "orders:P",
        "g_0 g_1 count nn_1 a_1",
        normalized_has=("GROUP BY `orders`.`status`, `orders`.`customer_id` + 1 HAVING",),
    ),
    ok(
        "group_by_all_global",
        "select count(*) as n, max(amount) + 1 as top from eq_shop.orders group by all",
        AGG,
        "orders",
        "orders:P",
        "count a_1 m_1",
    ),
    # the top-level ORDER BY: kept as an order of the model's columns, for the view ref() reads
    ok(
        "order_by",
        "select o.id, o.amount as amt, c.name from eq_shop.orders o join eq_shop.customers c "
        "on o.customer_id = c.id order by c.name desc nulls first, amt, 1",
        ViewClass.INNER_JOIN,
        "inner(o, c)",
        "o:P c:P",
        "rid_0 rid_1 count",
    ),
    # an ORDER BY without LIMIT in a subquery or CTE orders nothing: dropped
    ok(
        "order_by_in_cte",
        "with s as (select id, status from eq_shop.orders order by status) "
        "select * from s where id in (select id from eq_shop.orders order by id desc)",
        ViewClass.SEMI_JOIN,
        "orders",
        "orders:P orders_2:P",
        "p_0 count",
    ),
    ok(
        "count_one",
        "select status, count(1) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "global_aggregate",
        "select count(*) as n, sum(amount) as total from eq_shop.orders",
        AGG,
        "orders",
        "orders:P",
        "count nn_1 a_1",
    ),
    # DISTINCT over rows that are distinct already: each group one row, or the one row of a global aggregate
    ok(
        "distinct_group_by",
        "select distinct status, count(*) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "distinct_group_by_ordinal_and_having",
        "select distinct customer_id, status, max(amount) as m from eq_shop.orders group by 2, customer_id "
        "having count(*) > 1",
        AGG,
        "orders",
        "orders:P",
        "g_0 g_1 count a_0 m_0",
    ),
    ok("distinct_aggregate", "select distinct count(*) as n from eq_shop.orders", AGG, "orders", "orders:P", "count"),
    ok(
        "global_aggregate_maybe_empty",
        "select count(*) as n, max(name) as top from eq_shop.regions",
        AGG,
        "regions",
        "regions:P",
        "count a_1 m_1",
    ),
    ok(
        "global_aggregate_where",
        "select max(amount) as top, min(amount) as bottom from eq_shop.orders where status = 'paid'",
        AGG,
        "orders",
        "orders:P",
        "count a_0 m_0 a_1 m_1",
    ),
    ok(
        "having",
        "select status, count(*) as n from eq_shop.orders group by status having count(*) > 1",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "having_hidden_aggregate",
        "select status, count(*) as n from eq_shop.orders group by status having sum(amount) > 100",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_1 a_1",
    ),
    ok(
        "having_alias",
        "select status, count(*) as n from eq_shop.orders group by status having n > 1",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "aggregate_expression",
        "select status, sum(amount) / count(amount) as ratio, count(*) + 1 as n1 from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_0 a_0 nn_1",
    ),
    ok(
        "group_by_expression",
        "select upper(status) as s, count(*) as n from eq_shop.orders group by upper(status)",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "group_by_ordinal",
        "select status, region_id, count(*) as n from eq_shop.orders group by 1, 2",
        AGG,
        "orders",
        "orders:P",
        "g_0 g_1 count",
    ),
    ok(
        "group_by_alias",
        "select status as st, sum(amount) as total from eq_shop.orders group by st",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_0 a_0",
    ),
    ok(
        "group_key_expression_output",
        "select status, upper(status) as up, count(*) as n from eq_shop.orders group by status",
        AGG,
        "orders",
        "orders:P",
        "g_0 count",
    ),
    ok(
        "aggregate_join",
        "select c.name, count(*) as n, sum(o.amount) as total from eq_shop.orders o "
        "join eq_shop.customers c on o.customer_id = c.id group by c.name",
        AGG_JOIN,
        "inner(o, c)",
        "o:P c:P",
        "g_0 count nn_1 a_1",
    ),
    ok(
        "aggregate_left_join",
        "select c.name, count(o.id) as orders from eq_shop.customers c "
        "left join eq_shop.orders o on o.customer_id = c.id group by c.name",
        AGG_JOIN,
        "left(c, o)",
        "c:P o:N",
        "g_0 count nn_0",
    ),
    ok(
        "aggregate_cte",
        "with paid as (select customer_id, amount from eq_shop.orders where status = 'paid') "
        "select customer_id, sum(amount) as total from paid group by customer_id",
        AGG,
        "orders",
        "orders:P",
        "g_0 count nn_0 a_0",
    ),
    ok(
        "oracle_max",
        "select gby as mv_gby, count(*) as mv_cnt_star, max(dat) as mv_max_dat from eq_ora.test_master group by gby",
        AGG,
        "test_master",
        "test_master:P",
        "g_0 count a_1 m_1",
        schema="oracle",
    ),
    ok(
        "oracle_max_where",
        "select gby as mv_gby, count(*) as mv_cnt_star, max(dat) as mv_max_dat "
        "from eq_ora.test_master where whe = 0 group by gby",
        AGG,
        "test_master",
        "test_master:P",
        "g_0 count a_1 m_1",
        schema="oracle",
    ),
    ok(
        "oracle_sum",
        "select gby, count(*) as cnt, sum(dat) as sum_dat, count(dat) as cnt_dat from eq_ora.test_master group by gby",
        AGG,
        "test_master",
        "test_master:P",
        "g_0 count nn_1 a_1 nn_2",
        schema="oracle",
    ),
    ok(
        "oracle_single_table",
        "select * from eq_ora.test_master",
        SINGLE,
        "test_master",
        "test_master:P",
        RID1,
        schema="oracle",
    ),
    # --- inner joins -----------------------------------------------------------------------
    ok(
        "example_order_details",
        "select o.id as order_id, o.amount, o.status, c.id as customer_id, "
        "c.name as customer_name from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "comma_join",
        "select o.id, c.name from eq_shop.orders o, eq_shop.customers c where o.customer_id = c.id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "unqualified_join_columns",
        "select amount, name, tier from eq_shop.orders o join eq_shop.customers c on customer_id = c.id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "star_join_using",
        "select * from eq_shop.regions r join eq_shop.categories k using (id)",
        INNER,
        "inner(r, k)",
        "r:P k:P",
        RID2,
        columns=("id", "name", "label"),
    ),
    ok(
        "join_using",
        "select o.id, c.name from eq_shop.orders o join eq_shop.customers c using (region_id)",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "cross_join",
        "select o.id, r.name as region from eq_shop.orders o cross join eq_shop.regions r",
        INNER,
        "inner(o, r)",
        "o:P r:P",
        RID2,
    ),
    ok(
        "non_equi_join",
        "select o.id, r.name from eq_shop.orders o join eq_shop.regions r on o.region_id between r.id and r.id + 1",
        INNER,
        "inner(o, r)",
        "o:P r:P",
        RID2,
    ),
    ok(
        "non_equi_join_lt",
        "select o.id, c.name from eq_shop.orders o join eq_shop.customers c "
        "on o.customer_id < c.id and o.region_id <> c.region_id",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "example_regional_orders_3way",
        "select o.id as order_id, o.amount, c.name as customer_name, "
        "r.name as region_name from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id "
        "join eq_shop.regions r on c.region_id = r.id",
        INNER,
        "inner(o, c, r)",
        "o:P c:P r:P",
        RID3,
    ),
    ok(
        "join_4way",
        "select o.id, c.name, r.name as region, i.sku from eq_shop.orders o "
        "join eq_shop.customers c on o.customer_id = c.id join eq_shop.regions r on c.region_id = r.id "
        "join eq_shop.items i on i.order_id = o.id",
        INNER,
        "inner(o, c, r, i)",
        "o:P c:P r:P i:P",
        "rid_0 rid_1 rid_2 rid_3 count",
    ),
    ok(
        "join_5way",
        "select o.id, c.name, r.name as region, i.qty, p.title from eq_shop.orders o "
        "join eq_shop.customers c on o.customer_id = c.id join eq_shop.regions r on c.region_id = r.id "
        "join eq_shop.items i on i.order_id = o.id join eq_shop.products p on p.sku = i.sku",
        INNER,
        "inner(o, c, r, i, p)",
        "o:P c:P r:P i:P p:P",
        "rid_0 rid_1 rid_2 rid_3 rid_4 count",
    ),
    ok(
        "join_6way",
        "select o.id, c.name, r.name as region, i.qty, p.title, k.label from eq_shop.orders o "
        "join eq_shop.customers c on o.customer_id = c.id join eq_shop.regions r on c.region_id = r.id "
        "join eq_shop.items i on i.order_id = o.id join eq_shop.products p on p.sku = i.sku "
        "join eq_shop.categories k on k.id = p.category_id",
        INNER,
        "inner(o, c, r, i, p, k)",
        "o:P c:P r:P i:P p:P k:P",
        "rid_0 rid_1 rid_2 rid_3 rid_4 rid_5 count",
    ),
    ok(
        "comma_join_6way",
        "select o.id, k.label from eq_shop.orders o, eq_shop.customers c, "
        "eq_shop.regions r, eq_shop.items i, eq_shop.products p, eq_shop.categories k "
        "where o.customer_id = c.id and c.region_id = r.id and i.order_id = o.id and p.sku = i.sku "
        "and k.id = p.category_id",
        INNER,
        "inner(o, c, r, i, p, k)",
        "o:P c:P r:P i:P p:P k:P",
        "rid_0 rid_1 rid_2 rid_3 rid_4 rid_5 count",
    ),
    ok(
        "self_join_2",
        "select a.id, b.id as other_id from eq_shop.orders a join eq_shop.orders b "
        "on a.customer_id = b.customer_id and a.id < b.id",
        INNER,
        "inner(a, b)",
        "a:P b:P",
        RID2,
    ),
    ok(
        "self_join_3",
        "select a.id, b.id as b_id, c.id as c_id from eq_shop.orders a "
        "join eq_shop.orders b on a.customer_id = b.customer_id join eq_shop.orders c "
        "on b.region_id = c.region_id",
        INNER,
        "inner(a, b, c)",
        "a:P b:P c:P",
        RID3,
    ),
    ok(
        "self_join_unaliased",
        "select orders.id, o2.id as id2 from eq_shop.orders join eq_shop.orders o2 on orders.id = o2.customer_id",
        INNER,
        "inner(orders, o2)",
        "orders:P o2:P",
        RID2,
    ),
    ok(
        "pg_ivm_rst",
        "SELECT x,y,z FROM eq_pg.R,eq_pg.S,eq_pg.T WHERE R.i=S.i AND S.j=T.j",
        INNER,
        "inner(r, s, t)",
        "r:P s:P t:P",
        RID3,
        schema="pg",
    ),
    ok(
        "pg_ivm_rst_aggregate",
        "select s.j, count(*) as n, sum(r.x) as sx, avg(t.z) as az "
        "from eq_pg.r join eq_pg.s on r.i = s.i join eq_pg.t on s.j = t.j group by s.j",
        AGG_JOIN,
        "inner(r, s, t)",
        "r:P s:P t:P",
        "g_0 count nn_1 a_1 nn_2 ax_2",
        schema="pg",
    ),
    ok(
        "oracle_join_only",
        "select test_t1.*, test_t2.*, test_t3.* from eq_ora.test_t1, eq_ora.test_t2, "
        "eq_ora.test_t3 where test_t1.j1_2 = test_t2.j2_1 and test_t2.j2_3 = test_t3.j3_2",
        INNER,
        "inner(test_t1, test_t2, test_t3)",
        "test_t1:P test_t2:P test_t3:P",
        RID3,
        schema="oracle",
    ),
    # --- outer joins -----------------------------------------------------------------------
    ok(
        "left_join",
        "select o.id, c.name from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "left_outer_join_keyword",
        "select o.id, c.name from eq_shop.orders o left outer join "
        "eq_shop.customers c on o.customer_id = c.id and c.tier = 'gold'",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "right_join",
        "select o.id, c.name from eq_shop.orders o right join eq_shop.customers c on o.customer_id = c.id",
        OUTER,
        "left(c, o)",
        "o:N c:P",
        RID2,
    ),
    ok(
        "full_join",
        "select o.id, c.name from eq_shop.orders o full outer join eq_shop.customers c on o.customer_id = c.id",
        OUTER,
        "full(o, c)",
        "o:B c:B",
        RID2,
    ),
    ok(
        "left_left",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "left join eq_shop.customers c on o.customer_id = c.id left join eq_shop.regions r "
        "on c.region_id = r.id",
        OUTER,
        "left(left(o, c), r)",
        "o:P c:N r:N",
        RID3,
    ),
    ok(
        "left_then_inner_on_preserved",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "left join eq_shop.customers c on o.customer_id = c.id join eq_shop.regions r on o.region_id = r.id",
        OUTER,
        "inner(left(o, c), r)",
        "o:P c:N r:P",
        RID3,
    ),
    ok(
        "right_join_nested",
        "select o.id, c.name, r.name as region from eq_shop.customers c "
        "left join eq_shop.regions r on c.region_id = r.id right join eq_shop.orders o "
        "on o.customer_id = c.id",
        OUTER,
        "left(o, left(c, r))",
        "c:N r:N o:P",
        RID3,
    ),
    ok(
        "full_full",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "full join eq_shop.customers c on o.customer_id = c.id full join eq_shop.regions r "
        "on c.region_id = r.id",
        OUTER,
        "full(full(o, c), r)",
        "o:B c:B r:B",
        RID3,
    ),
    ok(
        "comma_then_right_join",
        "select r.id as rid, o.id as oid, c.name from eq_shop.regions r, "
        "eq_shop.orders o right join eq_shop.customers c on o.customer_id = c.id",  # Spark folds left to right
        OUTER,
        "left(c, inner(r, o))",
        "r:N o:N c:P",
        RID3,
    ),
    ok(
        "star_left_join_using",
        "select * from eq_shop.regions r left join eq_shop.categories k using (id)",
        OUTER,
        "left(r, k)",
        "r:P k:N",
        RID2,
        columns=("id", "name", "label"),
    ),
    ok(
        "left_join_where_preserved",
        "select o.id, c.name from eq_shop.orders o left join "
        "eq_shop.customers c on o.customer_id = c.id where o.amount > 10",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "left_join_using",
        "select o.id, c.name from eq_shop.orders o left join eq_shop.customers c using (region_id)",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "full_join_using",
        "select region_id, o.id, c.name from eq_shop.orders o full join eq_shop.customers c using (region_id)",
        OUTER,
        "full(o, c)",
        "o:B c:B",
        RID2,
    ),
    ok(
        "left_join_null_tolerant_own_on",
        "select o.id, c.name from eq_shop.orders o left join "
        "eq_shop.customers c on o.customer_id = c.id or (o.customer_id is null and c.id is null)",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "left_join_is_not_distinct",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "left join eq_shop.customers c on o.customer_id = c.id left join eq_shop.regions r "
        "on c.region_id <=> r.id and c.id is not null",
        OUTER,
        "left(left(o, c), r)",
        "o:P c:N r:N",
        RID3,
    ),
    ok(
        "oracle_outer",
        "select test_outer.*, test_inner.pk as inner_pk, test_inner.jinner, "
        "test_inner.x as inner_x from eq_ora.test_outer left join eq_ora.test_inner "
        "on test_outer.jouter = test_inner.jinner",
        OUTER,
        "left(test_outer, test_inner)",
        "test_outer:P test_inner:N",
        RID2,
        schema="oracle",
    ),
    # Nica's examples: V2..V6 (V1 and V7 join two compound operands: refused below)
    ok(
        "nica_v2",
        "select r.k as rk, t.k as tk, s.k as sk from eq_nica.r left join eq_nica.t on r.a = t.a "
        "full join eq_nica.s on t.k = s.k",
        OUTER,
        "full(left(r, t), s)",
        "r:B t:B s:B",
        RID3,
        schema="nica",
    ),
    ok(
        "nica_v3",
        "select r.k as rk, t.k as tk, s.k as sk from eq_nica.r full join eq_nica.t on r.a = t.a "
        "full join eq_nica.s on t.k = s.k",
        OUTER,
        "full(full(r, t), s)",
        "r:B t:B s:B",
        RID3,
        schema="nica",
    ),
    ok(
        "nica_v4",
        "select r1.k, s.b, t.a, r2.b as b2 from eq_nica.s join eq_nica.t on t.a = s.a "
        "right join eq_nica.r1 on r1.k = s.k and r1.a = t.k join eq_nica.r2 on r1.k = r2.k",
        OUTER,
        "inner(left(r1, inner(s, t)), r2)",
        "s:N t:N r1:P r2:P",
        "rid_0 rid_1 rid_2 rid_3 count",
        schema="nica",
    ),
    ok(
        "nica_v5",
        "select r.k as rk, s.k as sk, t.k as tk from eq_nica.s left join eq_nica.t on s.a = t.a "
        "right join eq_nica.r on r.k = s.k",
        OUTER,
        "left(r, left(s, t))",
        "s:N t:N r:P",
        RID3,
        schema="nica",
    ),
    ok(
        "nica_v6",
        "select r.k as rk, s.b as sb, t.b as tb from eq_nica.r left join eq_nica.s on r.k = s.k "
        "left join eq_nica.t on r.a = t.a",
        OUTER,
        "left(left(r, s), t)",
        "r:P s:N t:N",
        RID3,
        schema="nica",
    ),
    # Nica's step 3: outer joins that predicates above them turn into inner joins
    ok(
        "where_rejects_null_supplied",
        "select o.id, c.name from eq_shop.orders o left join "
        "eq_shop.customers c on o.customer_id = c.id where c.tier = 'gold'",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
        normalized_has=("JOIN `eq_shop`.`customers` AS `c`",),
    ),
    ok(
        "where_is_not_null",
        "select o.id, c.name from eq_shop.orders o left join eq_shop.customers c "
        "on o.customer_id = c.id where c.id is not null",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "inner_join_rejects_null_supplied",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "left join eq_shop.customers c on o.customer_id = c.id join eq_shop.regions r on c.region_id = r.id",
        INNER,
        "inner(o, c, r)",
        "o:P c:P r:P",
        RID3,
    ),
    ok(
        "full_where_left",
        "select o.id, c.name from eq_shop.orders o full join eq_shop.customers c "
        "on o.customer_id = c.id where o.amount > 0",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "full_where_right",
        "select o.id, c.name from eq_shop.orders o full join eq_shop.customers c "
        "on o.customer_id = c.id where c.name like 'a%'",
        OUTER,
        "left(c, o)",
        "o:N c:P",
        RID2,
    ),
    ok(
        "full_where_both",
        "select o.id, c.name from eq_shop.orders o full join eq_shop.customers c "
        "on o.customer_id = c.id where o.amount > 0 and c.tier = 'gold'",
        INNER,
        "inner(o, c)",
        "o:P c:P",
        RID2,
    ),
    ok(
        "left_left_where_ripples",
        "select o.id, c.name, r.name as region from eq_shop.orders o "
        "left join eq_shop.customers c on o.customer_id = c.id left join eq_shop.regions r "
        "on c.region_id = r.id where r.name = 'north'",
        INNER,
        "inner(o, c, r)",
        "o:P c:P r:P",
        RID3,
    ),
    ok(
        "aggregate_full_join",
        "select coalesce(o.status, c.tier) as k, count(*) as n, count(o.id) as no "
        "from eq_shop.orders o full join eq_shop.customers c on o.customer_id = c.id "
        "group by coalesce(o.status, c.tier)",
        AGG_JOIN,
        "full(o, c)",
        "o:B c:B",
        "g_0 count nn_1",
    ),
    # --- outer joins no longer refused: every ON and WHERE is exact (see classes/outer_terms.py)
    ok(
        "parenthesized_join",
        "select o.id from eq_shop.orders o left join (eq_shop.customers c join eq_shop.regions r on "
        "c.region_id = r.id) on o.customer_id = c.id",
        OUTER,
        "left(o, inner(c, r))",
        "o:P c:N r:N",
        RID3,
    ),
    ok(
        "nica_v1",
        "select r1.k from ((eq_nica.r1 join eq_nica.r2 on r1.k = r2.k) full join (eq_nica.t join "
        "eq_nica.s on t.k = s.k) on r1.a = t.a) full join ((eq_nica.r left join eq_nica.w on r.k = w.k) "
        "full join eq_nica.s s2 on r.a = s2.a) on r1.b = w.b",
        OUTER,
        "full(full(inner(r1, r2), inner(t, s)), full(left(r, w), s2))",
        "r1:B r2:B t:B s:B r:B w:B s2:B",
        "rid_0 rid_1 rid_2 rid_3 rid_4 rid_5 rid_6 count",
        schema="nica",
    ),
    ok(
        "nica_v7",
        "select r.k from (eq_nica.r full join eq_nica.t on r.k = t.k) full join (eq_nica.s left join "
        "eq_nica.w on s.k = w.k) on t.a = s.a",
        OUTER,
        "full(full(r, t), left(s, w))",
        "r:B t:B s:B w:B",
        "rid_0 rid_1 rid_2 rid_3 count",
        schema="nica",
    ),
    ok(
        "nica_orm_null_tolerant_on",
        "select r.k from eq_nica.r left join eq_nica.s on r.k = s.k left join eq_nica.t on (t.k = s.k) "
        "or (s.k is null and r.k is null)",
        OUTER,
        "left(left(r, s), t)",
        "r:P s:N t:N",
        RID3,
        schema="nica",
    ),
    ok(
        "nested_on_coalesce",
        "select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id left "
        "join eq_shop.regions r on coalesce(c.region_id, 0) = r.id",
        OUTER,
        "left(left(o, c), r)",
        "o:P c:N r:N",
        RID3,
    ),
    ok(
        "inner_on_null_tolerant",
        "select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id join "
        "eq_shop.regions r on r.id = c.region_id or c.region_id is null",
        OUTER,
        "inner(left(o, c), r)",
        "o:P c:N r:P",
        RID3,
    ),
    ok(
        "outer_on_one_side",
        "select o.id from eq_shop.orders o left join eq_shop.customers c on c.tier = 'gold'",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "outer_without_on",
        "select o.id from eq_shop.orders o left join eq_shop.customers c",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "where_is_null_null_supplied",
        "select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id where c.id is null",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    ok(
        "where_coalesce_null_supplied",
        "select o.id from eq_shop.orders o left join eq_shop.customers c on o.customer_id = c.id where "
        "coalesce(c.tier, 'none') = 'none'",
        OUTER,
        "left(o, c)",
        "o:P c:N",
        RID2,
    ),
    # --- identifiers that need quotes ---------------------------------------------------------
    ok(
        "quoted_reserved_and_spaces",
        "select t.`from`, t.`Order Id` as `order id`, t.`Group` from eq_odd.`select` t",
        SINGLE,
        "t",
        "t:P",
        RID1,
        schema="odd",
        columns=("from", "order id", "Group"),
    ),
    ok(
        "quoted_star",
        "select * from eq_odd.`select`",
        SINGLE,
        "select",
        "select:P",
        RID1,
        schema="odd",
        columns=("from", "Order Id", "Group", "MixedCase"),
    ),
    ok(
        "quoted_join_mixed_case",
        "select s.`Order Id`, m.`where` as `Where`, m.KEY from eq_odd.`select` s "
        "join eq_odd.MixedTable m on s.MixedCase = m.`Key`",
        INNER,
        "inner(s, m)",
        "s:P m:P",
        RID2,
        schema="odd",
        columns=("Order Id", "Where", "KEY"),
    ),
    # --- JOIN ... USING as Spark resolves it: the left side's key is the merged column of the
    # USING joins before (COALESCE after FULL, the right key after RIGHT), so is an unqualified k
    ok(
        "using_full_full",
        "select k, r.a, s.b, t.a as ta from eq_nica.r full join eq_nica.s using (k) full join eq_nica.t using (k)",
        OUTER,
        "full(full(r, s), t)",
        "r:B s:B t:B",
        RID3,
        schema="nica",
        normalized_has=(
            "ON COALESCE(`r`.`k`, `s`.`k`) = `t`.`k`",
            "SELECT COALESCE(COALESCE(`r`.`k`, `s`.`k`), `t`.`k`) AS `k`",
        ),
    ),
    ok(
        "using_right_right",
        "select k, r.a, s.b, t.a as ta from eq_nica.r right join eq_nica.s using (k) "
        "right join eq_nica.t using (k) where k > 0",
        OUTER,
        "left(t, left(s, r))",
        "r:N s:N t:P",
        RID3,
        schema="nica",
        normalized_has=(
            "RIGHT JOIN `eq_nica`.`s`",
            "ON `s`.`k` = `t`.`k`",
            "SELECT `t`.`k` AS `k`",
            "WHERE `t`.`k` > 0",
        ),
    ),
    ok(
        "using_left_after_full",
        "select k, s.b, t.b as tb from eq_nica.r full join eq_nica.s using (k) left join eq_nica.t using (k)",
        OUTER,
        "left(full(r, s), t)",
        "r:B s:B t:N",
        RID3,
        schema="nica",
        normalized_has=("LEFT JOIN `eq_nica`.`t` AS `t` ON COALESCE(`r`.`k`, `s`.`k`) = `t`.`k`",),
    ),
    ok(
        "using_inner_after_right",
        "select k, r.b, s.a from eq_nica.r right join eq_nica.s using (k) join eq_nica.t using (k)",
        OUTER,
        "inner(left(s, r), t)",
        "r:N s:P t:P",
        RID3,
        schema="nica",
        normalized_has=("RIGHT JOIN", "ON `s`.`k` = `t`.`k`"),
    ),
    ok(
        "using_several_columns",
        "select k, a, r.b, t.b as tb from eq_nica.r full join eq_nica.s using (k, a) left join eq_nica.t using (a, k)",
        OUTER,
        "left(full(r, s), t)",
        "r:B s:B t:N",
        RID3,
        schema="nica",
        normalized_has=("ON COALESCE(`r`.`a`, `s`.`a`) = `t`.`a` AND COALESCE(`r`.`k`, `s`.`k`) = `t`.`k`",),
    ),
    ok(
        "using_group_by_merged_key",
        "select k, count(*) as n, sum(t.a) as ta from eq_nica.r full join eq_nica.s using (k) "
        "full join eq_nica.t using (k) group by k having k is not null",
        AGG_JOIN,
        "full(full(r, s), t)",
        "r:B s:B t:B",
        "g_0 count nn_1 a_1",
        schema="nica",
        normalized_has=("GROUP BY COALESCE(COALESCE(`r`.`k`, `s`.`k`), `t`.`k`)",),
    ),
    ok(
        "quoted_aggregate",
        "select `Group`, count(*) as `row count`, max(`from`) as `max` from eq_odd.`select` group by `Group`",
        AGG,
        "select",
        "select:P",
        "g_0 count a_1 m_1",
        schema="odd",
    ),
    # --- windows over an aggregate's groups (`analyze.windows`): recomputed by the PARTITION BY
    # expressions that are GROUP BY expressions, or whole; over a grouped subquery or CTE merged
    ok(
        "window_over_aggregate",
        "select status, count(*) as n, rank() over (order by count(*)) as r from eq_shop.orders group by status",
        WINDOW,
        "orders",
        "orders:P",
        "count",
    ),
    ok(
        "window_over_aggregate_partitioned",
        "select o.status, c.name, sum(o.amount) as total, dense_rank() over (partition by o.status order by "
        "sum(o.amount) desc, c.name) as r, sum(sum(o.amount)) over (partition by o.status) as status_total, "
        "count(*) over (partition by o.status, count(*)) as same_count from eq_shop.orders o join eq_shop.customers c "
        "on o.customer_id = c.id group by o.status, c.name having count(*) > 0",
        WINDOW,
        "inner(o, c)",
        "o:P c:P",
        "p_0 count",
    ),
    ok(
        "window_over_aggregate_left_join",
        "select c.tier, r.name, count(o.id) as n, row_number() over (partition by c.tier order by count(o.id) desc, "
        "r.name) as pos from eq_shop.customers c left join eq_shop.orders o on o.customer_id = c.id "
        "left join eq_shop.regions r on c.region_id = r.id group by 1, 2",
        WINDOW,
        "left(left(c, o), r)",
        "c:P o:N r:N",
        "p_0 count",
    ),
    ok(
        "window_over_aggregate_subquery",
        "select t.status, rank() over (order by t.n) as r from "
        "(select status, count(*) as n from eq_shop.orders group by status) t",
        WINDOW,
        "orders",
        "orders:P",
        "count",
        normalized_has=("RANK() OVER (ORDER BY COUNT(*)) AS `r`",),
    ),
    ok(
        "window_rows_over_aggregate",
        "select * from (select status, n, row_number() over (order by n, status) as rn from "
        "(select status, count(*) as n from eq_shop.orders group by status) t) w where rn = 1",
        WINDOW,
        "orders",
        "orders:P",
        "count",
    ),
    ok(
        "top_groups_per_partition",
        "with g as (select customer_id, status, sum(amount) as total from eq_shop.orders group by customer_id, "
        "status), r as (select customer_id, status, total, rank() over (partition by customer_id order by total "
        "desc) as pos from g where total > 0) select customer_id, status, total from r where pos <= 2",
        WINDOW,
        "orders",
        "orders:P",
        "p_0 count",
        normalized_has=("HAVING (SUM(`orders`.`amount`) > 0)",),
    ),
]

REFUSED: list[Refused] = [
    # --- ordering, limits, windows ------------------------------------------------------------
    no(
        "window_unordered_first_value",
        "select id, first_value(amount) over (partition by customer_id) as f from eq_shop.orders",
        "without ORDER BY",
    ),
    no(
        "window_named",
        "select id, sum(amount) over w as s from eq_shop.orders window w as (partition by status)",
        "a named window",
    ),
    no("qualify", "select id from eq_shop.orders qualify row_number() over (order by id) = 1", "QUALIFY"),
    no("limit", "select id from eq_shop.orders limit 10", "LIMIT"),
    # sqlglot reads `a = b IN (...)` as `a = (b IN (...))`, Spark as `(a = b) IN (...)`
    no("in_beside_a_comparison", "select id from eq_shop.orders where id = amount in (1, 2)", "IN beside a comparison"),
    no(
        "like_beside_a_comparison",
        "select id, status = customer_id like '1%' as s from eq_shop.orders",
        "LIKE beside a comparison",
    ),
    no("limit_in_subquery", "select t.id from (select id from eq_shop.orders limit 3) t", "LIMIT"),
    no("offset", "select id from eq_shop.orders offset 3", "OFFSET"),
    no("order_by_unselected", "select id from eq_shop.orders order by amount", "ORDER BY amount, which is not one"),
    no("order_by_expression", "select id, amount from eq_shop.orders order by amount * 2", "ORDER BY amount * 2"),
    no("sort_by", "select id from eq_shop.orders sort by id", "SORT BY"),
    no("cluster_by", "select id from eq_shop.orders cluster by id", "CLUSTER BY"),
    no("distribute_by", "select id from eq_shop.orders distribute by id", "DISTRIBUTE BY"),
    # --- set operations -------------------------------------------------------------------------
    # a top-level set operation is a view class (`tests/unit/test_setops.py`); over one, refused
    no(
        "union_in_subquery",
        "select u.id, count(*) as n from (select id from eq_shop.orders union select id from eq_shop.customers) u "
        "group by u.id",
        "set operation UNION in a subquery or CTE",
    ),
    no(
        "intersect_joined",
        "select c.id from eq_shop.customers c join (select id from eq_shop.orders intersect all "
        "select id from eq_shop.customers) i on c.id = i.id",
        "set operation INTERSECT ALL in a subquery or CTE",
    ),
    no(
        "except_aggregate_branch",
        "select id from eq_shop.orders except select max(id) as id from eq_shop.customers",
        "an aggregate branch of a set operation",
    ),
    no("recursive_cte", "with recursive r as (select 1 as n) select n from r", "WITH RECURSIVE"),
    # --- subqueries in expressions (EXISTS and IN tests in the WHERE are semi-join views) --------
    no(
        "exists_not_equality",
        "select id from eq_shop.orders o where exists (select 1 from eq_shop.customers c where c.id > o.customer_id)",
        "correlated condition",
    ),
    no(
        "in_subquery_in_select",
        "select id, customer_id in (select id from eq_shop.customers) as known from eq_shop.orders",
        "in the SELECT list",
    ),
    no(
        "scalar_subquery_where",
        "select id from eq_shop.orders where amount > (select max(amount) from eq_shop.orders)",
        "scalar subquery",
    ),
    no(
        "scalar_subquery_select",
        "select id, (select max(amount) from eq_shop.orders) as top from eq_shop.orders",
        "scalar subquery",
    ),
    no(
        "subquery_in_on",
        "select o.id from eq_shop.orders o join eq_shop.customers c on c.id = (select max(id) from eq_shop.customers)",
        "scalar subquery",
    ),
    no(
        "any_subquery",
        "select id from eq_shop.orders where customer_id = any (select id from eq_shop.customers)",
        "ANY (subquery)",
    ),
    no(  # sqlglot puts ALL's SELECT under it unwrapped: once taken for one source, db.customers unread
        "all_subquery",
        "select id from eq_shop.orders where customer_id > all (select id from eq_shop.customers)",
        "ALL (subquery)",
    ),
    no(  # a SELECT straight under a function, as sqlglot reads ARRAY(SELECT …): a subquery all the same
        "array_subquery",
        "select id, array(select id from eq_shop.customers) as ids from eq_shop.orders",
        "scalar subquery",
    ),
    no(
        "subquery_in_having",
        "select status, count(*) as n from eq_shop.orders group by status "
        "having count(*) > (select count(*) from eq_shop.customers)",
        "scalar subquery",
    ),
    # --- non-deterministic functions ------------------------------------------------------------
    no("rand", "select id, rand() as r from eq_shop.orders", "non-deterministic function rand()"),
    no("rand_seeded_where", "select id from eq_shop.orders where rand(42) < 0.5", "non-deterministic function rand()"),
    no("randn", "select id, randn() as r from eq_shop.orders", "non-deterministic function randn()"),
    no("uuid", "select id, uuid() as u from eq_shop.orders", "non-deterministic function uuid()"),
    no(
        "current_timestamp",
        "select id, current_timestamp() as ts from eq_shop.orders",
        "non-deterministic function current_timestamp()",
    ),
    no(
        "current_timestamp_bare",
        "select id from eq_shop.orders where created < current_timestamp",
        "non-deterministic function current_timestamp()",
    ),
    no("now", "select id, now() as ts from eq_shop.orders", "non-deterministic function now()"),
    no(
        "current_date",
        "select id from eq_shop.orders where created = current_date()",
        "non-deterministic function current_date()",
    ),
    no("curdate", "select id, curdate() as d from eq_shop.orders", "non-deterministic function curdate()"),
    no(
        "monotonically_increasing_id",
        "select id, monotonically_increasing_id() as m from eq_shop.orders",
        "non-deterministic function monotonically_increasing_id()",
    ),
    no(
        "input_file_name",
        "select id, input_file_name() as f from eq_shop.orders",
        "non-deterministic function input_file_name()",
    ),
    no(
        "spark_partition_id",
        "select id, spark_partition_id() as p from eq_shop.orders",
        "non-deterministic function spark_partition_id()",
    ),
    no(
        "shuffle",
        "select id, shuffle(array(id, customer_id)) as s from eq_shop.orders",
        "non-deterministic function shuffle()",
    ),
    no(
        "current_user",
        "select id, current_user() as u from eq_shop.orders",
        "non-deterministic function current_user()",
    ),
    no("unix_timestamp_now", "select id, unix_timestamp() as u from eq_shop.orders", "non-deterministic function"),
    no(
        "nondeterministic_in_on",
        "select o.id from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id and rand() > 0.1",
        "non-deterministic function rand()",
    ),
    # --- aggregates that cannot be maintained -----------------------------------------------------
    no(
        "collect_list",
        "select status, collect_list(id) as ids from eq_shop.orders group by status",
        "aggregate collect_list()",
    ),
    no(
        "percentile_approx",
        "select status, percentile_approx(amount, 0.5) as p from eq_shop.orders group by status",
        "aggregate percentile_approx()",
    ),
    no("first", "select status, first(id) as f from eq_shop.orders group by status", "aggregate first()"),
    no("last", "select status, last(id) as l from eq_shop.orders group by status", "aggregate last()"),
    no("any_value", "select status, any_value(id) as a from eq_shop.orders group by status", "aggregate any_value()"),
    no("max_by", "select status, max_by(id, amount) as m from eq_shop.orders group by status", "aggregate max_by()"),
    no(
        "ignore_nulls",
        "select status, max(amount) ignore nulls as m from eq_shop.orders group by status",
        "IGNORE NULLS",
    ),
    no(
        "nested_aggregate",
        "select status, sum(max(amount)) as m from eq_shop.orders group by status",
        "nested aggregate",
    ),
    no(
        "aggregate_in_where",
        "select count(*) as n from eq_shop.orders where count(*) > 1",
        "aggregate COUNT(*) in WHERE",
    ),
    no(
        "ungrouped_column",
        "select id, count(*) as n from eq_shop.orders group by status",
        "neither in GROUP BY nor aggregated",
    ),
    no(
        "ungrouped_column_global",
        "select status, count(*) as n from eq_shop.orders",
        "neither in GROUP BY nor aggregated",
    ),
    no("having_without_aggregate", "select id from eq_shop.orders having id > 1", "neither in GROUP BY nor aggregated"),
    no(
        "ungrouped_having",
        "select status, count(*) as n from eq_shop.orders group by status having amount > 1",
        "neither in GROUP BY nor aggregated",
    ),
    # --- generators and special relations -----------------------------------------------------------
    no("lateral_view_explode", "select id, x from eq_shop.orders lateral view explode(array(1, 2)) t as x", "LATERAL"),
    no("lateral_view_outer", "select id, x from eq_shop.orders lateral view outer explode(array(1)) t as x", "LATERAL"),
    no("explode_in_select", "select explode(array(id, customer_id)) as x from eq_shop.orders", "generator"),
    no("posexplode", "select posexplode(array(id)) as (p, x) from eq_shop.orders", "generator"),
    no("inline", "select inline(array(struct(id, amount))) from eq_shop.orders", "generator"),
    no("stack", "select stack(2, id, customer_id) as x from eq_shop.orders", "generator"),
    no("json_tuple", "select json_tuple(status, 'a') as a from eq_shop.orders", "generator"),
    no("lateral_subquery", "select o.id, l.y from eq_shop.orders o, lateral (select o.id + 1 as y) l", "LATERAL"),
    no("tablesample", "select id from eq_shop.orders tablesample (10 percent)", "TABLESAMPLE"),
    no("tablesample_bucket", "select id from eq_shop.orders tablesample (bucket 1 out of 2)", "TABLESAMPLE"),
    no("version_as_of", "select id from eq_shop.orders version as of 3", "time travel"),
    no("timestamp_as_of", "select id from eq_shop.orders timestamp as of '2024-01-01'", "time travel"),
    no("at_version", "select id from eq_shop.orders@v3", "time travel on eq_shop.orders@v3"),
    no("table_function_range", "select id from range(10)", "table-valued function"),
    no("table_function_explode", "select * from explode(array(1, 2))", "table-valued function EXPLODE"),
    no("values", "select id from values (1), (2) as t(id)", "relation VALUES"),
    no("pivot", "select * from eq_shop.orders pivot (count(*) for status in ('a', 'b'))", "PIVOT"),
    no("unpivot", "select * from eq_shop.regions unpivot (v for k in (name))", "UNPIVOT"),
    no("script_transform", "select transform(id, status) using 'cat' as (a, b) from eq_shop.orders", "TRANSFORM"),
    no("table_alias_columns", "select a from eq_shop.regions as r(a, b)", "column aliases in the table alias"),
    # --- joins ------------------------------------------------------------------------------------------
    no(
        "left_semi",
        "select o.id from eq_shop.orders o left semi join eq_shop.customers c on o.customer_id = c.id",
        "LEFT SEMI JOIN",
    ),
    no(
        "left_anti",
        "select o.id from eq_shop.orders o left anti join eq_shop.customers c on o.customer_id = c.id",
        "LEFT ANTI JOIN",
    ),
    no("semi", "select o.id from eq_shop.orders o semi join eq_shop.customers c on o.customer_id = c.id", "SEMI JOIN"),
    no("anti", "select o.id from eq_shop.orders o anti join eq_shop.customers c on o.customer_id = c.id", "ANTI JOIN"),
    no("natural_join", "select o.id from eq_shop.orders o natural join eq_shop.customers c", "NATURAL JOIN"),
    no(
        "derived_table_in_parenthesized_join",
        "select o.id from eq_shop.orders o left join (eq_shop.customers c join "
        "(select id from eq_shop.regions where id > 1) r on c.region_id = r.id) on o.customer_id = c.id",
        "a derived table or CTE inside a parenthesized join",
    ),
    no(
        "cte_in_parenthesized_join",
        "with r as (select id, 1 as flag from eq_shop.regions) select o.id, r.flag from eq_shop.orders o "
        "left join (eq_shop.customers c join r on c.region_id = r.id) on o.customer_id = c.id",
        "a derived table or CTE inside a parenthesized join",
    ),
    no(
        "null_supplied_subquery_constant",
        "select o.id, x.flag from eq_shop.orders o left join "
        "(select id, 1 as flag from eq_shop.customers) x on o.customer_id = x.id",
        "null-supplied side",
    ),
    no(
        "null_supplied_cte_coalesce",
        "with c as (select id, coalesce(name, 'n/a') as name "
        "from eq_shop.customers) select o.id, c.name from eq_shop.orders o left join c on o.customer_id = c.id",
        "null-supplied side",
    ),
    # --- grouping ------------------------------------------------------------------------------------------
    no(
        "grouping_sets",
        "select status, region_id, count(*) as n from eq_shop.orders group by grouping sets ((status), (region_id))",
        "GROUPING SETS",
    ),
    no(
        "rollup",
        "select status, region_id, count(*) as n from eq_shop.orders group by rollup (status, region_id)",
        "ROLLUP",
    ),
    no("cube", "select status, region_id, count(*) as n from eq_shop.orders group by cube (status, region_id)", "CUBE"),
    no("with_rollup", "select status, count(*) as n from eq_shop.orders group by status with rollup", "ROLLUP"),
    no("group_by_all_constants", "select 1 as one, count(*) as n from eq_shop.orders group by all", "GROUP BY ALL"),
    no(
        "grouping_function",
        "select status, grouping(status) as g, count(*) as n from eq_shop.orders group by status",
        "aggregate grouping()",
    ),
    no("distinct_on", "select distinct on (status) status, id from eq_shop.orders", "DISTINCT ON"),
    no(
        "distinct_group_by_unselected",
        "select distinct count(*) as n from eq_shop.orders group by status",
        "DISTINCT together with GROUP BY over columns it does not select",
    ),
    no(
        "distinct_group_by_one_unselected",
        "select distinct status, count(*) as n from eq_shop.orders group by status, customer_id",
        "DISTINCT together with GROUP BY over columns it does not select",
    ),
    no(
        "distinct_group_by_alias_not_trusted",
        "select distinct upper(status) as status, count(*) as n from eq_shop.orders group by status",
        "DISTINCT together with GROUP BY over columns it does not select",
    ),
    # --- subqueries that cannot be merged ------------------------------------------------------------------
    no(
        "cte_group_by_joined",
        "with t as (select customer_id, sum(amount) as total from eq_shop.orders "
        "group by customer_id) select c.name, t.total from eq_shop.customers c join t on t.customer_id = c.id",
        "a grouped subquery or CTE",
    ),
    no(
        "window_cte_joined",
        "with s as (select customer_id, min(amount) over (partition by customer_id) as m from eq_shop.orders) "
        "select s.customer_id, s.m, c.name from s join eq_shop.customers c on s.customer_id = c.id",
        "a subquery or CTE with window functions",
    ),
    no(
        "distinct_over_windows",
        "select distinct amount, min(amount) over (partition by status) as m from eq_shop.orders",
        "DISTINCT over rows of several partitions",
    ),
    # --- an aggregate or a window over an aggregate ----------------------------------------------------
    no(
        "aggregate_over_aggregate",
        "select sum(total) as grand from (select customer_id, sum(amount) as total from eq_shop.orders "
        "group by customer_id) t",
        "an aggregate over an aggregate (SUM(",
    ),
    no(
        "group_by_over_aggregate",
        "with t as (select customer_id, status, count(*) as n from eq_shop.orders group by customer_id, status) "
        "select status, max(n) as most from t group by status",
        "an aggregate over an aggregate",
    ),
    no(
        "distinct_over_aggregate",
        "select distinct t.n from (select status, count(*) as n from eq_shop.orders group by status) t",
        "an aggregate over an aggregate (a DISTINCT",
    ),
    no(
        "calculated_group_by_integer_constant",
        "select t.one, t.n from (select 1 as one, count(*) as n from eq_shop.orders group by 1) t",
        "GROUP BY the integer constant 1",
    ),
    no(
        "subquery_with_join",
        "select o.id, x.name from eq_shop.orders o join (select c.id, r.name "
        "from eq_shop.customers c join eq_shop.regions r on c.region_id = r.id) x on o.customer_id = x.id",
        "could not be merged",
    ),
    no(  # a FULL join's padded rows would include the rows the filter drops
        "full_join_filtered_subquery",
        "select o.id, x.name from eq_shop.orders o full join "
        "(select id, name from eq_shop.customers where tier = 'gold') x on o.customer_id = x.id",
        "could not be merged",
    ),
    no(
        "right_join_filtered_subquery_null_supplied",
        "select o.id, x.name from (select id, name from eq_shop.customers where tier = 'gold') x "
        "right join eq_shop.orders o on o.customer_id = x.id",
        "could not be merged",
    ),
    no(
        "ephemeral_left_join_filtered_constant",
        "with __dbt__cte__gold as (select id, name, 'gold' as tier from eq_shop.customers where tier = 'gold') "
        "select o.id, g.tier from eq_shop.orders o left join __dbt__cte__gold g on o.customer_id = g.id",
        "null-supplied side",
    ),
    # --- names -------------------------------------------------------------------------------------------
    no("reserved_alias", "select id as __ivm_x from eq_shop.orders", "reserved prefix __ivm_"),
    no("reserved_alias_upper_case", "select id as __IVM_X from eq_shop.orders", "reserved prefix __ivm_"),
    no(
        "reserved_alias_in_cte",
        "with t as (select id as __ivm_id from eq_shop.orders) select 1 as one from t",
        "reserved prefix __ivm_",
    ),
    no("reserved_source_column", "select id, __ivm_flag from eq_res.t", "reserved prefix __ivm_", schema="reserved"),
    no("reserved_source_column_star", "select * from eq_res.t", "source column '__ivm_flag'", schema="reserved"),
    no(
        "reserved_source_column_where",
        "select id from eq_res.t where __ivm_flag > 0",
        "reserved prefix __ivm_",
        schema="reserved",
    ),
    no("duplicate_column", "select id, id from eq_shop.orders", "duplicate column name 'id'"),
    no("duplicate_column_alias_case", "select id, customer_id as ID from eq_shop.orders", "duplicate column name 'ID'"),
    no(
        "duplicate_column_star_join",
        "select * from eq_shop.orders o join eq_shop.customers c on o.customer_id = c.id",
        "duplicate column name 'id'",
    ),
    no(
        "oracle_outer_both_stars",
        "select test_outer.*, test_inner.* from eq_ora.test_outer "
        "left join eq_ora.test_inner on test_outer.jouter = test_inner.jinner",
        "duplicate column name 'pk'",
        schema="oracle",
    ),
    no(
        "oracle_rowid",
        "select test_t1.*, test_t1.rowid as test_t1_rowid from eq_ora.test_t1",
        "unresolvable SQL",
        schema="oracle",
    ),
    no(
        "unnamed_aggregate",
        "select status, count(*) from eq_shop.orders group by status",
        "computed column COUNT(*) without a name",
    ),
    no("unnamed_expression", "select amount * 2 from eq_shop.orders", "without a name"),
    no("unknown_column", "select nope from eq_shop.orders", "unresolvable SQL"),
    no(
        "using_parenthesized_right",
        "select k from eq_nica.r full join (eq_nica.s full join eq_nica.t using (k)) using (k)",
        "with a parenthesized join on its right",
        schema="nica",
    ),
    no(
        "using_then_ambiguous_column",
        "select r.a from eq_nica.r full join eq_nica.s using (k) join eq_nica.t on k = t.a",
        "column k, which is ambiguous after a JOIN",
        schema="nica",
    ),
    no(
        "natural_full_join",
        "select k from eq_nica.r natural full join eq_nica.s",
        "NATURAL JOIN",
        schema="nica",
    ),
    no("unknown_table", "select id from eq_shop.nope", "no schema for source eq_shop.nope"),
    # --- not one SELECT ---------------------------------------------------------------------------------
    no("no_from", "select 1 as x", "a SELECT without FROM"),
    no("multiple_statements", "select id from eq_shop.orders; select id from eq_shop.customers", "2 statements"),
    no("insert", "insert into eq_shop.orders select * from eq_shop.orders", "non-SELECT statement (INSERT)"),
    no("create_table_as", "create table eq_shop.x as select id from eq_shop.orders", "non-SELECT statement (CREATE)"),
    no("delete", "delete from eq_shop.orders where id = 1", "non-SELECT statement (DELETE)"),
    no("unparseable", "select from where", "SQL that does not parse"),
    no("unparseable_paren", "select (id from eq_shop.orders", "SQL that does not parse"),
    no("empty", "  ", "an empty model"),
]
