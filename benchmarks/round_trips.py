"""Statements and seconds per run of one view of each class: a run with no change, a refresh of
mixed changes, a rebuild; over a Spark Thrift Server (PyHive, as dbt-spark's `thrift` method,
with the adapter's polling `BackoffPolling`) or the embedded session (dbt-spark's `session`).
Prints one table row per view and size (benchmarks/RESULTS.md, "Round trips per refresh").

    IVM_THRIFT_HOME=/tmp/thrift-x scripts/thrift_server.sh start
    .venv/bin/python -m benchmarks.round_trips --port <port> --rows 1000000 10000000 --fraction 0.001
    .venv/bin/python -m benchmarks.round_trips --rows 1000000 10000000 --fraction 0.001   # session

Sources: `o` (`rows` orders: id, cust, amt), `c` (rows/40 customers, 15 segments). Changes: a
third each of `fraction` of the orders updated, deleted (scattered) and inserted, and one
customer renamed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer

DB = "ivm_round_trips"
CDF = "using delta tblproperties (delta.enableChangeDataFeed = true)"
VIEWS = {
    "single": f"select id, cust, amt * 2 as a2 from {DB}.o where amt > 3",
    "join": f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid",
    "outer": f"select c.cid, c.name, o.id, o.amt from {DB}.c c left join {DB}.o o on o.cust = c.cid",
    "aggregate": (
        f"select c.seg, count(*) as n, sum(o.amt) as s, max(o.amt) as m from {DB}.o o join {DB}.c c "
        "on o.cust = c.cid group by c.seg"
    ),
    "window": f"select id, cust, row_number() over (partition by cust order by id) as rn from {DB}.o",
    "setop": f"select cust as k from {DB}.o union select cid as k from {DB}.c",
    "semijoin": (
        f"select o.id, o.amt from {DB}.o o where exists (select 1 from {DB}.c c where c.cid = o.cust and c.seg <> 3)"
    ),
}


class Timings(list[tuple[float, str]]):
    """(seconds, statement) of each statement sent."""

    @contextmanager
    def timing(self, sql: str) -> Iterator[None]:
        started = time.time()
        try:
            yield
        finally:
            self.append((time.time() - started, sql))

    def largest(self, top: int = 2) -> str:
        ranked = sorted(self, key=lambda t: -t[0])[:top]
        return "; ".join(f"{s:.1f} s {' '.join(q.split())[:70]}" for s, q in ranked)


class ThriftDatabase:
    """`maintain.Database` over one Thrift connection; counts the statements sent."""

    def __init__(self, port: int):
        from dbt.adapters.spark.connections import PyhiveConnectionWrapper
        from pyhive import hive

        from dbt.adapters.ivm_spark.connections import BackoffPolling

        self.wrapper = PyhiveConnectionWrapper(hive.connect(host="127.0.0.1", port=port, username="dbt"))
        self.wrapper.__class__ = BackoffPolling
        self.count, self.timings = 0, Timings()

    def execute(self, sql: str) -> None:
        self.count += 1
        with self.timings.timing(sql):
            self.wrapper.cursor().execute(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        self.count += 1
        with self.timings.timing(sql):
            self.wrapper.cursor().execute(sql)
            names = [d[0] for d in self.wrapper.description or []]
            return [dict(zip(names, r, strict=True)) for r in self.wrapper.fetchall() or []]


class SessionDatabase:
    """`maintain.Database` over the embedded SparkSession (dbt-spark's `session`); counts them."""

    def __init__(self, memory: str):
        from dbt_ivm.session import SparkDatabase, get_spark

        warehouse = tempfile.mkdtemp(prefix="ivm_round_trips_")
        spark = get_spark(warehouse=warehouse, settings={"spark.driver.memory": memory})
        self.db, self.count, self.timings = SparkDatabase(spark), 0, Timings()

    def execute(self, sql: str) -> None:
        self.count += 1
        with self.timings.timing(sql):
            self.db.execute(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        self.count += 1
        with self.timings.timing(sql):
            return self.db.query(sql)


Database = ThriftDatabase | SessionDatabase


def timed(db: Database, name: str, full_refresh: bool = False) -> tuple[int, float]:
    db.count = 0
    db.timings.clear()
    started = time.time()
    Maintainer(db, TableName(DB, name), VIEWS[name], refresh_policy="incremental").materialize(full_refresh)
    return db.count, time.time() - started


def setup(db: Database, rows: int) -> None:
    customers = max(50, rows // 40)
    for statement in (
        f"drop database if exists {DB} cascade",
        f"create database {DB}",
        f"create table {DB}.o (id bigint, cust bigint, amt double) {CDF}",
        f"create table {DB}.c (cid bigint, name string, seg int) {CDF}",
        f"insert into {DB}.o select id, id % {customers}, id * 1.5 from range({rows})",
        f"insert into {DB}.c select id, concat('n', id), int(id % 15) from range({customers})",
    ):
        db.execute(statement)


def change(db: Database, rows: int, fraction: float, cycle: int = 0) -> None:
    """Cycle `cycle`'s changes: other rows updated and deleted, other ids inserted, than another's."""
    k, customers = max(1, int(rows * fraction / 3)), max(50, rows // 40)
    where = f"pmod(xxhash64(id, {7 + cycle}), {rows})"
    first = rows + cycle * k
    for statement in (
        f"update {DB}.o set amt = amt + 1 where {where} < {k}",
        f"delete from {DB}.o where {where} between {k} and {2 * k - 1}",
        f"insert into {DB}.o select id, pmod(xxhash64(id), {customers}), id * 1.5 from range({first}, {first + k})",
        f"update {DB}.c set name = concat(name, 'x') where cid = 1",
    ):
        db.execute(statement)


def run_size(db: Database, method: str, rows: int, fraction: float, views: list[str], cycles: int = 1) -> None:
    """Build each view, run it with no change, then `cycles` times: change the sources, refresh
    each view, rebuild each (a later cycle's JVM has run the same statements before: warm)."""
    setup(db, rows)
    for name in views:
        timed(db, name)
    unchanged = {name: timed(db, name) for name in views}
    for cycle in range(cycles):
        change(db, rows, fraction, cycle)
        refreshed = {}
        for name in views:
            refreshed[name] = timed(db, name)
            print(f"  {name} refresh, largest: {db.timings.largest()}", file=sys.stderr, flush=True)
        for name in views:
            rebuilt = timed(db, name, True)
            cells = [f"{n}, {s:.1f} s" for n, s in (unchanged[name], refreshed[name], rebuilt)]
            ratio = rebuilt[1] / refreshed[name][1]
            load = os.getloadavg()[0]
            label = f"{name} ({cycle + 1})" if cycles > 1 else name
            print(f"| {label} | {method} | {rows:,} | {' | '.join(cells)} | {ratio:.1f}x | {load:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, help="a Thrift Server's port; none: the embedded session")
    parser.add_argument("--rows", type=int, nargs="+", default=[2000])
    parser.add_argument("--fraction", type=float, default=0.001)
    parser.add_argument("--memory", default="4g", help="the embedded session's driver memory")
    parser.add_argument("--views", nargs="+", default=list(VIEWS), choices=list(VIEWS))
    parser.add_argument("--cycles", type=int, default=1, help="changes, refreshes and rebuilds per size")
    args = parser.parse_args()
    db: Database = ThriftDatabase(args.port) if args.port else SessionDatabase(args.memory)
    method = "thrift" if args.port else "session"
    print("| view | method | rows | no change | mixed refresh | rebuild | rebuild / refresh | load |")
    print("|---|---|---|---|---|---|---|---|")
    for rows in args.rows:
        run_size(db, method, rows, args.fraction, args.views, args.cycles)
    db.execute(f"drop database if exists {DB} cascade")


if __name__ == "__main__":
    main()
