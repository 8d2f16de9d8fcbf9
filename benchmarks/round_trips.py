"""Statements and seconds per run of one view of each class over a Spark Thrift Server (PyHive, as
dbt-spark's `thrift` method, with the adapter's polling `BackoffPolling`): a run with no change, a
refresh of mixed changes, a rebuild. Prints one table row per view (benchmarks/RESULTS.md, "Round
trips per refresh").

    IVM_THRIFT_HOME=/tmp/thrift-x scripts/thrift_server.sh start
    .venv/bin/python -m benchmarks.round_trips <port> [orders]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from pyhive import hive

from dbt.adapters.ivm_spark.connections import BackoffPolling
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer

DB = "ivm_round_trips"
CDF = "using delta tblproperties (delta.enableChangeDataFeed = true)"
VIEWS = {
    "single": f"select id, cust, amt * 2 as a2 from {DB}.o where amt > 3",
    "join": f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid",
    "outer": f"select c.cid, c.name, o.id, o.amt from {DB}.c c left join {DB}.o o on o.cust = c.cid",
    "aggregate": f"select cust, count(*) as n, sum(amt) as s, max(amt) as m from {DB}.o group by cust",
    "window": f"select id, cust, row_number() over (partition by cust order by id) as rn from {DB}.o",
}


class ThriftDatabase:
    """`maintain.Database` over one Thrift connection; records (seconds, statement) of each."""

    def __init__(self, port: int):
        self.wrapper = PyhiveConnectionWrapper(hive.connect(host="127.0.0.1", port=port, username="dbt"))
        self.wrapper.__class__ = BackoffPolling
        self.timings: list[tuple[float, str]] = []

    def execute(self, sql: str) -> None:
        started = time.time()
        self.wrapper.cursor().execute(sql)
        self.timings.append((time.time() - started, sql))

    def query(self, sql: str) -> list[dict[str, Any]]:
        started = time.time()
        self.wrapper.cursor().execute(sql)
        names = [d[0] for d in self.wrapper.description or []]
        rows = [dict(zip(names, r, strict=True)) for r in self.wrapper.fetchall() or []]
        self.timings.append((time.time() - started, sql))
        return rows


def timed(db: ThriftDatabase, name: str, full_refresh: bool = False) -> str:
    db.timings = []
    started = time.time()
    Maintainer(db, TableName(DB, name), VIEWS[name], refresh_policy="incremental").materialize(full_refresh)
    return f"{len(db.timings)} statements, {time.time() - started:.2f} s"


def main(port: int, orders: int) -> None:
    db = ThriftDatabase(port)
    for statement in (
        f"drop database if exists {DB} cascade",
        f"create database {DB}",
        f"create table {DB}.o (id int, cust int, amt double) {CDF}",
        f"create table {DB}.c (cid int, name string) {CDF}",
        f"insert into {DB}.o select id, id % 50, id * 1.5 from range({orders})",
        f"insert into {DB}.c select id, concat('n', id) from range(50)",
    ):
        db.execute(statement)
    for name in VIEWS:
        timed(db, name)
    unchanged = {name: timed(db, name) for name in VIEWS}
    for statement in (
        f"update {DB}.o set amt = amt + 1 where id % 500 = 3",
        f"delete from {DB}.o where id % 700 = 5",
        f"insert into {DB}.o select id, id % 50, id * 1.5 from range({orders}, {orders} + 10)",
        f"update {DB}.c set name = concat(name, 'x') where cid = 1",
    ):
        db.execute(statement)
    refreshed = {name: timed(db, name) for name in VIEWS}
    for name in VIEWS:
        print(f"| {name} | {unchanged[name]} | {refreshed[name]} | {timed(db, name, True)} |", flush=True)
    db.execute(f"drop database if exists {DB} cascade")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
