"""Chains through dbt: fast_mv models over fast_mv models (and over a `table` model), every level
refreshed from the level below's changes in one `dbt run`, in DAG order, and each level checked
by `fast_mv_consistent` against its own SQL at the versions it reflects."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from integration_tests.fixtures import SHOP_CHANGES, SHOP_TABLES, SOURCES_YML, consistent_schema_yml, model
from integration_tests.test_fast_mv import REFRESHED, assert_tests_pass, messages

pytestmark = pytest.mark.spark

POLICY = "refresh_policy=var('policy', 'incremental')"
STG = "select order_id, customer_id, amount, status from {orders} where status is not null or amount > 100"
JOINED = (
    "select o.order_id, o.amount, c.name, c.region_id from {{{{ ref('stg_orders') }}}} o "
    "join {{{{ ref('customers_tbl') }}}} c on o.customer_id = c.customer_id"
)
TOTALS = (
    "select region_id, count(*) as n, sum(amount) as total, min(name) as first_name "
    "from {{{{ ref('customer_orders') }}}} group by region_id"
)
TOP = "select region_id, n, total from {{{{ ref('region_totals') }}}} where n > 0"
# a `table` model upstream: replaced on every run; its change data feed on by its tblproperties
CUSTOMERS_TBL = (
    "{{ config(materialized='table', file_format='delta', "
    "tblproperties={'delta.enableChangeDataFeed': 'true'}) }}\n"
    "select customer_id, name, region_id from {{ source('src', 'customers') }}"
)
CHAIN = ("stg_orders", "customer_orders", "region_totals")


def _run(*args: str) -> dict[str, str]:
    return messages(run_dbt(["run", *args]))


def _feed(spark, schema: str, table: str) -> str:
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {schema}.{table}").collect()}
    return props.get("delta.enableChangeDataFeed", "")


@pytest.mark.usefixtures("shop_sources")
class TestChains:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "stg_orders.sql": model(STG, POLICY),
            "customer_orders.sql": model(JOINED, POLICY),
            "region_totals.sql": model(TOTALS, POLICY),
            "customers_tbl.sql": CUSTOMERS_TBL,
            "sources.yml": SOURCES_YML,
            "schema.yml": consistent_schema_yml(*CHAIN),
        }

    def test_a_chain_refreshes_level_by_level(self, project, spark):
        schema = project.test_schema
        change = iter(SHOP_CHANGES)

        def apply(n: int) -> None:
            for _ in range(n):
                spark.sql(next(change).format(**{t: f"{schema}.{t}" for t in SHOP_TABLES}))

        built = _run()
        assert all(built[m].startswith("built") for m in CHAIN), built
        # a change data feed exactly where a fast_mv reads the storage
        assert [_feed(spark, schema, f"{m}__ivm") for m in CHAIN] == ["true", "true", "false"]

        # --select catch-up: the downstream reads two upstream refreshes at once
        apply(3)  # orders: inserts, updates, deletes
        spark.sql(f"INSERT INTO {schema}.orders VALUES (40, 10, 400.0, 'open'), (41, 11, 1.0, NULL)")
        _run("-s", "stg_orders")
        spark.sql(f"DELETE FROM {schema}.orders WHERE order_id = 1")
        _run("-s", "stg_orders")
        msgs = _run("-s", "customer_orders", "region_totals")
        assert all(REFRESHED.match(msgs[m]) for m in CHAIN[1:]), msgs
        assert_tests_pass(len(CHAIN))

        # a downstream added later over a storage without a change data feed turns it on first
        write_file(model(TOP, POLICY), project.project_root, "models", "top_regions.sql")
        write_file(consistent_schema_yml(*CHAIN, "top_regions"), project.project_root, "models", "schema.yml")
        _, log = run_dbt_and_capture(["run", "-s", "top_regions"])
        assert "turning on the change data feed of" in log and "region_totals__ivm" in log, log
        assert _feed(spark, schema, "region_totals__ivm") == "true"

        # every level refreshed from the level below's changes, in one run; the `table` upstream
        # is replaced on every run: read whole under incremental, logged
        spark.sql(f"UPDATE {schema}.orders SET amount = amount + 1 WHERE order_id IN (2, 3)")
        apply(3)  # customers: inserts, updates, a delete
        results, log = run_dbt_and_capture(["run"])
        msgs = messages(results)
        assert all(REFRESHED.match(msgs[m]) for m in (*CHAIN, "top_regions")), msgs
        assert "was replaced (" in log and "customers_tbl" in log, log
        assert_tests_pass(len(CHAIN) + 1)

        # a change none of the aggregate's outputs shows: the level above it has no changes
        spark.sql(f"UPDATE {schema}.orders SET status = 'other' WHERE order_id = 3")
        msgs = _run("-s", "stg_orders", "customer_orders", "region_totals", "top_regions")
        assert REFRESHED.match(msgs["stg_orders"]) and msgs["top_regions"].startswith("no"), msgs

    def test_an_upstream_rebuilt_is_read_whole_or_rebuilds_the_downstream(self, project, spark, capsys):
        schema = project.test_schema
        spark.sql(f"INSERT INTO {schema}.orders VALUES (50, 12, 500.0, 'open')")
        assert _run("-s", "stg_orders", "--full-refresh")["stg_orders"].startswith("built")
        # incremental: the upstream's replace commit is read as its whole change feed, logged
        _, log = run_dbt_and_capture(["run", "-s", "customer_orders"])
        assert "stg_orders was replaced" in log, log
        spark.sql(f"INSERT INTO {schema}.orders VALUES (51, 12, 510.0, 'open')")
        assert _run("-s", "stg_orders", "--full-refresh")["stg_orders"].startswith("built")
        # auto: the downstream rebuilds, saying why
        results, log = run_dbt_and_capture(["run", "-s", "customer_orders", "--vars", "{policy: auto}"])
        assert messages(results)["customer_orders"].startswith("built"), log
        assert "a source was replaced" in log and "stg_orders" in log, log
        assert_tests_pass(len(CHAIN) + 1)
        capsys.readouterr()
        run_dbt(["run-operation", "fast_mv_explain", "--args", "{model: customer_orders}"])
        out = capsys.readouterr().out
        assert f"{schema}.stg_orders v" in out and f"(fast_mv: of its storage {schema}.stg_orders__ivm)" in out, out


REGIONS_CSV = "region_id,region_name\n1,north\n2,south\n3,east\n"
# The test session turns the feed on for every new table; a seed elsewhere has none.
SEED_PROPERTIES = """
seeds:
  test:
    +file_format: delta
    +post-hook: "alter table {{ this }} set tblproperties (delta.enableChangeDataFeed = false)"
"""
BY_REGION = (
    "select r.region_name, o.order_id, o.amount from {orders} o "
    "join {{{{ ref('region_seed') }}}} r on o.customer_id % 4 = r.region_id"
)


@pytest.mark.usefixtures("shop_sources")
class TestSeedUpstream:
    """A seed is a Delta table `dbt seed` drops and creates again: its history is gone. Its change
    data feed is turned on by the model that reads it (`enable_change_feed`)."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"region_seed.csv": REGIONS_CSV}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        import yaml

        return yaml.safe_load(SEED_PROPERTIES)

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "by_region.sql": model(BY_REGION, f"{POLICY}, enable_change_feed=true"),
            "sources.yml": SOURCES_YML,
            "schema.yml": consistent_schema_yml("by_region"),
        }

    def test_a_seed_seeded_again_rebuilds_the_downstream_under_auto(self, project, spark):
        run_dbt(["seed"])
        results, log = run_dbt_and_capture(["run"])
        assert messages(results)["by_region"].startswith("built"), log
        assert "turning on the change data feed of" in log and "region_seed" in log, log
        spark.sql(f"INSERT INTO {project.test_schema}.orders VALUES (60, 13, 600.0, 'open')")
        assert REFRESHED.match(_run()["by_region"])
        csv = REGIONS_CSV.replace("2,south", "2,southwest") + "0,central\n"
        write_file(csv, project.project_root, "seeds", "region_seed.csv")
        run_dbt(["seed"])  # drops the table and creates it again: its change history is gone
        _, log = run_dbt_and_capture(["run"], expect_pass=False)
        assert "region_seed was dropped and created again" in log and "--full-refresh" in log, log
        results, log = run_dbt_and_capture(["run", "--vars", "{policy: auto}"])
        assert messages(results)["by_region"].startswith("built"), log
        assert_tests_pass(1)
