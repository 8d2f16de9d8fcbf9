"""The benchmark's quick mode runs in the suite, so the command in the README never rots.

The suite measures the quick run's cases of one view, the join: its two cases take every path of
the benchmark's own code (a MERGE and an INSERT refresh, the next refresh, the dbt-spark
incremental model, the no-change refresh, auto's estimate and its replay, the CSV and the
report). The other views' refreshes are the engine's, tested by tests/test_engine_spark.py and
the randomized harness; that the engine accepts each view of the quick run, and its `cluster_by`,
tests/unit/test_benchmark_views.py checks without Spark.
"""

from __future__ import annotations

import csv

import pytest

from benchmarks import auto
from benchmarks import run as bench

pytestmark = pytest.mark.spark

MEASURED = "join"


def test_the_quick_benchmark_checks_every_case_and_writes_its_results(spark, tmp_path):
    lines: list[str] = []
    sizes, fractions, pairs, repeats = bench.QUICK
    assert {view for view, _ in pairs} == set(bench.VIEWS)  # --quick measures every view
    pairs = [(view, kind) for view, kind in pairs if view == MEASURED]
    cases, path = bench.run(spark, sizes, fractions, pairs, repeats, "quick", lines.append, str(tmp_path))
    measured = [c for c in cases if c.kind != "no change"]
    assert len(measured) == len(pairs) and {c.view for c in measured} == {MEASURED}
    assert all(c.refresh_s > 0 and c.rebuild_s > 0 and c.table_s > 0 and c.statements > 0 for c in measured)
    # Spark's scan metrics: a refresh reads its change feed, a rebuild every source row
    assert all(c.rows_read > 0 and c.rebuild_rows_read >= 2000 for c in measured), measured
    assert all(c.files_read > 0 for c in measured if c.path == "merge"), measured  # the MERGE reads the view
    assert {c.path for c in measured} >= {"merge", "insert"}  # mixed changes merge, appends insert
    join_inserts = next(c for c in measured if c.view == "join" and c.kind == "insert-only")
    assert join_inserts.incremental_s is not None and join_inserts.incremental_s > 0
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(cases) and {"refresh_s", "rebuild_s", "speedup", "statements"} <= set(rows[0])
    assert all(c.auto in ("incremental", "rebuild") and c.auto_s > 0 for c in measured)
    # auto's inputs are recorded, and replayed they give the choice it made (one run each here)
    replayed = auto.replay([path])
    assert [(c.view, c.kind) for c, _, _ in replayed] == [(c.view, c.kind) for c in measured]
    assert [rebuild for _, rebuild, _ in replayed] == [c.auto == "rebuild" for c in measured]
    table = bench.report(cases, path)
    assert table.count("\n| 2,000 | ") == len(cases) and "cores" in table and "rows read" in table
    idle = [c for c in cases if c.kind == "no change"]
    assert len(idle) == 1 and {c.path for c in idle} == {"no changes"}, lines


def test_every_mixed_batch_updates_and_deletes_the_rows_its_kind_names(spark):
    """However many batches ran before, a mixed batch of k rows inserts, updates (two change rows
    each) and deletes about k each: 4k change rows of lineitem. Local batches thin out the newest
    lines until the window widens."""
    n, fraction = 2000, 0.1
    k = int(n * fraction / 3)
    bench.setup(spark, n)
    rows = [
        bench.change(spark, n, kind, fraction, batch)
        for batch, kind in enumerate(["mixed local"] * 5 + ["mixed scattered"])
    ]
    assert all(abs(r - 4 * k) <= 0.15 * 4 * k for r in rows), (4 * k, rows)
