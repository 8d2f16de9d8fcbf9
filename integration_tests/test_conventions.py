"""dbt's conventions on fast_mv: `on_configuration_change` (apply, continue, fail) against the
configuration recorded in the storage's commits, with platform-added properties present;
`persist_docs` on the view and the catalog of `docs generate`; model contracts; switching
materializations and dropping the storage left behind; `dbt build`, `retry`, `ls`, `compile`, `show`.

One project, one test, a dozen dbt invocations in order (dbt-tests-adapter's
`MaterializedViewChanges` mixins re-seed and full-refresh before each of their nine methods: not
subclassed, for the suite's time; the same log lines and outcomes are checked here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from integration_tests.fixtures import ITEM_MV, ITEMS_ROWS, ITEMS_TABLE, SOURCES_YML, create_source, model, recompute

pytestmark = pytest.mark.spark

DOCS = "persist_docs={'relation': true, 'columns': true}"
TABLE = "{{ config(materialized='table', file_format='delta') }}\n" + ITEM_MV.format(
    items="{{ source('src', 'items') }}"
)
VIEW = "{{ config(materialized='view') }}\n" + ITEM_MV.format(items="{{ source('src', 'items') }}")

FIRST = {
    "apply_mv": model(
        ITEM_MV, f"tblproperties={{'team.owner': 'a', 'team.tier': 'gold'}}, liquid_clustered_by='item_id', {DOCS}"
    ),
    "replace_mv": model(ITEM_MV, "partition_by='name'"),
    "strict_mv": model(ITEM_MV, "partition_by='name'"),
    "continue_mv": model(ITEM_MV, "on_configuration_change='continue', tblproperties={'team.owner': 'a'}"),
    "fail_mv": model(ITEM_MV, "on_configuration_change='fail', tblproperties={'team.owner': 'a'}"),
    "docs_mv": model(ITEM_MV, DOCS),
    "contract_ok": model(ITEM_MV, "contract={'enforced': true}"),
    "contract_bad": model(ITEM_MV, "contract={'enforced': true}"),
    "table_to_mv": TABLE,
    "mv_to_table": model(ITEM_MV),
    "mv_to_view": model(ITEM_MV),
    "grants_mv": model(ITEM_MV, "grants={'select': ['reader']}"),
}
SECOND = {
    "apply_mv": model(ITEM_MV, f"tblproperties={{'team.owner': 'b'}}, liquid_clustered_by=['item_id', 'name'], {DOCS}"),
    "replace_mv": model(ITEM_MV, "partition_by='item_id', refresh_policy='auto'"),  # incremental would refuse
    "strict_mv": model(ITEM_MV, "partition_by='item_id'"),
    "continue_mv": model(ITEM_MV, "on_configuration_change='continue', tblproperties={'team.owner': 'b'}"),
    "fail_mv": model(ITEM_MV, "on_configuration_change='fail', tblproperties={'team.owner': 'b'}"),
    "table_to_mv": model(ITEM_MV),
    "mv_to_table": TABLE,
    "mv_to_view": VIEW,
}
FAST_MVS = ["apply_mv", "replace_mv", "strict_mv", "continue_mv", "fail_mv", "docs_mv", "contract_ok", "grants_mv"]
# The local catalog has no GRANT: dbt-spark's grant statements record what they would grant instead.
GRANTS_SQL = """
{% macro spark__get_show_grant_sql(relation) %}
  select grantee as Principal, privilege as ActionType, 'TABLE' as ObjectType
  from {{ relation.schema }}.grant_log where false
{% endmacro %}
{%- macro spark__get_grant_sql(relation, privilege, grantees) -%}
  insert into {{ relation.schema }}.grant_log values ('{{ relation }}', '{{ privilege }}', '{{ grantees[0] }}')
{%- endmacro %}
"""


def columns(*specs: str, not_null: str = "") -> str:
    """YAML columns: 'name type description' (description optional); `not_null`: the column with that constraint."""
    out = []
    for spec in specs:
        name, kind, *text = spec.split(" ", 2)
        out.append(f"      - name: {name}\n        data_type: {kind}")
        if text:
            out.append(f"        description: {text[0]}")
        if name == not_null:
            out.append("        constraints: [{type: not_null}]")
    return "\n".join(out)


def schema_yml(description: str) -> str:
    items = ("item_id bigint the item's id", "name string its name", "price double")
    bad = ("item_id bigint", "name string", "price int")
    return f"""
version: 2
models:
  - name: docs_mv
    description: {description}
    data_tests: [fast_mv_consistent]
    columns:
{columns(*items)}
      - name: ghost
        description: a column the model lacks
  - name: apply_mv
    description: {description}
    columns:
{columns(*items)}
  - name: contract_ok
    columns:
{columns(*items, not_null="item_id")}
  - name: contract_bad
    columns:
{columns(*bad)}
""" + "".join(f"  - name: {m}\n    data_tests: [fast_mv_consistent]\n" for m in ("continue_mv", "replace_mv"))


def messages(results) -> dict[str, str]:
    return {r.node.name: r.message for r in results if r.node.resource_type == "model"}


def props(spark, table: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def detail(spark, table: str) -> dict:
    return spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].asDict()


def comments(spark, view: str) -> tuple[str, dict[str, str | None]]:
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {view}").collect()]
    relation = next((r[1] for r in rows if r[0] == "Comment"), "")
    cols = {r[0]: r[2] for r in rows[: rows.index(("", "", ""))]} if ("", "", "") in rows else {}
    return relation, cols


def relation_type(spark, name: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    return next(r[1] for r in rows if r[0] == "Type")


def rows(spark, sql: str) -> list[tuple]:
    return sorted(map(tuple, spark.sql(sql).collect()), key=repr)


class TestConventions:
    @pytest.fixture(scope="class")
    def models(self):
        files = {f"{name}.sql": sql for name, sql in FIRST.items()}
        files["sources.yml"] = SOURCES_YML
        files["schema.yml"] = schema_yml("the first words")
        return files

    @pytest.fixture(scope="class")
    def macros(self):
        return {"grants.sql": GRANTS_SQL}

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        create_source(spark, project.test_schema, "items", ITEMS_TABLE, ITEMS_ROWS)
        spark.sql(f"CREATE TABLE {project.test_schema}.grant_log (target STRING, privilege STRING, grantee STRING)")

    def test_configuration_changes_docs_contracts_and_switching(self, project, spark):
        schema, root = project.test_schema, project.project_root
        expected = recompute(ITEM_MV, schema)

        # dbt build: every model, each test after its model; the contract that fails writes nothing
        results, log = run_dbt_and_capture(["--debug", "build"], expect_pass=False)
        order = [r.node.unique_id for r in results]
        for r in results:
            if r.node.resource_type == "test":
                parent = r.node.depends_on.nodes[-1]
                assert order.index(parent) < order.index(r.node.unique_id), (parent, order)
                assert r.status == "pass", (r.node.name, r.message)
        msgs = messages(results)
        assert all(msgs[m].startswith("built at ") for m in [*FAST_MVS, "mv_to_table", "mv_to_view"]), msgs
        assert "This model has an enforced contract that failed." in msgs["contract_bad"], msgs["contract_bad"]
        assert "| price       | double          | int           | data type mismatch |" in msgs["contract_bad"]
        tables = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {schema}").collect()}
        assert not {"contract_bad", "contract_bad__ivm"} & tables, tables
        assert f"fast_mv does not enforce the not_null constraint on item_id of {schema}.contract_ok" in log
        assert f"persist_docs: column 'ghost' of {schema}.docs_mv is documented" in log
        assert "Applying" not in log
        assert comments(spark, f"{schema}.docs_mv") == (
            "the first words",
            {"item_id": "the item's id", "name": "its name", "price": None},
        )

        # a platform's properties on the storages, then several runs: never a change, never a rebuild
        for name in ("apply_mv", "continue_mv", "replace_mv", "fail_mv"):
            spark.sql(f"ALTER TABLE {schema}.{name}__ivm SET TBLPROPERTIES ('platform.added' = 'x')")
        spark.sql(f"INSERT INTO {schema}.items VALUES (5, 'kiwi', 4.0)")
        for run in range(2):
            results, log = run_dbt_and_capture(["--debug", "run", "--exclude", "contract_bad"])
            msgs = messages(results)
            outcome = "refreshed: " if run == 0 else "no changes"
            assert all(msgs[m].startswith(outcome) for m in FAST_MVS), (run, msgs)
            assert "Applying" not in log and "Configuration changes were identified" not in log, run

        # grants: on the view, at its build and at each refresh
        grants = rows(spark, f"SELECT * FROM {schema}.grant_log")
        assert grants == [(f"{schema}.grants_mv", "select", "reader")] * 3, grants

        # changed configs: apply alters in place or rebuilds, continue refreshes and warns
        for name, sql in SECOND.items():
            write_file(sql, root, "models", f"{name}.sql")
        write_file(schema_yml("the second words"), root, "models", "schema.yml")
        spark.sql(f"UPDATE {schema}.items SET price = 9.0 WHERE item_id = 1")
        version = detail(spark, f"{schema}.fail_mv__ivm")["lastModified"]
        results, log = run_dbt_and_capture(["--debug", "run", "--exclude", "contract_bad"], expect_pass=False)
        msgs = messages(results)
        assert f"Applying ALTER to: {schema}.apply_mv" in log and msgs["apply_mv"].startswith("refreshed: "), msgs
        found = props(spark, f"{schema}.apply_mv__ivm")
        assert found["team.owner"] == "b" and "team.tier" not in found and found["platform.added"] == "x", found
        assert detail(spark, f"{schema}.apply_mv__ivm")["clusteringColumns"] == ["item_id", "name"]
        assert comments(spark, f"{schema}.apply_mv")[0] == "the second words"
        assert comments(spark, f"{schema}.docs_mv")[0] == "the second words"
        assert f"Applying REPLACE to: {schema}.replace_mv" in log and msgs["replace_mv"].startswith("built at ")
        assert detail(spark, f"{schema}.replace_mv__ivm")["partitionColumns"] == ["item_id"]
        assert "partition_by (name) → (item_id), which only a rebuild applies" in msgs["strict_mv"], msgs
        assert "--full-refresh" in msgs["strict_mv"]
        assert (
            "Configuration changes were identified and `on_configuration_change` was set to `continue` for "
            f"`{schema}.continue_mv`"
        ) in log
        assert f"ALTER to: {schema}.continue_mv" not in log and f"REPLACE to: {schema}.continue_mv" not in log
        assert (
            msgs["continue_mv"].startswith("refreshed: ")
            and props(spark, f"{schema}.continue_mv__ivm")["team.owner"] == "a"
        )
        assert rows(spark, f"SELECT * FROM {schema}.continue_mv") == rows(spark, expected)
        assert msgs["table_to_mv"].startswith("built at ") and relation_type(spark, f"{schema}.table_to_mv") == "VIEW"
        assert relation_type(spark, f"{schema}.mv_to_table") != "VIEW"
        assert rows(spark, f"SELECT * FROM {schema}.mv_to_view") == rows(spark, expected)
        assert rows(spark, f"SELECT * FROM {schema}.apply_mv") == rows(spark, expected)

        # fail: the model fails with dbt's message, and nothing is written
        failed = (
            "Configuration changes were identified and `on_configuration_change` was set to `fail` for "
            f"`{schema}.fail_mv`"
        )
        assert failed in msgs["fail_mv"] and failed in log, msgs["fail_mv"]
        assert detail(spark, f"{schema}.fail_mv__ivm")["lastModified"] == version
        assert props(spark, f"{schema}.fail_mv__ivm")["team.owner"] == "a"

        # dbt retry: the failed models again, their configs set back
        for name in ("strict_mv", "fail_mv"):
            write_file(FIRST[name], root, "models", f"{name}.sql")
        msgs = messages(run_dbt(["retry"]))
        assert sorted(msgs) == ["fail_mv", "strict_mv"] and all(m.startswith("refreshed") for m in msgs.values()), msgs

        # applied configurations are recorded: no changes, no alter; continue still warns
        results, log = run_dbt_and_capture(["--debug", "run", "--exclude", "contract_bad"])
        msgs = messages(results)
        assert all(msgs[m] == "no changes" for m in ("apply_mv", "replace_mv", "docs_mv", "continue_mv")), msgs
        assert "Applying" not in log and "was set to `continue` for" in log

        # the catalog: each model with exactly its columns and types, comments included; no storage node
        run_dbt(["docs", "generate"])
        catalog = json.loads((Path(root) / "target" / "catalog.json").read_text())
        assert not [k for k in catalog["nodes"] if "__ivm" in k]
        for key, node in catalog["nodes"].items():
            assert not [c for c in node["columns"] if c.startswith("__ivm")], key
        # as dbt-spark lists a table of the same query (it reads no comments into the catalog)
        table = {c: v["type"] for c, v in catalog["nodes"]["model.test.mv_to_table"]["columns"].items()}
        assert list(table) == ["item_id", "name", "price"], table
        for name in (*FAST_MVS, "table_to_mv"):
            node = catalog["nodes"][f"model.test.{name}"]
            assert {c: v["type"] for c, v in node["columns"].items()} == table, (name, node["columns"])

        # switching away left storages behind: the run-operation drops exactly those
        run_dbt(["run-operation", "fast_mv_drop_orphans"])
        tables = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {schema}").collect()}
        assert not {"mv_to_table__ivm", "mv_to_view__ivm"} & tables and "table_to_mv__ivm" in tables, tables
        assert {"mv_to_table", "mv_to_view", "apply_mv__ivm"} <= tables

        # ls, compile, show
        listed = run_dbt(["ls", "-s", "config.materialized:fast_mv", "--resource-type", "model", "--output", "name"])
        assert sorted(listed) == sorted([*FAST_MVS, "contract_bad", "table_to_mv"])
        compiled = run_dbt(["compile", "-s", "apply_mv"])
        assert f"from {schema}.items" in compiled[0].node.compiled_code.replace("`", "")
        shown = run_dbt(["show", "-s", "apply_mv", "--limit", "3"])
        assert len(shown[0].agate_table.rows) == 3
