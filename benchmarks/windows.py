"""Benchmark of window views: a refresh after mixed changes against a rebuild of the same view,
in the same Spark session.

    .venv/bin/python -m benchmarks.windows --rows 10000000 --partitions 100000 --fraction 0.001

Source: `hist` (an SCD-2 change log: `id`, `key` = id mod partitions, `eff_ts` rising with id,
`val`), change data feed on. Views: `scd2`, end dates by `LEAD(eff_ts) OVER (PARTITION BY key
ORDER BY eff_ts)`, and `dedup`, the latest row per key by `ROW_NUMBER() … = 1` in a subquery.
Changes: `fraction` of the rows, a third each inserted (new versions of scattered keys),
updated and deleted (scattered), in three commits. Each refresh is checked against the model's
SQL; the table gives its time, its costliest kinds of statement, the rows and data files it read
from storage (Spark's scan metrics), and the rebuild (`--full-refresh`) that follows it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from benchmarks.run import (
    CDF,
    DB,
    CountingDatabase,
    check_recomputed,
    execution_metrics,
    largest_costs,
    next_execution,
    rows_read,
)
from dbt_ivm.history import changed_rows
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer

VIEWS: dict[str, str] = {
    "scd2": (
        f"select id, key, eff_ts, val, lead(eff_ts) over (partition by key order by eff_ts) as end_ts from {DB}.hist"
    ),
    "dedup": (
        "select id, key, eff_ts, val from (select id, key, eff_ts, val, "
        f"row_number() over (partition by key order by eff_ts desc, id) as rn from {DB}.hist) s where rn = 1"
    ),
}


def setup(spark: Any, rows: int, partitions: int) -> None:
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    spark.sql(f"CREATE TABLE {DB}.hist (id BIGINT, key BIGINT, eff_ts TIMESTAMP, val INT) {CDF}")
    spark.sql(
        f"INSERT INTO {DB}.hist SELECT id, id % {partitions}, timestamp_seconds(1600000000 + id), "
        f"int(id % 997) FROM range({rows})"
    )


def change(spark: Any, rows: int, partitions: int, fraction: float, batch: int, kinds: str = "mixed") -> int:
    """A third of `fraction` each: new versions of scattered keys, updates, deletes (scattered,
    each batch its own rows); `kinds` "insert": all of `fraction` new versions, one commit.
    Returns the change rows the commits report."""
    k = max(1, int(rows * fraction / (3 if kinds == "mixed" else 1)))
    base = rows * (batch + 1)
    spark.sql(
        f"INSERT INTO {DB}.hist SELECT {base} + id, pmod(xxhash64(id, {batch}), {partitions}), "
        f"timestamp_seconds(1600000000 + {base} + id), 7 FROM range({k})"
    )
    if kinds == "insert":
        history = [r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {DB}.hist LIMIT 1").collect()]
        version = int(history[0]["version"])
        return changed_rows(history, version, version) or 0
    where = f"id < {rows} AND pmod(xxhash64(id, {batch}), {rows})"
    spark.sql(f"UPDATE {DB}.hist SET val = val + 1 WHERE {where} < {k}")
    spark.sql(f"DELETE FROM {DB}.hist WHERE {where} BETWEEN {k} AND {2 * k - 1}")
    history = [r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {DB}.hist LIMIT 3").collect()]
    version = int(history[0]["version"])
    return changed_rows(history, version - 2, version) or 0


def maintainer(db: CountingDatabase, view: str, policy: str = "incremental", log: Any = None) -> Maintainer:
    return Maintainer(db, TableName(DB, view), VIEWS[view], refresh_policy=policy, log=log or (lambda _: None))


def statements(db: CountingDatabase, top: int = 6) -> str:
    """The refresh's costliest statements, each its seconds and its head."""
    ranked = sorted(db.timings, key=lambda t: -t[0])[:top]
    return "; ".join(f"{s:.1f} s {' '.join(q.split())[:60]}" for s, q in ranked)


def maintainer_backing(view: str) -> str:
    return Maintainer(None, TableName(DB, view), VIEWS[view]).backing.sql()  # type: ignore[arg-type]


def storage_properties(spark: Any, view: str) -> str:
    """The view's storage's Delta properties that shape a MERGE (deletion vectors)."""
    backing = spark.sql(f"DESCRIBE DETAIL {maintainer_backing(view)}").collect()[0]
    props = {k: v for k, v in (backing["properties"] or {}).items() if "eletion" in k}
    return f"{backing['numFiles']} files, {props or 'no deletion vectors'}"


def joins(spark: Any, since: int) -> str:
    """The joins Spark ran since execution `since`, by kind, with the rows each kind output."""
    seen: dict[str, int] = {}
    for _, node, metric, value in execution_metrics(spark, since):
        if node.endswith("Join") and metric == "number of output rows":
            seen[node] = seen.get(node, 0) + int(value.replace(",", ""))
    return ", ".join(f"{node} {rows:,} rows" for node, rows in sorted(seen.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--fraction", type=float, default=0.001)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--views", nargs="+", default=list(VIEWS))
    parser.add_argument("--verbose", action="store_true", help="print each refresh's costliest statements")
    parser.add_argument("--memory", default="4g", help="the driver's memory")
    parser.add_argument("--conf", nargs="*", default=[], help="session settings key=value for every statement")
    parser.add_argument(
        "--kinds", choices=["mixed", "insert"], default="mixed", help="the changes: mixed, or new versions only"
    )
    args = parser.parse_args()
    from dbt_ivm.session import get_spark

    settings = dict(c.split("=", 1) for c in args.conf) | {"spark.driver.memory": args.memory}
    spark = get_spark(warehouse=tempfile.mkdtemp(prefix="ivm_windows_"), settings=settings)
    db = CountingDatabase(spark)
    setup(spark, args.rows, args.partitions)
    for view in args.views:
        maintainer(db, view).materialize(full_refresh=True)
    lines, batch = [], 0
    for view in args.views:
        refreshes, rebuilds, detail = [], [], ("", 0, (0, 0), 0, "")
        for _ in range(args.repeats):
            batch += 1
            changed = change(spark, args.rows, args.partitions, args.fraction, batch, args.kinds)
            db.reset()
            since = next_execution(spark)
            logged: list[str] = []
            started = time.time()
            outcome = maintainer(db, view, log=logged.append).materialize()
            refreshes.append(time.time() - started)
            read = rows_read(spark, since)
            if args.verbose:
                print(f"{view}: {refreshes[-1]:.1f} s: {statements(db)}", flush=True)
            if args.verbose:
                print(f"  {'; '.join(m for m in logged if 'recomputed' in m)}", flush=True)
                print(f"  load {os.getloadavg()[0]:.1f}; storage: {storage_properties(spark, view)}", flush=True)
                print(f"  joins: {joins(spark, since)}", flush=True)
            detail = (outcome.message, db.count, read, changed, largest_costs(db.timings))
            check_recomputed(spark, db, TableName(DB, view), f"{view} after batch {batch}")
            started = time.time()
            maintainer(db, view).materialize(full_refresh=True)
            rebuilds.append(time.time() - started)
        message, count, (rows, files), changed, costs = detail
        r, b = statistics.median(refreshes), statistics.median(rebuilds)
        lines.append(
            f"| {view} | {changed:,} | {r:.2f} s | {count} | {message} | {costs} | {rows:,} ({files}) | {b:.2f} s "
            f"| {b / r:.1f}x |"
        )
    print(
        f"\nwindow views over hist of {args.rows:,} rows, {args.partitions:,} keys, {args.kinds} {args.fraction:.2%}:"
    )
    head = "| view | change rows | refresh | statements | outcome | largest costs | rows read (files) | rebuild |"
    print(f"{head} speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
