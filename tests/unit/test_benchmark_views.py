"""Every view the benchmark measures is one the engine maintains, laid out by a column it can sort
by: the suite measures the quick run's join only (tests/test_benchmark_quick.py), and a refusal of
another view would otherwise first show in `benchmarks.run --quick`."""

from __future__ import annotations

import pytest

from benchmarks import run as bench
from dbt_ivm import analyze, layout
from dbt_ivm.classes import rules_for

SCHEMA = {f"{bench.DB}.{table}": {c: t.lower() for c, t in columns.items()} for table, columns in bench.TABLES.items()}
COLUMN_TYPES = {c: t for columns in SCHEMA.values() for c, t in columns.items()}


@pytest.mark.parametrize("view", sorted(bench.VIEWS))
def test_every_benchmark_view_is_maintained_and_sorts_by_its_cluster_by(view):
    plan = analyze(bench.VIEWS[view], SCHEMA)
    types = {o.name: COLUMN_TYPES.get(o.name, "double") for o in plan.outputs}  # revenue: a DOUBLE product
    cluster_by = bench.CLUSTER_BY.get(view)
    ranged = rules_for(plan).ranged_columns(plan, types)
    assert layout.cluster_columns(plan, cluster_by, ranged, types) == ((cluster_by,) if cluster_by else ())
