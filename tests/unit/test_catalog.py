"""`catalog.py`: the pure helpers that read the catalog (DESCRIBE, SHOW TABLE EXTENDED)."""

from __future__ import annotations

from typing import ClassVar

from dbt_ivm.analyze import parse
from dbt_ivm.catalog import (
    CatalogEntry,
    backing_table,
    catalog_entries,
    created_times,
    describe_together,
    parse_describe_extended,
    parse_properties,
)
from dbt_ivm.ir import TableName


def test_parse_describe_extended():
    rows = [
        {"col_name": "a", "data_type": "int"},
        {"col_name": "b c", "data_type": "array<string>"},
        {"col_name": "", "data_type": ""},
        {"col_name": "# Detailed Table Information", "data_type": ""},
        {"col_name": "Provider", "data_type": "delta"},
        {"col_name": "Table Properties", "data_type": "[delta.enableChangeDataFeed=true,x=a=b]"},
    ]
    cols, details = parse_describe_extended(rows)
    assert cols == {"a": "int", "b c": "array<string>"}
    assert details["Provider"] == "delta"
    assert parse_properties(details["Table Properties"]) == {"delta.enableChangeDataFeed": "true", "x": "a=b"}


def test_backing_table_name():
    assert backing_table(TableName("s", "v")) == TableName("s", "v__ivm")


def test_created_times_one_query_per_database():
    class FakeDb:
        queries: ClassVar[list[str]] = []

        def query(self, sql):
            self.queries.append(sql)
            info = "Catalog: spark_catalog\nCreated Time: Mon Nov 23 04:57:41 UTC 2026\nProvider: delta\n"
            return [{"tableName": "O", "information": info}, {"tableName": "other", "information": "x"}]

    db = FakeDb()
    tables = [TableName("db", "o"), TableName("db", "c"), TableName("db2", "o")]
    assert created_times(db, tables) == {
        "db.o": "Mon Nov 23 04:57:41 UTC 2026",
        "db.c": "",
        "db2.o": "Mon Nov 23 04:57:41 UTC 2026",
    }
    assert db.queries == ["SHOW TABLE EXTENDED IN `db` LIKE 'o|c'", "SHOW TABLE EXTENDED IN `db2` LIKE 'o'"]


def test_catalog_entries_tell_tables_from_views_and_skip_temporary_views():
    """One statement tells a refresh its sources' creation times and whether its storage and view exist."""

    class FakeDb:
        queries: ClassVar[list[str]] = []

        def query(self, sql):
            self.queries.append(sql)
            return [
                {"tableName": "o", "isTemporary": 0, "information": "Created Time: T1\nType: MANAGED\nProvider: delta"},
                {"tableName": "v", "isTemporary": False, "information": "Created Time: T2\nType: VIEW\n"},
                {"tableName": "v__ivm", "isTemporary": True, "information": "Type: VIEW\n"},
            ]

    tables = [TableName("db", "o"), TableName("db", "v__ivm"), TableName("db", "v")]
    entries = catalog_entries(FakeDb(), tables)
    assert entries == {"db.o": CatalogEntry("T1", "MANAGED", "delta"), "db.v": CatalogEntry("T2", "VIEW")}
    assert FakeDb.queries == ["SHOW TABLE EXTENDED IN `db` LIKE 'o|v__ivm|v'"]


def test_the_first_line_of_an_error_is_the_first_that_says_something():
    from dbt_ivm.catalog import first_line

    dbt_error = RuntimeError("Runtime Error\n  [TABLE_OR_VIEW_NOT_FOUND] The table or view `s`.`t` cannot be found.")
    assert first_line(dbt_error).startswith("[TABLE_OR_VIEW_NOT_FOUND]")
    assert first_line(RuntimeError("\n  boom\nmore")) == "boom"
    assert first_line(RuntimeError("Database Error")) == "Database Error"
    assert first_line(RuntimeError("")) == "RuntimeError"
    py4j = RuntimeError("An error occurred while calling o58.sql.\n: org.apache.spark.SparkException: [FAILED]")
    assert first_line(py4j) == "org.apache.spark.SparkException: [FAILED]"


def test_a_view_that_is_not_a_fast_mv_is_refused_naming_ephemeral_and_fast_mv():
    import pytest

    from dbt_ivm.catalog import SourceInfo, check_source
    from dbt_ivm.errors import SourceError
    from dbt_ivm.ir import TableName

    view = SourceInfo(TableName("db", "stg"), {"k": "int"}, "", "VIEW", {}, view_text="SELECT k FROM db.raw")
    with pytest.raises(SourceError, match=r"db\.stg is a view, and not a fast_mv's.*'ephemeral'.*'fast_mv'"):
        check_source(view)


def test_the_sources_and_the_model_are_described_in_one_query_split_at_their_markers():
    """Each source's columns (duplicates across sources kept apart) and the model's, from one DESCRIBE QUERY."""
    sent = []

    class FakeDb:
        def query(self, sql):
            sent.append(sql)
            rows = [("__ivm_part_0", "int"), ("id", "int"), ("amt", "double"), ("__ivm_part_1", "int")]
            rows += [("id", "bigint"), ("__ivm_part_2", "int"), ("id", "int"), ("n", "bigint")]
            return [{"col_name": n, "data_type": t, "comment": None} for n, t in rows]

    model = parse("select o.id, count(*) as n from db.o o join db.c c on o.id = c.id group by o.id")
    columns, types = describe_together(FakeDb(), [TableName("db", "o"), TableName("db", "c")], model)
    assert columns == {"db.o": {"id": "int", "amt": "double"}, "db.c": {"id": "bigint"}}
    assert types == {"id": "int", "n": "bigint"}
    assert len(sent) == 1 and sent[0].startswith("DESCRIBE QUERY SELECT 1 AS __ivm_part_0, p0.*, 1 AS __ivm_part_1")
    assert "FROM (SELECT * FROM `db`.`o` LIMIT 0) AS p0 CROSS JOIN (SELECT * FROM `db`.`c` LIMIT 0) AS p1" in sent[0]
    assert "CROSS JOIN (SELECT o.id, COUNT(*) AS n FROM db.o AS o JOIN db.c AS c" in sent[0]
