"""A small TPC-DI-like project: an SCD-2 dimension from a change log (LEAD end dates, a current
flag), a UNION ALL of two trade feeds, a dedup of it by ROW_NUMBER() = 1, each trade's loads by
SELECT DISTINCT over windows, a rolling window over a join with a UNION ALL of the raw feeds, a
fact joining the dimension point-in-time with BETWEEN, and a report of calculated columns over an aggregate: each a
fast_mv, the dedup, the fact and the report over other fast_mv models. Built, changed (SCD
changes, corrections, deletes, loads again, a late load in the second feed), refreshed
incrementally, and every model checked by `fast_mv_consistent`."""

from __future__ import annotations

import re

import pytest
from dbt.tests.util import run_dbt_and_capture

from integration_tests.fixtures import (
    TPCDI_CHANGES,
    TPCDI_MODELS,
    TPCDI_ROWS,
    TPCDI_SOURCES_YML,
    TPCDI_TABLES,
    consistent_schema_yml,
    create_source,
)
from integration_tests.test_fast_mv import REFRESHED, assert_tests_pass, messages

pytestmark = pytest.mark.spark


@pytest.fixture(scope="class")
def tpcdi_sources(project, spark) -> None:
    for name, columns in TPCDI_TABLES.items():
        create_source(spark, project.test_schema, name, columns, TPCDI_ROWS[name])


@pytest.mark.usefixtures("tpcdi_sources")
class TestTpcdi:
    @pytest.fixture(scope="class")
    def models(self):
        files = {f"{name}.sql": "{{ config(materialized='fast_mv') }}\n" + sql for name, sql in TPCDI_MODELS.items()}
        return files | {"sources.yml": TPCDI_SOURCES_YML, "schema.yml": consistent_schema_yml(*TPCDI_MODELS)}

    def test_built_changed_refreshed_and_consistent(self, project, spark):
        schema = project.test_schema
        results, log = run_dbt_and_capture(["run"])
        assert all(m.startswith("built") for m in messages(results).values()), log  # checked after each refresh
        for statements in TPCDI_CHANGES:
            for statement in statements:
                spark.sql(statement.format(**{t: f"{schema}.{t}" for t in TPCDI_TABLES}))
            results, log = run_dbt_and_capture(["run"])  # the project's refresh_policy: incremental
            msgs = messages(results)
            assert all(REFRESHED.match(msgs[m]) for m in TPCDI_MODELS), msgs
            # the windows recomputed the partitions the change touched; the report merged its groups
            for window in ("dim_customer", "trades_dedup", "trade_loads", "customer_activity"):
                assert re.search(rf"fast_mv {schema}\.{window}: \d+ partitions? recomputed", log), (window, log)
            assert_tests_pass(len(TPCDI_MODELS))
        rows = spark.sql(f"select tier, trades, activity from {schema}.tier_report").collect()
        assert {r["tier"] for r in rows} >= {"gold", "platinum"}, rows
        assert [(-r["trades"], r["tier"]) for r in rows] == sorted((-r["trades"], r["tier"]) for r in rows), rows
