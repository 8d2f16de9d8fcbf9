"""Models, sources and source data of the fast_mv functional tests.

A model's SQL is a template with `{orders}`-style placeholders for its sources:
`model(...)` fills them with dbt `source()` calls for the model file, and
`recompute(...)` with the tables' real names, to recompute the model with plain
Spark SQL and compare it with the view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCE_NAME = "src"

# Every source lives in the test's own schema, so dropping the schema cleans up.
SOURCES_YML = """
version: 2
sources:
  - name: src
    schema: "{{ target.schema }}"
    tables:
      - name: orders
      - name: customers
      - name: regions
      - name: items
      - name: parquet_items
      - name: plain_items
"""

CDF = "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)"

SHOP_TABLES = {
    "orders": "order_id BIGINT, customer_id BIGINT, amount DOUBLE, status STRING",
    "customers": "customer_id BIGINT, name STRING, region_id INT",
    "regions": "region_id INT, region_name STRING",
}

# NULLs in filter, join and output columns; duplicate rows (identical on every column).
SHOP_ROWS = {
    "orders": """
        (1, 10, 120.0, 'open'), (2, 10, 5.0, 'open'), (3, 11, 300.0, 'shipped'),
        (4, 12, 50.0, NULL), (5, NULL, 80.0, 'open'), (6, 13, NULL, 'open'),
        (7, 11, 300.0, 'shipped'), (7, 11, 300.0, 'shipped'), (8, 99, 40.0, 'open')
    """,
    "customers": """
        (10, 'ann', 1), (11, 'bob', 2), (12, 'cyd', NULL), (13, 'dan', 3),
        (NULL, 'nobody', 1), (14, 'eve', 2)
    """,
    "regions": "(1, 'north'), (2, 'south'), (3, 'east'), (NULL, 'nowhere')",
}

# Inserts, updates (to and from NULL, of filter and join columns), deletes and new
# duplicates on every source; each statement is one Delta version.
SHOP_CHANGES = [
    "INSERT INTO {orders} VALUES (9, 14, 70.0, 'open'), (10, NULL, NULL, NULL), "
    "(1, 10, 120.0, 'open'), (11, 13, 15.0, 'open'), (11, 13, 15.0, 'open'), (12, 15, 60.0, 'open')",
    "UPDATE {orders} SET "
    "amount = CASE WHEN order_id IN (2, 3) THEN amount + 100 ELSE amount END, "
    "status = CASE WHEN order_id IN (2, 3) THEN 'updated' WHEN order_id = 6 THEN NULL ELSE status END, "
    "customer_id = CASE WHEN order_id = 5 THEN 12 ELSE customer_id END "
    "WHERE order_id IN (2, 3, 5, 6)",
    "DELETE FROM {orders} WHERE order_id IN (4, 8)",
    "INSERT INTO {customers} VALUES (99, 'zed', 3), (15, 'fay', 1), (15, 'fay', 1)",
    "UPDATE {customers} SET "
    "name = CASE WHEN customer_id = 11 THEN 'robert' ELSE name END, "
    "region_id = CASE WHEN customer_id = 12 THEN 1 ELSE region_id END "
    "WHERE customer_id IN (11, 12)",
    "DELETE FROM {customers} WHERE customer_id = 13",
    "INSERT INTO {regions} VALUES (4, 'west'), (2, 'south')",
    "UPDATE {regions} SET region_name = 'north-east' WHERE region_id = 1",
    "DELETE FROM {regions} WHERE region_id = 3",
]

# Single source: a filter, computed columns, a NULL-tolerant predicate.
ORDERS_MV = """
select
    order_id,
    customer_id,
    amount,
    amount * 2 as doubled,
    upper(status) as status_code
from {orders}
where amount >= 10 or status is null
"""

# Two-way inner join.
ORDER_CUSTOMERS = """
select
    o.order_id,
    o.amount,
    o.status,
    c.customer_id,
    c.name as customer_name
from {orders} o
join {customers} c on o.customer_id = c.customer_id
"""

# Three-way inner join.
ORDER_REGIONS = """
select
    o.order_id,
    o.amount,
    c.name as customer_name,
    r.region_name
from {orders} o
join {customers} c on o.customer_id = c.customer_id
join {regions} r on c.region_id = r.region_id
"""

SHOP_MODELS = {
    "orders_mv": (ORDERS_MV, ["order_id", "customer_id", "amount", "doubled", "status_code"]),
    "order_customers": (ORDER_CUSTOMERS, ["order_id", "amount", "status", "customer_id", "customer_name"]),
    "order_regions": (ORDER_REGIONS, ["order_id", "amount", "customer_name", "region_name"]),
}

# Aggregates: over a join with HAVING and a distinct count, grouped by a column with NULLs,
# global (with a STDDEV: DOUBLE, compared within the float tolerance), and SELECT DISTINCT.
CUSTOMER_TOTALS = """
select
    c.name,
    count(*) as orders,
    sum(o.amount) as total,
    round(avg(o.amount), 2) as mean,
    max(o.amount) as top,
    count(distinct o.status) as statuses
from {orders} o
join {customers} c on o.customer_id = c.customer_id
group by c.name
having count(*) >= 1
"""
STATUS_COUNTS = "select status, count(*) as n, min(amount) as low, sum(amount) as total from {orders} group by status"
ORDER_STATS = "select count(*) as n, sum(amount) as total, stddev(amount) as sd from {orders}"
DISTINCT_STATUSES = "select distinct status from {orders}"
# The classes that landed after the first ones, over orders and customers: UNION, EXISTS, an
# aggregate over a UNION ALL, calculated columns over an aggregate.
CUSTOMER_IDS = "select customer_id from {orders} union select customer_id from {customers}"
BUYERS = (
    "select c.customer_id, c.name from {customers} c "
    "where exists (select 1 from {orders} o where o.customer_id = c.customer_id)"
)
IDS_COUNTED = (
    "select k, count(*) as n from (select customer_id as k from {orders} "
    "union all select customer_id from {customers}) u group by k"
)
STATUS_SHARES = (
    "select coalesce(status, 'none') as status, n, round(total / n, 2) as mean "
    "from (select status, count(*) as n, sum(amount) as total from {orders} group by status) g"
)
AGGREGATE_MODELS = {
    "customer_totals": (CUSTOMER_TOTALS, ["name", "orders", "total", "mean", "top", "statuses"]),
    "status_counts": (STATUS_COUNTS, ["status", "n", "low", "total"]),
    "order_stats": (ORDER_STATS, ["n", "total", "sd"]),
    "distinct_statuses": (DISTINCT_STATUSES, ["status"]),
}
# Outer joins: every customer with its orders (padded when none), the parenthesized join on the
# null-supplied side, a FULL join, and an aggregate over a LEFT JOIN (per customer: its orders).
OUTER_MODELS = {
    "customer_orders": (
        "select c.customer_id, c.name, o.order_id, o.amount from {customers} c left join {orders} o "
        "on o.customer_id = c.customer_id"
    ),
    "customer_order_regions": (
        "select c.name, o.order_id, r.region_name from {customers} c left join "
        "({orders} o join {regions} r on r.region_id = o.customer_id % 4) on o.customer_id = c.customer_id"
    ),
    "orders_full_customers": (
        "select o.order_id, c.name, coalesce(c.region_id, -1) as region from {orders} o full join {customers} c "
        "on o.customer_id = c.customer_id"
    ),
    "customer_order_counts": (
        "select c.name, count(o.order_id) as n, sum(o.amount) as total, max(o.status) as last_status "
        "from {customers} c left join {orders} o on o.customer_id = c.customer_id group by c.name"
    ),
}

# A plain dbt view over a fast_mv: `ref()` must resolve to the model's columns only.
ORDERS_MV_REF = """
{{ config(materialized='view') }}
select * from {{ ref('orders_mv') }}
"""

CONSISTENT_SCHEMA_YML = """
version: 2
models:
{models}
"""

# --- a single-source model for the consistency, rebuild and explain tests ------------

ITEMS_TABLE = "item_id BIGINT, name STRING, price DOUBLE"
ITEMS_ROWS = "(1, 'apple', 1.5), (2, 'pear', 2.0), (3, NULL, 3.0), (4, 'fig', NULL), (4, 'fig', NULL)"

ITEM_MV = """
select item_id, name, price
from {items}
where price > 1 or price is null
"""

ITEM_MV_CHANGED = """
select item_id, upper(name) as name_upper, price * 10 as price_x10
from {items}
"""

# --- models fast_mv must refuse ---------------------------------------------------------

PLAIN_ITEMS_TABLE = "item_id BIGINT, name STRING, price DOUBLE"

FROM_PARQUET = "select item_id, name from {parquet_items}"
FROM_NO_CDF = "select item_id, name from {plain_items}"
RESERVED_PREFIX = "select item_id, name as __ivm_name from {items}"
# A windowed subquery joined to other rows: refused (windows over the rows or groups alone are maintained by partition).
WINDOW_FUNCTION = (
    "select s.item_id from (select item_id, row_number() over (order by item_id) as rn from {items}) s "
    "join {items} i on s.item_id = i.item_id"
)
# A SQL function of the session (dbt runs on the same session): not a Spark built-in.
UDF_FUNCTION = "CREATE OR REPLACE TEMPORARY FUNCTION ivm_twice(x DOUBLE) RETURNS DOUBLE RETURN x * 2"
UDF_MODEL = "select item_id, ivm_twice(price) as p from {items}"
UDF_DECLARED = "{{{{ config(deterministic_functions=['ivm_twice']) }}}}\n" + UDF_MODEL
# A declared key over distinct items: refreshes after appends take the append path.
ITEM_KEYED = (
    "{{{{ config(unique_key='item_id') }}}}\nselect item_id, name, price from {items} where price > 1 or price is null"
)
KEYED_ITEMS_ROWS = "(1, 'apple', 1.5), (2, 'pear', 0.5), (3, NULL, 3.0)"
BAD_UNIQUE_KEY = "{{{{ config(unique_key='item_key') }}}}\nselect item_id, name from {items}"


def model(template: str, config: str = "") -> str:
    """The model file: sources through dbt's source(); `config`: more of the model's config()."""
    names = ["orders", "customers", "regions", "items", "parquet_items", "plain_items"]
    extra = f", {config}" if config else ""
    return f"{{{{ config(materialized='fast_mv'{extra}) }}}}\n" + template.format(
        **{n: f"{{{{ source('{SOURCE_NAME}', '{n}') }}}}" for n in names}
    )


def recompute(template: str, schema: str) -> str:
    """The model's SQL on the sources' real names, for Spark to run directly."""
    names = ["orders", "customers", "regions", "items", "parquet_items", "plain_items"]
    return template.format(**{n: f"{schema}.{n}" for n in names})


def consistent_schema_yml(*models: str) -> str:
    lines = "\n".join(f"  - name: {m}\n    data_tests: [fast_mv_consistent]" for m in models)
    return CONSISTENT_SCHEMA_YML.format(models=lines)


def shop_models(models: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The project files of a test class over the shop's sources: each of `models` (name: SQL
    template) as a fast_mv model with its consistency test, and the `extra` files as they are."""
    files = {f"{name}.sql": model(sql) for name, sql in models.items()}
    files.update(extra or {})
    files["sources.yml"] = SOURCES_YML
    files["schema.yml"] = consistent_schema_yml(*models)
    return files


def create_source(spark: Any, schema: str, name: str, columns: str, rows: str | None = None, using: str = CDF) -> None:
    spark.sql(f"CREATE TABLE {schema}.{name} ({columns}) {using}")
    if rows:
        spark.sql(f"INSERT INTO {schema}.{name} VALUES {rows}")


# --- a small TPC-DI-like project (integration_tests/test_tpcdi.py) -------------------------------
# A customer change log (one row per version: a customer's eff_ts are distinct) and a trade feed
# loaded more than once (a trade's loaded_at are distinct); both in the test's schema.
TPCDI_SOURCES_YML = """
version: 2
sources:
  - name: tpcdi
    schema: "{{ target.schema }}"
    tables:
      - name: customer_changes
      - name: trades_raw
      - name: trades_late
"""
TPCDI_TABLES = {
    "customer_changes": "customer_id BIGINT, eff_ts TIMESTAMP, tier STRING, city STRING",
    "trades_raw": "trade_id BIGINT, customer_id BIGINT, trade_ts TIMESTAMP, qty INT, price DECIMAL(10,2), "
    "loaded_at TIMESTAMP",
    # a second feed of the same trades (late corrections), read beside trades_raw by a UNION ALL
    "trades_late": "trade_id BIGINT, customer_id BIGINT, trade_ts TIMESTAMP, qty INT, price DECIMAL(10,2), "
    "loaded_at TIMESTAMP",
}
TPCDI_ROWS = {
    "customer_changes": """
        (1, TIMESTAMP'2024-01-01 00:00:00', 'gold', 'Austin'), (1, TIMESTAMP'2024-03-01 00:00:00', 'silver', 'Austin'),
        (2, TIMESTAMP'2024-01-15 00:00:00', 'bronze', 'Boston'), (2, TIMESTAMP'2024-02-15 00:00:00', 'bronze', NULL),
        (2, TIMESTAMP'2024-04-01 00:00:00', 'gold', 'Boston'), (3, TIMESTAMP'2024-02-01 00:00:00', NULL, 'Chicago'),
        (4, TIMESTAMP'2024-01-10 00:00:00', 'silver', 'Denver')
    """,
    "trades_raw": """
        (100, 1, TIMESTAMP'2024-01-05 10:00:00', 10, 12.50, TIMESTAMP'2024-06-01 00:00:00'),
        (100, 1, TIMESTAMP'2024-01-05 10:00:00', 12, 12.50, TIMESTAMP'2024-06-02 00:00:00'),
        (101, 1, TIMESTAMP'2024-03-05 09:00:00', 5, 40.00, TIMESTAMP'2024-06-01 00:00:00'),
        (102, 2, TIMESTAMP'2024-02-20 11:00:00', 7, 3.25, TIMESTAMP'2024-06-01 00:00:00'),
        (103, 2, TIMESTAMP'2024-04-02 12:00:00', 0, 9.99, TIMESTAMP'2024-06-01 00:00:00'),
        (104, 3, TIMESTAMP'2024-02-03 08:00:00', 3, NULL, TIMESTAMP'2024-06-01 00:00:00'),
        (105, 4, TIMESTAMP'2024-01-11 15:00:00', 8, 20.00, TIMESTAMP'2024-06-01 00:00:00'),
        (106, 9, TIMESTAMP'2024-01-11 15:00:00', 1, 1.00, TIMESTAMP'2024-06-01 00:00:00')
    """,
    "trades_late": """
        (104, 3, TIMESTAMP'2024-02-03 08:00:00', 3, 2.50, TIMESTAMP'2024-06-05 00:00:00'),
        (105, 4, TIMESTAMP'2024-01-11 15:00:00', 8, 20.00, TIMESTAMP'2024-06-01 00:00:00')
    """,
}
# The feed the dedup reads: both feeds, by a UNION ALL (`trades_all`).
TPCDI_TRADES = "{{ ref('trades_all') }}"
TPCDI_MODELS = {
    # the two feeds as one (UNION ALL keeps a trade loaded by both, with the same load time too)
    "trades_all": (
        "select trade_id, customer_id, trade_ts, qty, price, loaded_at, 'batch' as feed "
        "from {{ source('tpcdi', 'trades_raw') }} union all "
        "select trade_id, customer_id, trade_ts, qty, price, loaded_at, 'late' as feed "
        "from {{ source('tpcdi', 'trades_late') }}"
    ),
    # SCD-2: end dates by LEAD over the customer's versions, a current flag
    "dim_customer": (
        "select customer_id, eff_ts, tier, city, "
        "coalesce(lead(eff_ts) over (partition by customer_id order by eff_ts), "
        "timestamp'9999-12-31 00:00:00') as end_ts, "
        "lead(eff_ts) over (partition by customer_id order by eff_ts) is null as is_current "
        "from {{ source('tpcdi', 'customer_changes') }}"
    ),
    # keep each trade's latest load
    "trades_dedup": (
        "select trade_id, customer_id, trade_ts, qty, price from (select trade_id, customer_id, trade_ts, qty, "
        "price, row_number() over (partition by trade_id order by loaded_at desc, feed) as rn "
        f"from {TPCDI_TRADES}) s where rn = 1"
    ),
    # each trade's loads, once per trade and customer: DISTINCT over windows by the trade (TPC-DI's trades)
    "trade_loads": (
        "select distinct trade_id, customer_id, min(loaded_at) over (partition by trade_id) as first_load, "
        "max(loaded_at) over (partition by trade_id) as last_load, count(*) over (partition by trade_id) as loads "
        "from {{ ref('trades_all') }}"
    ),
    # a rolling window over a join with a UNION ALL of the raw feeds (TPC-DI's 52-week low over daily
    # market feeds joined to dates): the join over each feed read as one leaf
    "customer_activity": (
        "select t.trade_id, t.feed, d.customer_id, d.tier, sum(t.qty) over (partition by t.customer_id "
        "order by t.trade_ts, t.trade_id, t.feed, t.loaded_at rows between 2 preceding and current row) as recent_qty "
        "from (select trade_id, customer_id, trade_ts, qty, loaded_at, 'batch' as feed "
        "from {{ source('tpcdi', 'trades_raw') }} union all select trade_id, customer_id, trade_ts, qty, loaded_at, "
        "'late' from {{ source('tpcdi', 'trades_late') }}) t join {{ ref('dim_customer') }} d "
        "on t.customer_id = d.customer_id and d.is_current"
    ),
    # each trade with the customer's version at the trade's time (point-in-time, BETWEEN)
    "fact_trade": (
        "select t.trade_id, t.trade_ts, t.qty, t.price, t.qty * t.price as amount, d.customer_id, d.tier, d.city, "
        "d.is_current as customer_current from {{ ref('trades_dedup') }} t join {{ ref('dim_customer') }} d "
        "on t.customer_id = d.customer_id and t.trade_ts between d.eff_ts and d.end_ts"
    ),
    # the report: calculated columns over the aggregate's (a ratio that may divide by 0, a CASE),
    # GROUP BY ALL, and an ORDER BY that the view ref() reads keeps
    "tier_report": (
        "with g as (select tier, count(*) as trades, sum(amount) as volume, sum(qty) as shares, "
        "count(distinct customer_id) as customers, max(trade_ts) as last_trade from {{ ref('fact_trade') }} "
        "group by all) "
        "select coalesce(tier, 'none') as tier, trades, volume, volume / shares as avg_price, "
        "round(volume / customers, 2) as per_customer, "
        "case when trades >= 3 then 'active' when trades = 2 then 'some' else 'quiet' end as activity, last_trade "
        "from g where trades > 0 order by trades desc, tier"
    ),
}
# Each round: new versions (an SCD change ends the current one), a correction in place, a version
# deleted (its neighbours' end dates join up), a new customer; new trades, a trade loaded again
# (the dedup switches to the new load), a load deleted (back to the older one), a price fixed.
TPCDI_CHANGES = [
    [
        "INSERT INTO {customer_changes} VALUES (1, TIMESTAMP'2024-05-01 00:00:00', 'platinum', 'Dallas'), "
        "(5, TIMESTAMP'2024-02-01 00:00:00', 'bronze', 'El Paso'), (3, TIMESTAMP'2024-03-10 00:00:00', 'gold', NULL)",
        "UPDATE {customer_changes} SET city = 'Bangor' "
        "WHERE customer_id = 2 AND eff_ts = TIMESTAMP'2024-02-15 00:00:00'",
        "INSERT INTO {trades_raw} VALUES "
        "(107, 5, TIMESTAMP'2024-02-02 10:00:00', 4, 5.00, TIMESTAMP'2024-06-03 00:00:00'), "
        "(108, 1, TIMESTAMP'2024-05-02 10:00:00', 2, 100.00, TIMESTAMP'2024-06-03 00:00:00'), "
        "(102, 2, TIMESTAMP'2024-02-20 11:00:00', 9, 3.25, TIMESTAMP'2024-06-03 00:00:00')",
        "UPDATE {trades_raw} SET price = 41.00 WHERE trade_id = 101",
        "INSERT INTO {trades_late} VALUES "
        "(101, 1, TIMESTAMP'2024-03-05 09:00:00', 5, 42.00, TIMESTAMP'2024-06-06 00:00:00')",
    ],
    [
        "DELETE FROM {customer_changes} WHERE customer_id = 2 AND eff_ts = TIMESTAMP'2024-02-15 00:00:00'",
        "UPDATE {customer_changes} SET tier = 'gold' WHERE customer_id = 4",
        "DELETE FROM {customer_changes} WHERE customer_id = 5",
        "DELETE FROM {trades_raw} WHERE trade_id = 100 AND loaded_at = TIMESTAMP'2024-06-02 00:00:00'",
        "DELETE FROM {trades_raw} WHERE trade_id = 103",
        "DELETE FROM {trades_late} WHERE trade_id = 101",
        "UPDATE {trades_late} SET qty = 9 WHERE trade_id = 105",
        "INSERT INTO {trades_raw} VALUES (109, 3, TIMESTAMP'2024-03-11 00:00:00', 6, 7.50, "
        "TIMESTAMP'2024-06-04 00:00:00'), (110, 2, TIMESTAMP'2024-02-16 00:00:00', 1, 2.00, "
        "TIMESTAMP'2024-06-04 00:00:00')",
    ],
]
