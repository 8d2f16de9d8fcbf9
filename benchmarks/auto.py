"""`refresh_policy: auto` replayed over recorded runs: what it chooses now for each measured case.

    .venv/bin/python -m benchmarks.auto benchmarks/results/20261124-1m-grid.csv ...

For each case of the CSVs (`benchmarks.run`), the choice `policy.choose` makes with the current
`COSTS` from the inputs the run recorded (`auto_inputs`), and the measured time of the path it
picks against the faster of the refresh and the rebuild (the target: at most 1.1x). Runs before
that column give the totals of their log line only (`auto_reason`); their inputs are
reconstructed from the benchmark's tables and views (`reconstructed`), which is how the tie
band of `Costs` was chosen (docs/journal.md, "auto's tie band").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import replace

from benchmarks.run import RESULTS, Case, read_csv
from dbt_ivm.policy import Costs, Inputs, choose

# The runs of the current code that `policy.COSTS` is fitted to (`benchmarks.fit`);
# tests/unit/test_policy.py replays them.
FITTED_RUNS = tuple(
    os.path.join(RESULTS, f"{run}.csv")
    for run in ("20261126-1m-10m", "20261126-1m-grid-2", "20261126-10m-sorted", "20261126-100m-filter-sorted")
)
# the views' sources (benchmarks.run.VIEWS); every change batch inserts orders and changes lineitem
SOURCES = {"join": 3, "aggregate": 3, "outer": 2, "filter": 1, "global": 1}
TOTALS = re.compile(r"\((\d+) change rows, (\d+) source rows, (\d+) view rows")


def reconstructed(case: Case) -> Inputs | None:
    """The inputs of a case recorded before `auto_inputs`, from its log line's totals and the
    benchmark's shapes: customer n/40 rows, orders a fifth of the rest, its changes k/4 inserts;
    a MAX counted its extreme's rows from the runs with `auto_reason`'s rows read on (`rows_read`)."""
    totals = TOTALS.search(case.auto_reason)
    if totals is None:
        return None
    changed, source_rows, view_rows = map(int, totals.groups())
    k = max(1, int(case.n * case.fraction / (1 if case.kind == "insert-only" else 3)))
    sources = SOURCES[case.view]
    customers = max(1, case.n // 40) if sources == 3 else 0
    orders = (source_rows - customers) // 5 if sources > 1 else 0
    lineitem = source_rows - customers - orders
    if sources == 1:
        changes, joined = {"lineitem": changed}, {"lineitem": 0}
    else:
        new_orders = max(1, k // 4)
        changes = {"lineitem": changed - new_orders, "orders": new_orders}
        joined = {"lineitem": orders + customers, "orders": lineitem + customers}
    mixed = case.kind != "insert-only"
    return Inputs(
        changes,
        joined,
        appends_only=case.path in ("insert", "append"),
        source_rows=source_rows,
        view_rows=view_rows,
        joins=sources > 1,
        compensates=case.view == "outer",
        removes=mixed,
        removes_extremes=case.view in ("aggregate", "global") and mixed and not case.rows_read,
    )


def recorded(case: Case) -> Inputs | None:
    if not case.auto_inputs:
        return reconstructed(case)
    fields = json.loads(case.auto_inputs)
    fields.setdefault("removes", case.kind != "insert-only")  # recorded before `Inputs.removes`
    inputs = Inputs(**fields)
    if case.kind == "insert-only" and case.path == "insert" and not inputs.appends_only:
        # recorded before outer joins' appends counted as appends (`ViewRules.INSERTS`, 2026-11-25)
        inputs = replace(inputs, appends_only=True)
    return inputs


def measured(paths: Sequence[str]) -> list[tuple[Case, Inputs]]:
    """The cases that raced a refresh against a rebuild, with the inputs `auto` chose from."""
    out = []
    for path in paths:
        for case in read_csv(path):
            inputs = recorded(case) if case.rebuild_s and case.refresh_s else None
            if inputs is not None:
                out.append((case, inputs))
    return out


def replay(paths: Sequence[str], costs: Costs | None = None) -> list[tuple[Case, bool, float]]:
    """(case, whether auto rebuilds it now, its path's time against the faster path)."""
    out = []
    for case, inputs in measured(paths):
        rebuild = choose(inputs, costs).rebuild
        out.append((case, rebuild, against_faster(case, rebuild)))
    return out


def against_faster(case: Case, rebuild: bool) -> float:
    """The measured time of the path chosen (the rebuild or the refresh) against the faster one."""
    return (case.rebuild_s if rebuild else case.refresh_s) / min(case.refresh_s, case.rebuild_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="benchmarks/results/<run>.csv")
    args = parser.parse_args(argv)
    results = replay(args.csv)
    for case, rebuild, ratio in results:
        print(
            f"{case.n:>9} {case.view:<9} {case.kind:<15} {case.fraction:>7.2%}: refresh {case.refresh_s:6.2f} s, "
            f"rebuild {case.rebuild_s:6.2f} s; auto {'rebuilds' if rebuild else 'refreshes'}: {ratio:.2f}x the faster"
            + ("  <- over 1.1x" if ratio > 1.1 else "")
        )
    over = [ratio for _, _, ratio in results if ratio > 1.1]
    worst = max((ratio for _, _, ratio in results), default=1.0)
    print(f"{len(results)} cases: within 1.1x of the faster path in {len(results) - len(over)}, worst {worst:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
