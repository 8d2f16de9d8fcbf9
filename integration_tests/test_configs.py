"""dbt configs on fast_mv: `dbt run --empty`, the storage configs dbt-spark users write
(`file_format`, `tblproperties`, `partition_by`, `liquid_clustered_by`, `location_root`) and
`full_refresh: false`.

One project, five dbt invocations: `dbt build --empty` first (never-built views come out empty,
bad configs fail, `fast_mv_consistent` passes), a normal run builds, `--full-refresh` (a refresh
where `full_refresh: false`), `--empty` over built views, and `dbt build` (a refresh of each, then
its test); then a changed `location_root` (refused under incremental, moved by --full-refresh).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import ClassVar

import pytest
from dbt.tests.util import run_dbt, write_file

from integration_tests.fixtures import (
    ITEM_MV,
    ITEMS_ROWS,
    ITEMS_TABLE,
    SOURCES_YML,
    consistent_schema_yml,
    create_source,
    model,
    recompute,
)

pytestmark = pytest.mark.spark

ITEM_COUNTS = "select name, count(*) as n from {items} group by name"


def messages(results) -> dict[str, str]:
    return {r.node.name: r.message for r in results}


def properties(spark, table: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def detail(spark, table: str) -> dict:
    return spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].asDict()


LOCATION_ROOT = Path(tempfile.mkdtemp(prefix="ivm-location-"))


class TestFastMvConfigs:
    GOOD: ClassVar[dict[str, str]] = {
        "located_mv": model(ITEM_MV, f"location_root='{LOCATION_ROOT / 'a'}'"),
        "props_mv": model(
            ITEM_MV,
            "file_format='delta', full_refresh=false, "
            "tblproperties={'team.owner': 'data', 'delta.enableDeletionVectors': 'false'}",
        ),
        "parted_mv": model(ITEM_MV, "partition_by='name', tblproperties={'team.owner': 'parted'}"),
        "liquid_mv": model(
            ITEM_MV, "liquid_clustered_by=['item_id'], cluster_by='item_id', tblproperties={'team.owner': 'liquid'}"
        ),
    }
    BAD: ClassVar[dict[str, str]] = {
        "bad_format": model(ITEM_MV, "file_format='parquet'"),
        "bad_props": model(ITEM_MV, "tblproperties={'dbt_ivm.columns': 'x'}"),
        "bad_partition": model(ITEM_COUNTS, "partition_by='name'"),
    }

    @pytest.fixture(scope="class")
    def models(self):
        files = {f"{name}.sql": sql for name, sql in {**self.GOOD, **self.BAD}.items()}
        files["sources.yml"] = SOURCES_YML
        files["schema.yml"] = consistent_schema_yml(*self.GOOD)
        return files

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        create_source(spark, project.test_schema, "items", ITEMS_TABLE, ITEMS_ROWS)

    def test_empty_run_storage_configs_and_full_refresh_false(self, project, spark):
        schema = project.test_schema
        good = list(self.GOOD)

        # --empty: each good model becomes a view with its columns and no rows, and no storage, and
        # its test passes; each bad config fails, named, as the normal run would
        results = run_dbt(["build", "--empty"], expect_pass=False)
        tests = [r for r in results if r.node.resource_type == "test"]
        assert len(tests) == len(good), [r.node.name for r in tests]
        assert all(r.status == "pass" for r in tests), [(r.node.name, r.status, r.message) for r in tests]
        results = [r for r in results if r.node.resource_type == "model"]
        msgs = messages(results)
        for name in good:
            assert msgs[name] == "built empty (--empty): the next run builds it", msgs
            assert spark.table(f"{schema}.{name}").count() == 0
            assert spark.table(f"{schema}.{name}").columns == spark.sql(recompute(ITEM_MV, schema)).columns
        tables = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {schema}").collect()}
        assert not any(t.endswith("__ivm") for t in tables), tables
        assert "file_format 'parquet': a fast_mv is stored in Delta" in msgs["bad_format"], msgs
        assert "tblproperties 'dbt_ivm.columns': fast_mv records its own properties" in msgs["bad_props"], msgs
        assert "partition_by 'name': this view's storage holds the column under a hidden name" in msgs["bad_partition"]
        assert {r.node.name for r in results if r.status == "error"} == set(self.BAD)

        # the next run builds (no watermark: a first build, allowed under refresh_policy incremental)
        msgs = messages(run_dbt(["run", "--select", *good]))
        assert all(msgs[n].startswith("built at ") for n in good), msgs
        props = properties(spark, f"{schema}.props_mv__ivm")
        assert props["team.owner"] == "data" and props["delta.enableDeletionVectors"] == "false", props
        assert props["dbt_ivm.columns"] == "item_id,name,price", props
        assert detail(spark, f"{schema}.parted_mv__ivm")["partitionColumns"] == ["name"]
        assert detail(spark, f"{schema}.liquid_mv__ivm")["clusteringColumns"] == ["item_id"]
        assert detail(spark, f"{schema}.located_mv__ivm")["location"] == f"file:{LOCATION_ROOT}/a/located_mv__ivm"
        assert spark.table(f"{schema}.props_mv").count() > 0

        # --full-refresh rebuilds all but the full_refresh: false model, which refreshes; all keep their configs
        spark.sql(f"INSERT INTO {schema}.items VALUES (5, 'kiwi', 4.0), (6, NULL, 7.5)")
        spark.sql(f"UPDATE {schema}.items SET price = 9.0 WHERE item_id = 1")
        msgs = messages(run_dbt(["run", "--full-refresh", "--select", *good]))
        assert msgs["props_mv"].startswith("refreshed: "), msgs
        assert msgs["parted_mv"].startswith("built at ") and msgs["liquid_mv"].startswith("built at "), msgs
        assert properties(spark, f"{schema}.props_mv__ivm")["team.owner"] == "data"
        assert properties(spark, f"{schema}.parted_mv__ivm")["team.owner"] == "parted"
        assert properties(spark, f"{schema}.liquid_mv__ivm")["team.owner"] == "liquid"
        assert detail(spark, f"{schema}.parted_mv__ivm")["partitionColumns"] == ["name"]
        assert detail(spark, f"{schema}.liquid_mv__ivm")["clusteringColumns"] == ["item_id"]

        # --empty over built views writes nothing
        stored = {n: detail(spark, f"{schema}.{n}__ivm")["lastModified"] for n in good}
        msgs = messages(run_dbt(["run", "--empty", "--select", *good]))
        assert all(msgs[n] == "skipped (--empty): its built storage is left as it is" for n in good), msgs
        assert {n: detail(spark, f"{schema}.{n}__ivm")["lastModified"] for n in good} == stored

        # a refresh of each storage (partitioned, liquid-clustered), then the tests
        spark.sql(f"INSERT INTO {schema}.items VALUES (7, 'sloe', 2.5), (8, 'pear', 8.0)")
        spark.sql(f"UPDATE {schema}.items SET name = 'fig', price = 3.5 WHERE item_id = 5")
        spark.sql(f"DELETE FROM {schema}.items WHERE item_id = 3")
        results = run_dbt(["build", "--select", *good])
        msgs = messages(r for r in results if r.node.resource_type == "model")
        assert all(msgs[n].startswith("refreshed: ") for n in good), msgs
        assert [r.status for r in results if r.node.resource_type == "test"] == ["pass"] * len(good)
        assert detail(spark, f"{schema}.parted_mv__ivm")["partitionColumns"] == ["name"]
        for name in good:
            expected = sorted(map(tuple, spark.sql(recompute(ITEM_MV, schema)).collect()), key=repr)
            assert sorted(map(tuple, spark.table(f"{schema}.{name}").collect()), key=repr) == expected

        # a changed location_root: Delta cannot move a table; under incremental the run fails
        # naming the change, and --full-refresh rebuilds the storage at the new location
        moved = model(ITEM_MV, f"location_root='{LOCATION_ROOT / 'b'}'")
        write_file(moved, project.project_root, "models", "located_mv.sql")
        (result,) = run_dbt(["run", "--select", "located_mv"], expect_pass=False)
        assert "location_root" in result.message, result.message
        msgs = messages(run_dbt(["run", "--full-refresh", "--select", "located_mv"]))
        assert msgs["located_mv"].startswith("built at "), msgs
        assert detail(spark, f"{schema}.located_mv__ivm")["location"] == f"file:{LOCATION_ROOT}/b/located_mv__ivm"
        expected = sorted(map(tuple, spark.sql(recompute(ITEM_MV, schema)).collect()), key=repr)
        assert sorted(map(tuple, spark.table(f"{schema}.located_mv").collect()), key=repr) == expected
