"""Benchmark of a chain: three fast_mv levels over a TPC-H-like fact, refreshed level by level
after a batch of mixed changes, against a rebuild of every level, in the same Spark session.

    .venv/bin/python -m benchmarks.chain --fact 10000000 --fraction 0.001

Levels: a staging filter of `lineitem` -> its join with `orders` and `customer` -> an aggregate
by market segment and order status over the join. Each refresh reads the level below's changes
only (`dbt_ivm.upstream`); the rebuild recomputes each level from the one below. Prints a table
(seconds and statements per level) and checks every level against its own SQL.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from benchmarks.run import DB, CountingDatabase, change, largest_costs, setup
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from dbt_ivm.session import get_spark

LEVELS: dict[str, str] = {
    "chain_stg": (
        "select l_orderkey, l_linenumber, l_quantity, l_extendedprice * (1 - l_discount) as revenue "
        f"from {DB}.lineitem where l_discount < 0.09"
    ),
    "chain_join": (
        "select s.l_orderkey, s.l_linenumber, s.l_quantity, s.revenue, o.o_orderstatus, c.c_mktsegment "
        f"from {DB}.chain_stg s join {DB}.orders o on s.l_orderkey = o.o_orderkey "
        f"join {DB}.customer c on o.o_custkey = c.c_custkey"
    ),
    "chain_agg": (
        "select c_mktsegment, o_orderstatus, count(*) as n, sum(l_quantity) as quantity, max(l_quantity) as top "
        f"from {DB}.chain_join group by c_mktsegment, o_orderstatus"
    ),
}
FEEDS = {"chain_stg", "chain_join"}  # the levels another level reads


def maintainer(db: CountingDatabase, level: str, policy: str) -> Maintainer:
    return Maintainer(db, TableName(DB, level), LEVELS[level], refresh_policy=policy, change_feed=level in FEEDS)


def run_chain(db: CountingDatabase, policy: str, full_refresh: bool) -> list[tuple[str, float, int, str, str]]:
    """Each level materialized in order: (level, seconds, statements, its outcome's message, its
    costliest kinds of statement)."""
    out = []
    for level in LEVELS:
        db.reset()
        started = time.time()
        outcome = maintainer(db, level, policy).materialize(full_refresh=full_refresh)
        out.append((level, time.time() - started, db.count, outcome.message, largest_costs(db.timings)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fact", type=int, default=1_000_000, help="lineitem rows")
    parser.add_argument("--fraction", type=float, default=0.001, help="mixed changes, as a fraction of the fact")
    args = parser.parse_args()
    spark = get_spark(warehouse=tempfile.mkdtemp(prefix="ivm_chain_"))
    db = CountingDatabase(spark)
    setup(spark, args.fact)
    run_chain(db, "incremental", full_refresh=True)
    changed = change(spark, args.fact, "mixed scattered", args.fraction, batch=0)
    refreshed = run_chain(db, "incremental", full_refresh=False)
    for level in LEVELS:
        wrong = db.query(consistency_sql(db, TableName(DB, level)))
        assert not wrong, f"{level} differs from its SQL: {wrong[:3]}"
    rebuilt = run_chain(db, "incremental", full_refresh=True)
    batch = f"mixed changes of {args.fraction:.2%} ({changed:,} change rows)"
    print(f"\nchain over lineitem of {args.fact:,} rows, {batch}:")
    print("| level | refresh s | statements | refresh | largest costs | rebuild s | speedup |")
    print("|---|---|---|---|---|---|---|")
    for (level, r_s, n, msg, costs), (_, b_s, *_) in zip(refreshed, rebuilt, strict=True):
        print(f"| {level} | {r_s:.1f} | {n} | {msg} | {costs} | {b_s:.1f} | {b_s / r_s:.1f}x |")
    total_r, total_b = sum(r[1] for r in refreshed), sum(b[1] for b in rebuilt)
    statements = sum(r[2] for r in refreshed)
    print(f"| whole chain | {total_r:.1f} | {statements} | | | {total_b:.1f} | {total_b / total_r:.1f}x |")


if __name__ == "__main__":
    main()
