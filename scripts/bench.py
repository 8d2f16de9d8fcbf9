"""Benchmark: incremental refresh vs full rebuild, same Spark session, same run.

    .venv/bin/python scripts/bench.py --fact 1000000 --fraction 0.001          # a 3-way join view
    .venv/bin/python scripts/bench.py --aggregate --fact 10000000 --groups 1000 1000000
    .venv/bin/python scripts/bench.py --outer --fact 10000000

Prints each refresh's time with the statements that dominate it, the full rebuild's
time, and checks every refreshed view against its recompute. `--aggregate`: SUM, COUNT, AVG
and MAX by group over one source and over a join with a dimension, for each group count,
after insert-only and after mixed changes of `--fraction` of the source. `--outer`: a LEFT
JOIN of the fact (preserved) with returns (null-supplied, one per tenth order), after mixed
changes of `--fraction` of each side in turn.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from dbt_ivm.session import SparkDatabase, get_spark

DB = "ivm_bench"
VIEW_SQL = f"""
select f.order_id, f.amount, f.status, c.name as customer, p.category
from {DB}.fact f
join {DB}.customers c on f.customer_id = c.customer_id
join {DB}.products p on f.product_id = p.product_id
"""


class TimedDatabase(SparkDatabase):
    def __init__(self, spark: Any):
        super().__init__(spark)
        self.timings: list[tuple[float, str]] = []

    def execute(self, sql: str) -> None:
        t = time.time()
        super().execute(sql)
        self.timings.append((time.time() - t, sql))

    def query(self, sql: str) -> list[dict[str, Any]]:
        t = time.time()
        rows = super().query(sql)
        self.timings.append((time.time() - t, sql))
        return rows


def setup(spark: Any, n: int) -> None:
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    cdf = "using delta tblproperties (delta.enableChangeDataFeed = true)"
    spark.sql(f"create table {DB}.customers (customer_id bigint, name string) {cdf}")
    spark.sql(f"create table {DB}.products (product_id bigint, category string) {cdf}")
    spark.sql(
        f"create table {DB}.fact (order_id bigint, customer_id bigint, product_id bigint, "
        f"amount double, status string) {cdf}"
    )
    spark.sql(f"insert into {DB}.customers select id, concat('c', id) from range(10000)")
    spark.sql(f"insert into {DB}.products select id, concat('cat', id % 20) from range(1000)")
    spark.sql(
        f"insert into {DB}.fact select id, (id * 7) % 10000, (id * 13) % 1000, (id % 997) * 1.5, "
        f"if(id % 3 = 0, 'open', 'shipped') from range({n})"
    )


def change_fact(spark: Any, n: int, fraction: float, seed: int, inserts_only: bool = False) -> int:
    k = max(1, int(n * fraction / (1 if inserts_only else 3)))
    base = 10_000_000 * (seed + 1)
    spark.sql(f"insert into {DB}.fact select {base} + id, id % 10000, id % 1000, 1.0, 'new' from range({k})")
    if not inserts_only:
        step = n // k
        spark.sql(
            f"update {DB}.fact set amount = amount + 1, status = 'upd' "
            f"where order_id < {n} and order_id % {step} = {seed % step}"
        )
        spark.sql(f"delete from {DB}.fact where order_id < {n} and order_id % {step} = {(seed + 1) % step}")
    return k


def change_customers(spark: Any, fraction: float) -> None:
    spark.sql(f"update {DB}.customers set name = concat(name, '!') where customer_id % {int(1 / fraction)} = 5")


def timed(db: TimedDatabase, label: str, fn) -> float:
    db.timings.clear()
    t = time.time()
    outcome = fn()
    elapsed = time.time() - t
    top = sorted(db.timings, key=lambda x: -x[0])[:3]
    print(f"{label}: {elapsed:6.2f} s  [{outcome.message}]")
    for sec, sql in top:
        print(f"      {sec:5.2f} s  {sql[:110]}")
    return elapsed


AGGREGATES = "count(*) as n, sum(s.amount) as total, avg(s.amount) as mean, max(s.amount) as top"
AGGREGATE_VIEWS = {
    "by group": f"select s.g, {AGGREGATES} from {DB}.sales s group by s.g",
    "by group, joined": (
        f"select s.g, d.region, {AGGREGATES} from {DB}.sales s join {DB}.dim d on s.d = d.d group by s.g, d.region"
    ),
}


def setup_sales(spark: Any, n: int, groups: int) -> None:
    """`sales` (n rows, `groups` groups g, dimension key d = g % 1000) and `dim` (1000 rows)."""
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    cdf = "using delta tblproperties (delta.enableChangeDataFeed = true)"
    spark.sql(f"create table {DB}.dim (d bigint, region string) {cdf}")
    spark.sql(f"insert into {DB}.dim select id, concat('r', id % 17) from range(1000)")
    spark.sql(f"create table {DB}.sales (id bigint, g bigint, d bigint, amount double) {cdf}")
    spark.sql(
        f"insert into {DB}.sales select id, (id * 7919) % {groups}, ((id * 7919) % {groups}) % 1000, "
        f"(id % 997) * 1.5 from range({n})"
    )


def change_sales(spark: Any, n: int, groups: int, fraction: float, seed: int, inserts_only: bool) -> str:
    """Insert `fraction` of n rows into existing groups; mixed: a third each inserted, updated, deleted."""
    k = max(1, int(n * fraction / (1 if inserts_only else 3)))
    base = 10 * n * (seed + 1)
    spark.sql(
        f"insert into {DB}.sales select {base} + id, (id * 31) % {groups}, ((id * 31) % {groups}) % 1000, "
        f"(id % 991) * 1.5 from range({k})"
    )
    if inserts_only:
        return f"+{k}"
    step = n // k
    spark.sql(f"update {DB}.sales set amount = amount + 1 where id < {n} and id % {step} = {seed % step}")
    spark.sql(f"delete from {DB}.sales where id < {n} and id % {step} = {(seed + 1) % step}")
    return f"+{k}/~{k}/-{k}"


def aggregate_bench(spark: Any, db: TimedDatabase, n: int, groups: list[int], fraction: float, check: bool) -> None:
    rows = []
    for g in groups:
        t = time.time()
        setup_sales(spark, n, g)
        print(f"\nsetup: {n} sales rows in {g} groups, 1000 dimension rows in {time.time() - t:.1f} s")
        for label, sql in AGGREGATE_VIEWS.items():
            view = TableName(DB, "agg_" + label.replace(" ", "_").replace(",", ""))

            def m(sql: str = sql, view: TableName = view) -> Maintainer:
                return Maintainer(db, view, sql, refresh_policy="incremental")

            timed(db, f"[{g} groups, {label}] first build", lambda: m().materialize(full_refresh=True))
            for seed, inserts_only in ((1, True), (2, False)):
                kind = "insert-only" if inserts_only else "mixed"
                change = change_sales(spark, n, g, fraction, seed, inserts_only)
                refresh = timed(db, f"[{g} groups, {label}] refresh {kind} {change}", lambda: m().materialize())
                rebuild = timed(db, f"[{g} groups, {label}] rebuild", lambda: m().materialize(full_refresh=True))
                rows.append((g, label, kind, refresh, rebuild))
                if check:
                    diff = spark.sql(consistency_sql(db, view)).count()
                    assert diff == 0, f"{view}: {diff} differing rows"
    print("\ngroups     view               change       refresh   rebuild   speed-up")
    for g, label, kind, refresh, rebuild in rows:
        print(f"{g:<10} {label:<18} {kind:<12} {refresh:7.2f} s {rebuild:7.2f} s {rebuild / refresh:8.1f}x")


OUTER_VIEW = f"""
select f.order_id, f.amount, r.reason, r.refund
from {DB}.orders f
left join {DB}.returns r on r.order_id = f.order_id
"""


def setup_outer(spark: Any, n: int) -> None:
    """`orders` (n rows) and `returns` (one for every tenth order)."""
    spark.sql(f"drop database if exists {DB} cascade")
    spark.sql(f"create database {DB}")
    cdf = "using delta tblproperties (delta.enableChangeDataFeed = true)"
    spark.sql(f"create table {DB}.orders (order_id bigint, amount double) {cdf}")
    spark.sql(f"create table {DB}.returns (order_id bigint, reason string, refund double) {cdf}")
    spark.sql(f"insert into {DB}.orders select id, (id % 997) * 1.5 from range({n})")
    spark.sql(f"insert into {DB}.returns select id * 10, concat('r', id % 7), 1.0 from range({n // 10})")


def change_returns(spark: Any, n: int, fraction: float, seed: int) -> str:
    """Mixed changes of `fraction` of the returns: new returns for orders without one (padded rows
    become matched), deleted returns (matched rows become padded) and updated ones."""
    k = max(1, int(n // 10 * fraction / 3))
    step = n // 10 // k
    spark.sql(f"insert into {DB}.returns select id * 10 * {step} + {seed}, 'late', 2.0 from range({k})")
    spark.sql(f"update {DB}.returns set refund = refund + 1 where order_id % (10 * {step}) = 10 * {seed % step}")
    spark.sql(f"delete from {DB}.returns where order_id % (10 * {step}) = 10 * {(seed + 1) % step}")
    return f"+{k}/~{k}/-{k}"


def change_orders(spark: Any, n: int, fraction: float, seed: int) -> str:
    k = max(1, int(n * fraction / 3))
    step = n // k
    spark.sql(f"insert into {DB}.orders select {10 * n * (seed + 1)} + id * 10, 1.0 from range({k})")
    spark.sql(f"update {DB}.orders set amount = amount + 1 where order_id < {n} and order_id % {step} = {seed % step}")
    spark.sql(f"delete from {DB}.orders where order_id < {n} and order_id % {step} = {(seed + 1) % step}")
    return f"+{k}/~{k}/-{k}"


def outer_bench(spark: Any, db: TimedDatabase, n: int, fraction: float, check: bool) -> None:
    t = time.time()
    setup_outer(spark, n)
    print(f"setup: {n} orders, {n // 10} returns in {time.time() - t:.1f} s")
    view = TableName(DB, "order_returns")
    m = lambda: Maintainer(db, view, OUTER_VIEW, refresh_policy="incremental")  # noqa: E731
    timed(db, "first build", lambda: m().materialize(full_refresh=True))
    rows = []
    for seed, (side, change) in enumerate(
        (("returns (null-supplied)", change_returns), ("orders (preserved)", change_orders))
    ):
        what = change(spark, n, fraction, seed + 3)
        refresh = timed(db, f"refresh {side} {what}", lambda: m().materialize())
        if check:
            diff = spark.sql(consistency_sql(db, view)).count()
            assert diff == 0, f"{view}: {diff} differing rows"
        rebuild = timed(db, "rebuild", lambda: m().materialize(full_refresh=True))
        rows.append((side, refresh, rebuild))
    rows.append(("no change", timed(db, "refresh, no change", lambda: m().materialize()), rows[-1][2]))
    print("\nchange to                 refresh   rebuild   speed-up")
    for side, refresh, rebuild in rows:
        print(f"{side:<25} {refresh:7.2f} s {rebuild:7.2f} s {rebuild / refresh:8.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fact", type=int, default=1_000_000)
    ap.add_argument("--fraction", type=float, default=0.001)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--aggregate", action="store_true", help="the aggregate views' benchmark")
    ap.add_argument("--groups", type=int, nargs="+", default=[1000, 1_000_000])
    ap.add_argument("--outer", action="store_true", help="the LEFT JOIN view's benchmark")
    args = ap.parse_args()
    spark = get_spark(tempfile.mkdtemp(prefix="ivm-bench-"))
    db = TimedDatabase(spark)
    if args.aggregate:
        aggregate_bench(spark, db, args.fact, args.groups, args.fraction, not args.no_check)
        return
    if args.outer:
        outer_bench(spark, db, args.fact, args.fraction, not args.no_check)
        return
    view = TableName(DB, "order_facts")
    m = lambda: Maintainer(db, view, VIEW_SQL, refresh_policy="incremental")  # noqa: E731

    t = time.time()
    setup(spark, args.fact)
    print(f"setup: {args.fact} fact rows, 10000 customers, 1000 products in {time.time() - t:.1f} s")
    timed(db, "first build        ", lambda: m().materialize(full_refresh=True))

    results = {}
    k = change_fact(spark, args.fact, args.fraction, seed=1)
    results["fact mixed"] = timed(db, f"refresh fact +{k}/~{k}/-{k}", lambda: m().materialize())
    results["rebuild"] = timed(db, "full rebuild       ", lambda: m().materialize(full_refresh=True))
    k = change_fact(spark, args.fact, args.fraction, seed=2, inserts_only=True)
    results["fact inserts"] = timed(db, f"refresh fact +{k} only ", lambda: m().materialize())
    # the same, with the model's key declared: the sources only appended, so the append path
    k = change_fact(spark, args.fact, args.fraction, seed=3, inserts_only=True)
    keyed = Maintainer(db, view, VIEW_SQL, unique_key="order_id", refresh_policy="incremental")
    results["fact inserts, unique_key"] = timed(db, f"refresh fact +{k} only, unique_key", keyed.materialize)
    assert keyed.statements and not any(s.startswith(("CACHE", "MERGE")) for s in keyed.statements)
    change_customers(spark, args.fraction)
    results["dimension"] = timed(db, "refresh customers 0.1%", lambda: m().materialize())
    results["none"] = timed(db, "refresh, no change   ", lambda: m().materialize())
    if not args.no_check:
        diff = spark.sql(consistency_sql(db, view)).count()
        print(f"consistency: {diff} differing rows")
        assert diff == 0
    print("summary: " + ", ".join(f"{k} {v:.2f} s" for k, v in results.items()))


if __name__ == "__main__":
    main()
