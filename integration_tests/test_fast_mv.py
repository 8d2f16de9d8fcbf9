"""The fast_mv materialization through dbt: build, refresh, consistency test, refusals, explain.

Sources are Delta tables with change data feed on, created with plain Spark SQL in
each test class's own schema (the `spark` fixture is the session dbt runs on).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import ClassVar

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from integration_tests.fixtures import (
    AGGREGATE_MODELS,
    BAD_UNIQUE_KEY,
    FROM_NO_CDF,
    FROM_PARQUET,
    ITEM_KEYED,
    ITEM_MV,
    ITEM_MV_CHANGED,
    ITEMS_ROWS,
    ITEMS_TABLE,
    KEYED_ITEMS_ROWS,
    ORDERS_MV_REF,
    OUTER_MODELS,
    PLAIN_ITEMS_TABLE,
    RESERVED_PREFIX,
    SHOP_CHANGES,
    SHOP_MODELS,
    SHOP_ROWS,
    SHOP_TABLES,
    SOURCES_YML,
    UDF_DECLARED,
    UDF_FUNCTION,
    UDF_MODEL,
    WINDOW_FUNCTION,
    consistent_schema_yml,
    create_source,
    model,
    recompute,
    shop_models,
)

pytestmark = pytest.mark.spark

MODEL_SOURCES = {
    "orders_mv": ["orders"],
    "order_customers": ["orders", "customers"],
    "order_regions": ["orders", "customers", "regions"],
}
REFRESHED = re.compile(r"^refreshed: \+\d+/-\d+ rows from ")


# --- helpers ----------------------------------------------------------------------------


def version(spark, schema: str, table: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {schema}.{table} LIMIT 1").collect()[0]["version"])


def multiset(spark, sql: str) -> Counter:
    return Counter(tuple(row) for row in spark.sql(sql).collect())


def assert_view_matches_model(spark, schema: str, name: str, template: str) -> Counter:
    """The view, as a multiset of rows, equals the model's SQL run on the current sources."""
    view = multiset(spark, f"SELECT * FROM {schema}.{name}")
    expected = multiset(spark, recompute(template, schema))
    assert view == expected, f"{name}: view differs from its model recomputed"
    return view


def relations(spark, schema: str) -> set[str]:
    rows = spark.sql(f"SHOW TABLES IN {schema}").collect()
    return {r["tableName"].lower() for r in rows if not r["isTemporary"]}


def messages(results) -> dict[str, str]:
    return {r.node.name: r.message for r in results}


def assert_tests_pass(count: int, *select: str) -> None:
    args = ["test"] + (["--select", *select] if select else [])
    results = run_dbt(args)
    assert len(results) == count
    assert all(r.status == "pass" for r in results), [(r.node.name, r.status) for r in results]


def assert_test_fails(*select: str) -> None:
    results = run_dbt(["test", "--select", *select], expect_pass=False)
    assert len(results) == 1
    assert results[0].status == "fail" and results[0].failures >= 1, (results[0].status, results[0].message)


# --- build, refresh, no changes, full refresh: single source and joins, 4 threads ------


@pytest.mark.usefixtures("shop_sources")
class TestFastMvLifecycle:
    @pytest.fixture(scope="class")
    def models(self):
        return shop_models({name: sql for name, (sql, _) in SHOP_MODELS.items()}, {"orders_mv_ref.sql": ORDERS_MV_REF})

    def check_all(self, spark, schema: str) -> dict[str, Counter]:
        return {name: assert_view_matches_model(spark, schema, name, sql) for name, (sql, _) in SHOP_MODELS.items()}

    def test_build_refresh_no_changes_full_refresh(self, project, spark):
        schema = project.test_schema
        built_at = {t: version(spark, schema, t) for t in SHOP_TABLES}

        # first run builds every fast_mv (and the plain view over one of them)
        results = run_dbt(["run", "--threads", "4"])
        assert len(results) == 4
        msgs = messages(results)
        for name in SHOP_MODELS:
            assert msgs[name].startswith("built"), msgs
        names = relations(spark, schema)
        views = {r["viewName"].lower() for r in spark.sql(f"SHOW VIEWS IN {schema}").collect()}
        for name, (_, columns) in SHOP_MODELS.items():
            assert name in views and name + "__ivm" in names
            # the relation exposes exactly the model's columns; the backing table holds the hidden ones
            assert spark.table(f"{schema}.{name}").columns == columns
            assert any(c.startswith("__ivm_") for c in spark.table(f"{schema}.{name}__ivm").columns)
        assert spark.table(f"{schema}.orders_mv_ref").columns == SHOP_MODELS["orders_mv"][1]
        before = self.check_all(spark, schema)
        assert all(before.values()), "every view starts non-empty"
        assert before["orders_mv"][(7, 11, 300.0, 600.0, "SHIPPED")] == 2, "duplicate rows are kept"
        # (the consistency test runs after the refresh below; check_all compared the builds)

        # inserts, updates, deletes, NULLs and duplicates on all three sources
        for statement in SHOP_CHANGES:
            spark.sql(statement.format(**{t: f"{schema}.{t}" for t in SHOP_TABLES}))
        changed_at = {t: version(spark, schema, t) for t in SHOP_TABLES}
        assert all(changed_at[t] > built_at[t] for t in SHOP_TABLES)

        results = run_dbt(["run", "--threads", "4"])
        msgs = messages(results)
        for name, tables in MODEL_SOURCES.items():
            assert REFRESHED.match(msgs[name]), msgs[name]
            for t in tables:
                assert f"{schema}.{t} v{built_at[t]}..v{changed_at[t]}" in msgs[name], msgs[name]
            for t in set(SHOP_TABLES) - set(tables):
                assert f"{schema}.{t} " not in msgs[name], msgs[name]
        after = self.check_all(spark, schema)
        assert all(after[name] != before[name] for name in SHOP_MODELS)
        assert after["orders_mv"][(11, 13, 15.0, 30.0, "OPEN")] == 2, "new duplicate rows are kept"
        assert after["orders_mv"][(10, None, None, None, None)] == 1, "all-NULL row kept by `status is null`"
        assert multiset(spark, f"SELECT * FROM {schema}.orders_mv_ref") == after["orders_mv"]
        assert_tests_pass(3)

        # nothing changed since: every fast_mv says so
        msgs = messages(run_dbt(["run", "--threads", "4"]))
        for name in SHOP_MODELS:
            assert msgs[name] == "no changes", msgs

        # --full-refresh rebuilds, to the same contents
        msgs = messages(run_dbt(["run", "--full-refresh", "--select", "order_regions"]))
        assert msgs["order_regions"].startswith("built"), msgs
        rebuilt = assert_view_matches_model(spark, schema, "order_regions", SHOP_MODELS["order_regions"][0])
        assert rebuilt == after["order_regions"]
        assert_tests_pass(1, "order_regions")


# --- aggregate views: build, refresh, consistency test ---------------------------------------


@pytest.mark.usefixtures("shop_sources")
class TestFastMvAggregates:
    @pytest.fixture(scope="class")
    def models(self):
        return shop_models({name: sql for name, (sql, _) in AGGREGATE_MODELS.items()})

    def test_build_refresh_and_consistency(self, project, spark):
        schema = project.test_schema
        msgs = messages(run_dbt(["run", "--threads", "2"]))
        assert all(m.startswith("built") for m in msgs.values()), msgs
        for name, (sql, columns) in AGGREGATE_MODELS.items():
            assert spark.table(f"{schema}.{name}").columns == columns
            view = [(f.name, f.dataType) for f in spark.table(f"{schema}.{name}").schema.fields]
            assert view == [(f.name, f.dataType) for f in spark.sql(recompute(sql, schema)).schema.fields]
        # the builds are checked with the refresh's state below (a wrong stored row would stay wrong)

        for statement in SHOP_CHANGES:
            spark.sql(statement.format(**{t: f"{schema}.{t}" for t in SHOP_TABLES}))
        msgs = messages(run_dbt(["run", "--threads", "2"]))
        assert all(REFRESHED.match(m) for m in msgs.values()), msgs
        assert_tests_pass(len(AGGREGATE_MODELS))
        for name in ("customer_totals", "status_counts", "distinct_statuses"):  # no floats beyond sums of halves
            assert_view_matches_model(spark, schema, name, AGGREGATE_MODELS[name][0])
        assert multiset(spark, f"select * from {schema}.distinct_statuses") == multiset(
            spark, f"select distinct status from {schema}.orders"
        )
        # (groups that empty, and the global row over no rows: `test_engine_spark`, the harness's counts)


# the parenthesized join on the null-supplied side is the outer sample's `o_paren` (the engine's
# statements do not depend on dbt)
OUTER_DBT = {name: sql for name, sql in OUTER_MODELS.items() if name != "customer_order_regions"}


@pytest.mark.usefixtures("shop_sources")
class TestFastMvOuterJoins:
    @pytest.fixture(scope="class")
    def models(self):
        return shop_models(OUTER_DBT)

    def test_build_refresh_and_consistency(self, project, spark):
        """Padded rows appear when a customer's last order goes and vanish when its first comes."""
        schema = project.test_schema
        msgs = messages(run_dbt(["run", "--threads", "2"]))
        assert all(m.startswith("built") for m in msgs.values()), msgs  # checked after the refresh below
        for statement in [
            *SHOP_CHANGES,
            "DELETE FROM {orders} WHERE customer_id = 10",  # ann loses every order: padded again
            "INSERT INTO {orders} VALUES (20, 14, 1.0, 'open')",  # eve's first order
        ]:
            spark.sql(statement.format(**{t: f"{schema}.{t}" for t in SHOP_TABLES}))
        msgs = messages(run_dbt(["run", "--threads", "2"]))
        assert all(REFRESHED.match(m) for m in msgs.values()), msgs
        assert_tests_pass(len(OUTER_DBT))
        for name in ("customer_orders", "orders_full_customers"):
            assert_view_matches_model(spark, schema, name, OUTER_MODELS[name])
        rows = multiset(spark, f"select name, order_id from {schema}.customer_orders where name in ('ann', 'eve')")
        assert rows == Counter({("ann", None): 1, ("eve", 9): 1, ("eve", 20): 1})


# --- a single-source model: explain, corruption detection, model change -----------------


class TestFastMvSingleModel:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "item_mv.sql": model(ITEM_MV),
            "sources.yml": SOURCES_YML,
            "schema.yml": consistent_schema_yml("item_mv"),
        }

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        create_source(spark, project.test_schema, "items", ITEMS_TABLE, ITEMS_ROWS)

    def test_explain(self, project, spark, capsys):
        schema = project.test_schema
        msgs = messages(run_dbt(["run", "--full-refresh"]))
        assert msgs["item_mv"].startswith("built"), msgs
        at = version(spark, schema, "items")
        capsys.readouterr()
        run_dbt(["run-operation", "fast_mv_explain", "--args", "{model: item_mv}"])
        out = capsys.readouterr().out
        assert f"view: {schema}.item_mv (consumed {schema}.items v{at})" in out, out
        assert "class: single-source" in out and "refresh steps:" in out, out
        assert "refused" not in out, out

    def test_consistency_test_fails_on_corrupt_view(self, project, spark):
        schema = project.test_schema
        run_dbt(["run"])
        assert_tests_pass(1)

        # a row lost from the backing table: "missing from the view"
        spark.sql(f"DELETE FROM {schema}.item_mv__ivm WHERE item_id = 1")
        assert_test_fails("item_mv")
        assert messages(run_dbt(["run", "--full-refresh"]))["item_mv"].startswith("built")
        assert_tests_pass(1)

        # a wrong multiplicity: duplicates are counted, "extra in the view"
        spark.sql(f"UPDATE {schema}.item_mv__ivm SET __ivm_count = __ivm_count + 1 WHERE item_id = 2")
        assert_test_fails("item_mv")
        assert messages(run_dbt(["run", "--full-refresh"]))["item_mv"].startswith("built")
        assert_tests_pass(1)

    def test_changes_that_net_to_nothing(self, project, spark):
        schema = project.test_schema
        run_dbt(["run"])
        at = version(spark, schema, "items")
        # a row the filter drops, and a row inserted then deleted: the view does not change
        spark.sql(f"INSERT INTO {schema}.items VALUES (7, 'sloe', 0.2), (8, 'lime', 5.0)")
        spark.sql(f"DELETE FROM {schema}.items WHERE item_id = 8")
        msgs = messages(run_dbt(["run"]))
        assert msgs["item_mv"] == f"no net changes from {schema}.items v{at}..v{at + 2}", msgs
        # ...but the watermark moved: the next run has nothing to read
        assert messages(run_dbt(["run"]))["item_mv"] == "no changes"
        assert_view_matches_model(spark, schema, "item_mv", ITEM_MV)
        assert_tests_pass(1)

    def test_changed_model_sql_rebuilds(self, project, spark):
        schema = project.test_schema
        path = os.path.join(project.project_root, "models")
        run_dbt(["run"])
        try:
            write_file(model(ITEM_MV_CHANGED), path, "item_mv.sql")
            # the tests' project sets refresh_policy 'incremental': the changed model fails, saying why
            _, log = run_dbt_and_capture(["run"], expect_pass=False)
            assert "the model or its sources' columns changed; refresh_policy 'incremental'" in log, log
            # under the default policy (auto) the run rebuilds it
            write_file(model(ITEM_MV_CHANGED, "refresh_policy='auto'"), path, "item_mv.sql")
            msgs = messages(run_dbt(["run"]))
            assert msgs["item_mv"].startswith("built"), msgs
            assert spark.table(f"{schema}.item_mv").columns == ["item_id", "name_upper", "price_x10"]
            assert_view_matches_model(spark, schema, "item_mv", ITEM_MV_CHANGED)
            assert_tests_pass(1)

            # the rebuilt view refreshes from the version it was rebuilt at
            write_file(model(ITEM_MV_CHANGED), path, "item_mv.sql")
            at = version(spark, schema, "items")
            spark.sql(f"INSERT INTO {schema}.items VALUES (5, 'kiwi', 0.5), (6, NULL, NULL)")
            msgs = messages(run_dbt(["run"]))
            assert REFRESHED.match(msgs["item_mv"]) and f"{schema}.items v{at}..v{at + 1}" in msgs["item_mv"], msgs
            assert_view_matches_model(spark, schema, "item_mv", ITEM_MV_CHANGED)
        finally:
            write_file(model(ITEM_MV), path, "item_mv.sql")

    def test_refresh_policy_full_rebuilds_and_bad_configs_are_named(self, project, spark):
        schema = project.test_schema
        path = os.path.join(project.project_root, "models")
        run_dbt(["run", "--full-refresh"])  # the test before left the view built from another model
        try:
            write_file(model(ITEM_MV, "refresh_policy='full', cluster_by=['item_id']"), path, "item_mv.sql")
            spark.sql(f"INSERT INTO {schema}.items VALUES (9, 'plum', 4.0)")
            msgs = messages(run_dbt(["run"]))
            assert msgs["item_mv"].startswith("built"), msgs
            assert_view_matches_model(spark, schema, "item_mv", ITEM_MV)
            props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {schema}.item_mv__ivm").collect()}
            assert props["dbt_ivm.cluster_by"] == "item_id"  # the macro passed the config through
            write_file(model(ITEM_MV, "refresh_policy='sometimes'"), path, "item_mv.sql")
            _, log = run_dbt_and_capture(["run"], expect_pass=False)
            assert "refresh_policy must be one of 'auto', 'incremental', 'full', not 'sometimes'" in log, log
            write_file(model(ITEM_MV, "cluster_by='price'"), path, "item_mv.sql")
            _, log = run_dbt_and_capture(["run"], expect_pass=False)
            assert "cluster_by 'price' (double) cannot narrow this view's refresh" in log, log
        finally:
            write_file(model(ITEM_MV), path, "item_mv.sql")


# --- a declared unique key: appends are one INSERT from the change feed -----------------


class TestFastMvAppendPath:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "item_keyed.sql": model(ITEM_KEYED),
            "sources.yml": SOURCES_YML,
            "schema.yml": consistent_schema_yml("item_keyed"),
        }

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        create_source(spark, project.test_schema, "items", ITEMS_TABLE, KEYED_ITEMS_ROWS)

    def test_appends_are_appended_and_a_repeated_key_writes_nothing(self, project, spark):
        schema = project.test_schema
        assert messages(run_dbt(["run"]))["item_keyed"].startswith("built")
        at = version(spark, schema, "items")
        spark.sql(f"INSERT INTO {schema}.items VALUES (5, 'kiwi', 4.0), (6, 'plum', 0.5), (7, NULL, NULL)")
        results, logs = run_dbt_and_capture(["run"])
        assert messages(results)["item_keyed"] == f"refreshed: +2/-0 rows from {schema}.items v{at}..v{at + 1}"
        assert "appending the new rows" in logs
        assert_view_matches_model(spark, schema, "item_keyed", ITEM_KEYED.split("\n", 1)[1])
        assert_tests_pass(1)

        # two new rows with one key: the run fails, says why, and the view does not move
        stored = version(spark, schema, "item_keyed__ivm")
        spark.sql(f"INSERT INTO {schema}.items VALUES (8, 'lime', 2.0), (8, 'lemon', 3.0)")
        results = run_dbt(["run"], expect_pass=False)
        assert "unique_key (item_id) is not unique in the rows this refresh adds" in results[0].message
        assert version(spark, schema, "item_keyed__ivm") == stored


class TestFastMvDeclaredFunction:
    """A UDF the model declares deterministic is maintained; the declaration is part of the definition."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "udf_mv.sql": model(UDF_DECLARED),
            "sources.yml": SOURCES_YML,
            "schema.yml": consistent_schema_yml("udf_mv"),
        }

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        create_source(spark, project.test_schema, "items", ITEMS_TABLE, ITEMS_ROWS)
        spark.sql(UDF_FUNCTION)

    def test_declared_udf_builds_refreshes_and_is_consistent(self, project, spark):
        schema = project.test_schema
        assert messages(run_dbt(["run"]))["udf_mv"].startswith("built")
        spark.sql(f"INSERT INTO {schema}.items VALUES (5, 'kiwi', 0.5), (6, NULL, NULL)")
        spark.sql(f"UPDATE {schema}.items SET price = price + 1 WHERE item_id = 1")
        assert REFRESHED.match(messages(run_dbt(["run"]))["udf_mv"])
        assert_view_matches_model(spark, schema, "udf_mv", UDF_MODEL)
        assert_tests_pass(1)


# --- refusals: each model fails with a one-line cause and fix and creates nothing -------


class TestFastMvRefusals:
    REFUSED: ClassVar[dict[str, str]] = {
        "from_parquet": FROM_PARQUET,
        "from_no_cdf": FROM_NO_CDF,
        "reserved_prefix": RESERVED_PREFIX,
        "window_function": WINDOW_FUNCTION,
        "bad_unique_key": BAD_UNIQUE_KEY,
        "undeclared_udf": UDF_MODEL,
    }

    @pytest.fixture(scope="class")
    def models(self):
        files = {f"{name}.sql": model(sql) for name, sql in self.REFUSED.items()}
        files["sources.yml"] = SOURCES_YML
        return files

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        schema = project.test_schema
        create_source(spark, schema, "items", ITEMS_TABLE, ITEMS_ROWS)
        for name in ("orders", "customers"):
            create_source(spark, schema, name, SHOP_TABLES[name], SHOP_ROWS[name])
        create_source(spark, schema, "parquet_items", PLAIN_ITEMS_TABLE, using="USING PARQUET")
        create_source(
            spark,
            schema,
            "plain_items",
            PLAIN_ITEMS_TABLE,
            using="USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = false)",
        )
        spark.sql(UDF_FUNCTION)

    @staticmethod
    def cause_line(message: str, needle: str) -> str:
        """The line of dbt's error message that carries the engine's cause and fix."""
        lines = [line.strip() for line in message.splitlines() if needle in line]
        assert len(lines) == 1, message
        return lines[0]

    def test_refused_models_fail_and_create_nothing(self, project, spark):
        schema = project.test_schema
        before = relations(spark, schema)
        results = run_dbt(["run", "--threads", "4"], expect_pass=False)
        assert len(results) == len(self.REFUSED)
        assert all(r.status == "error" for r in results), [(r.node.name, r.status) for r in results]
        msgs = messages(results)
        print("\n\n".join(f"{k}:\n{v}" for k, v in msgs.items()))

        line = self.cause_line(msgs["from_parquet"], "parquet_items")
        assert "not Delta" in line and f"CONVERT TO DELTA `{schema}`.`parquet_items`" in line, line

        line = self.cause_line(msgs["from_no_cdf"], "plain_items")
        assert "no change data feed" in line, line
        assert (
            f"ALTER TABLE `{schema}`.`plain_items` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        ) in line, line

        line = self.cause_line(msgs["reserved_prefix"], "__ivm_name")
        assert "reserved prefix __ivm_" in line and "rename it" in line, line

        line = self.cause_line(msgs["window_function"], "window function")
        assert "a subquery or CTE with window functions" in line and "materialized='table'" in line, line

        line = self.cause_line(msgs["undeclared_udf"], "ivm_twice")
        assert "not a Spark built-in" in line and "deterministic_functions=['ivm_twice']" in line, line

        line = self.cause_line(msgs["bad_unique_key"], "item_key")
        assert "unique_key 'item_key' is not a column of the model" in line and "item_id, name" in line, line

        # nothing created: neither the views nor their backing tables
        assert relations(spark, schema) == before
        for name in self.REFUSED:
            assert name not in before and name + "__ivm" not in before

        # the fix the message gives works
        spark.sql(f"ALTER TABLE {schema}.plain_items SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        msgs = messages(run_dbt(["run", "--select", "from_no_cdf"]))
        assert msgs["from_no_cdf"].startswith("built"), msgs
