"""Golden SQL of the refresh builders, and the pure helpers of maintain/metadata.

Regenerate the golden files after an intended change with:
    .venv/bin/python scripts/update_golden.py
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from sqlglot import exp

from dbt_ivm import analyze, layout, maintain, render, verbatim
from dbt_ivm.catalog import (
    CatalogEntry,
    backing_table,
    catalog_entries,
    created_times,
    parse_describe_extended,
    parse_properties,
)
from dbt_ivm.classes import aggregate, changes, flips, joins, outer_joins, outer_terms, rules_for
from dbt_ivm.classes.keys import key_pieces
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.errors import ConfigError, UnsupportedView
from dbt_ivm.ir import OuterJoin, TableName
from dbt_ivm.metadata import Watermark, latest_watermark

GOLDEN = Path(__file__).parent / "golden"
SCHEMA = {
    "db.o": {"id": "int", "cust": "int", "amt": "double", "note": "string"},
    "db.c": {"cid": "int", "name": "string"},
}
JOIN = "select o.id, c.name from db.o o join db.c c on o.cust = c.cid where o.amt > 1"
SELF = "select a.id, b.id as id2 from db.o a join db.o b on a.cust = b.id"
BACKING = TableName("db", "v__ivm")


AGG = (
    "select o.cust, c.name, count(*) as n, sum(o.amt) as total, avg(o.amt) as mean, max(o.amt) as top, "
    "count(distinct o.note) as notes from db.o o join db.c c on o.cust = c.cid "
    "where o.id > 0 group by o.cust, c.name having sum(o.amt) > 10"
)
GLOBAL = "select count(*) as n, min(amt) as low from db.o"
# Outer joins: the change climbs the join tree, with NS-compensation of the padded rows.
OUTER_SCHEMA = {**SCHEMA, "db.r": {"rid": "int", "cid": "int", "label": "string"}}
LEFT = "select o.id, c.name from db.o o left join db.c c on o.cust = c.cid"
FULL = "select o.id, c.name from db.o o full join db.c c on o.cust = c.cid"
NESTED = (
    "select o.id, c.name, r.label from db.o o left join db.c c on o.cust = c.cid "
    "left join db.r r on c.cid = r.cid and r.label <> c.name"
)
OLD, NEW = {"db.o": 3, "db.c": 5}, {"db.o": 4, "db.c": 7}


def golden_sql(name: str) -> str:
    """The SQL of golden case `name`, as the engine writes it now (pretty-printed)."""
    built = CASES[name]()
    return built if isinstance(built, str) else verbatim.to_sql(built, pretty=True)


def _agg_view() -> object:
    return aggregate.view_select(analyze(AGG, SCHEMA), BACKING, {2: "double"})


CASES = {
    "build_join": lambda: joins.build_select(analyze(JOIN, SCHEMA), {"db.o": 3, "db.c": 5}),
    "delta_join_both_changed": lambda: joins.delta_select(
        analyze(JOIN, SCHEMA), {"db.o": 3, "db.c": 5}, {"db.o": 4, "db.c": 7}
    ),
    "delta_join_one_changed": lambda: joins.delta_select(
        analyze(JOIN, SCHEMA), {"db.o": 3, "db.c": 5}, {"db.o": 3, "db.c": 7}
    ),
    "delta_self_join": lambda: joins.delta_select(analyze(SELF, SCHEMA), {"db.o": 1}, {"db.o": 2}),
    "merge_join": lambda: joins.merge_statement(analyze(JOIN, SCHEMA), BACKING, "__ivm_delta_x"),
    "insert_join": lambda: joins.insert_statement(analyze(JOIN, SCHEMA), BACKING, "__ivm_delta_x"),
    "append_join": lambda: joins.append_statement(
        analyze(JOIN, SCHEMA),
        BACKING,
        {"db.o": 3, "db.c": 5},
        {"db.o": 4, "db.c": 7},
        ("id", "name"),
        "key repeats",
        broadcast=True,
    ),
    "view_join": lambda: joins.view_select(analyze(JOIN, SCHEMA), BACKING),
    "delta_left_join": lambda: joins.delta_select(analyze(LEFT, SCHEMA), OLD, {"db.o": 3, "db.c": 7}),
    "delta_full_join_both_changed": lambda: joins.delta_select(analyze(FULL, SCHEMA), OLD, NEW),
    "delta_nested_left_joins": lambda: joins.delta_select(
        analyze(NESTED, OUTER_SCHEMA), {**OLD, "db.r": 2}, {**NEW, "db.r": 6}
    ),
    "build_aggregate": lambda: aggregate.build_select(analyze(AGG, SCHEMA), NEW),
    "delta_aggregate": lambda: aggregate.delta_select(analyze(AGG, SCHEMA), OLD, NEW, float_sums=frozenset({1})),
    "lost_groups_global": lambda: aggregate.lost_groups(
        analyze(GLOBAL, SCHEMA), BACKING, "__ivm_delta_x", aggregate.Recompute(False, frozenset())
    ),
    "recompute_aggregate": lambda: aggregate.recompute_select(analyze(AGG, SCHEMA), NEW, "__ivm_lost_x"),
    "merge_aggregate": lambda: aggregate.merge_statement(analyze(AGG, SCHEMA), BACKING, "__ivm_delta_x", "__ivm_r_x"),
    "merge_global_insert_only": lambda: aggregate.merge_statement(analyze(GLOBAL, SCHEMA), BACKING, "__ivm_d_x", None),
    "view_aggregate": _agg_view,
    "recompute": lambda: render.consistency_sql(BACKING, render.pin_versions(JOIN, {"db.o": 3, "db.c": 5})),
    "recompute_float_columns": lambda: render.consistency_sql(
        BACKING, render.pin_versions(GLOBAL, {"db.o": 3}), {"n": "bigint", "low": "double"}
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_sql(name):
    path = GOLDEN / f"{name}.sql"
    sql = golden_sql(name)
    assert sql == path.read_text().strip(), f"golden {path.name} differs (scripts/update_golden.py):\n{sql}"


def test_unchanged_sources_produce_no_delta():
    assert joins.delta_select(analyze(JOIN, SCHEMA), {"db.o": 3, "db.c": 5}, {"db.o": 3, "db.c": 5}) is None


def test_one_term_per_changed_occurrence():
    """A self-join has a telescoping term per occurrence: both read the same change feed."""
    sql = render.sql(joins.delta_select(analyze(SELF, SCHEMA), {"db.o": 1}, {"db.o": 2}))
    assert sql.count("TABLE_CHANGES") == 2 and sql.count("UNION ALL") == 1
    # the term of the 2nd occurrence reads the 1st at the new version, the 1st term the 2nd at the old
    assert "VERSION AS OF 2" in sql and "VERSION AS OF 1" in sql


def test_identity_filter_names_each_changed_occurrence():
    plan = analyze(JOIN, SCHEMA)
    both = render.sql(joins.identity_filter(plan, {0: [5, -3, 5], 1: [9]}, "t"))
    assert both == "(`t`.`__ivm_rid_0` IN (-3, 5) OR `t`.`__ivm_rid_1` IN (9))"
    assert render.sql(joins.identity_filter(plan, {0: [], 1: [9]})) == "(`__ivm_rid_1` IN (9))"
    assert render.sql(joins.identity_filter(plan, {0: []})) == "FALSE"


def test_unique_key_names_output_columns():
    plan = analyze(JOIN, SCHEMA)
    assert render.output_columns(plan, None, "unique_key") == ()
    assert render.output_columns(plan, "ID", "unique_key") == ("id",)
    assert render.output_columns(plan, ["id", "name", "ID"], "unique_key") == ("id", "name")
    with pytest.raises(ConfigError, match="unique_key 'cust' is not a column of the model"):
        render.output_columns(plan, ["id", "cust"], "unique_key")
    stats = render.sql(joins.delta_stats("d", ("id",)))
    # dbt's meaning of unique: only rows whose key is a value are held to it
    assert "COUNT(DISTINCT IF(NOT `id` IS NULL, STRUCT(`id`), NULL)) AS keys" in stats, stats
    assert "MAX(IF(NOT `id` IS NULL, `__ivm_d`, NULL)) AS keyed_max_d" in stats, stats


def test_the_merge_narrows_the_stored_rows_to_the_change_sets_value_ranges():
    import datetime
    from decimal import Decimal

    plan = analyze(JOIN, SCHEMA)
    types = {"id": "bigint", "amt": "double", "name": "string"}
    assert joins.ranged_columns(plan, types) == {"id": "bigint", "name": "string"}
    stats = render.sql(joins.delta_stats("d", (), {"id": "bigint", "name": "string"}))
    assert "MIN(`id`) AS lo_0, MAX(`id`) AS hi_0, COUNT(*) - COUNT(`id`) > 0 AS nulls_0" in stats
    row = {"lo_0": -3, "hi_0": 7, "nulls_0": False, "lo_1": "a b", "hi_1": "x", "nulls_1": True}
    ranged = {"id": "bigint", "name": "string"}
    ranges = [render.sql(r) for r in joins.value_ranges(ranged, row, "t")]
    assert ranges == ["`t`.`id` BETWEEN -3 AND 7", "(`t`.`name` IS NULL OR `t`.`name` BETWEEN 'a b' AND 'x')"]
    only_nulls = {"lo_0": None, "hi_0": None, "nulls_0": True}
    assert [render.sql(r) for r in joins.value_ranges({"id": "bigint"}, only_nulls, "t")] == ["`t`.`id` IS NULL"]
    # values a literal could not write exactly leave the column unfiltered
    for lo, hi in (("it's", "z"), ("a", "back\\slash"), (0.5, 1.5), (True, True)):
        assert joins.value_ranges({"c": "string"}, {"lo_0": lo, "hi_0": hi, "nulls_0": False}, "t") == []
    dates = {"lo_0": datetime.date(2024, 1, 2), "hi_0": datetime.date(2024, 3, 4), "nulls_0": False}
    assert render.sql(joins.value_ranges({"d": "date"}, dates, "t")[0]) == (
        "`t`.`d` BETWEEN CAST('2024-01-02' AS DATE) AND CAST('2024-03-04' AS DATE)"
    )
    money = {"lo_0": Decimal("-1.25"), "hi_0": Decimal("7.50"), "nulls_0": False}
    assert render.sql(joins.value_ranges({"m": "decimal(9,2)"}, money, "t")[0]) == "`t`.`m` BETWEEN -1.25 AND 7.50"
    merge = render.sql(joins.merge_statement(plan, TableName("db", "v__ivm"), "d", None, {"id": "bigint"}, row))
    assert merge.count("BETWEEN -3 AND 7") == 1 and "BETWEEN 'a b'" not in merge
    # the probe whether the change set only appends narrows the same way, per changed occurrence
    narrow = joins.value_ranges({"id": "bigint"}, row, "t")
    probe = render.sql(joins.existing_identities(plan, TableName("db", "v__ivm"), {0: "c0", 1: "c1"}, narrow))
    assert probe.count("`t`.`id` BETWEEN -3 AND 7") == 2 and probe.count("`t`.`__ivm_rid_") == 2
    assert "BETWEEN" not in render.sql(joins.existing_identities(plan, TableName("db", "v__ivm"), {0: "c0"}))
    outer = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)
    matches = render.sql(outer_joins.stored_matches(outer, TableName("db", "v__ivm"), "d", narrow))
    assert matches.endswith("WHERE `t`.`id` BETWEEN -3 AND 7")


def test_a_timestamps_value_range_is_its_instant_and_a_timestamp_ntzs_its_text():
    """No time zone between the change set's bounds and the MERGE's: a timestamp's bound is its
    microseconds since the epoch; a timestamp_ntz has no zone, its text reads back as itself."""
    stats = render.sql(joins.delta_stats("d", (), {"ts": "timestamp", "n": "timestamp_ntz"}))
    assert "UNIX_MICROS(MIN(`ts`)) AS lo_0, UNIX_MICROS(MAX(`ts`)) AS hi_0" in stats
    assert "CAST(MIN(`n`) AS STRING) AS lo_1" in stats
    row = {"lo_0": -5, "hi_0": 1709251200000000, "nulls_0": True, "lo_1": "2024-01-01 00:00:00", "nulls_1": False}
    row["hi_1"] = "2024-01-02 03:04:05.25"
    assert [render.sql(r) for r in joins.value_ranges({"ts": "timestamp", "n": "timestamp_ntz"}, row, "t")] == [
        "(`t`.`ts` IS NULL OR `t`.`ts` BETWEEN TIMESTAMP_MICROS(-5) AND TIMESTAMP_MICROS(1709251200000000))",
        "`t`.`n` BETWEEN CAST('2024-01-01 00:00:00' AS TIMESTAMP_NTZ) "
        "AND CAST('2024-01-02 03:04:05.25' AS TIMESTAMP_NTZ)",
    ]
    for lo in ("+10000-01-01 00:00:00", "2024-01-01T00:00:00Z", None):
        unread = {"lo_0": lo, "hi_0": "2024-01-01 00:00:00", "nulls_0": False}
        assert joins.value_ranges({"n": "timestamp_ntz"}, unread, "t") == []


def test_cluster_by_names_columns_the_refresh_narrows_by_and_sorts_the_build():
    plan = analyze(JOIN, SCHEMA)
    rules = rules_for(plan)
    types = {"id": "bigint", "name": "string"}
    ranged = rules.ranged_columns(plan, types)
    assert layout.cluster_columns(plan, None, ranged, types) == ()
    assert layout.cluster_columns(plan, "ID", ranged, types) == ("id",)
    assert layout.cluster_columns(plan, ["name", "id", "name"], ranged, types) == ("name", "id")
    with pytest.raises(ConfigError, match=r"cluster_by 'amt' is not a column of the model \(its columns: id, name\)"):
        layout.cluster_columns(plan, ["id", "amt"], ranged, types)
    with pytest.raises(ConfigError, match="cluster_by must be a column name or a list of column names, not 1"):
        layout.cluster_columns(plan, 1, ranged, types)
    binary = {"id": "bigint", "name": "binary"}
    with pytest.raises(ConfigError, match=r"cluster_by 'name' \(binary\) cannot narrow.*narrows by id; drop"):
        layout.cluster_columns(plan, "name", rules.ranged_columns(plan, binary), binary)
    grouped = analyze("select c.name, count(*) as n from db.c c group by c.name", SCHEMA)
    counted = {"name": "string", "n": "bigint"}
    with pytest.raises(ConfigError, match="narrows by none of its columns"):
        layout.cluster_columns(grouped, "name", rules_for(grouped).ranged_columns(grouped, counted), counted)
    rows = joins.build_select(plan, {"db.o": 1, "db.c": 2})
    stored = layout.stored_types(plan, types)
    assert stored == {"id": "bigint", "name": "string", "__ivm_rid_0": "bigint", "__ivm_rid_1": "bigint"}
    assert layout.clustered(rows, (), stored) == layout.Clustered(rows)  # no layout, no settings
    by_name = layout.clustered(rows, ("name",), stored)
    sorted_rows = render.sql(by_name.select)
    # range-partitioned before the grouping, each range sorted by the grouping key with the layout's
    # columns first, so the rows are grouped as they stream by and leave in the layout's order:
    # ascending, NULLs first as Spark sorts
    assert (
        "FROM (SELECT /*+ REPARTITION_BY_RANGE(`name`) */ * FROM (SELECT" in sorted_rows
        and ") AS `__ivm_v` SORT BY `name`, `id`, `__ivm_rid_0`, `__ivm_rid_1`) AS __ivm_v" in sorted_rows
    )
    assert sorted_rows.endswith("GROUP BY `name`, `id`, `__ivm_rid_0`, `__ivm_rid_1` SORT BY `name`")
    assert by_name.settings == (layout.FILES, *layout.SORTED_GROUPING)
    assert "SORT BY" not in render.sql(rows) and "REPARTITION" not in render.sql(rows)  # the plan's select is kept
    # a key whose equal values can differ in bytes (0.0 and -0.0, collations): the hash aggregate
    for other in ("array<double>", "struct<a: float>", "string collate UTF8_LCASE", ""):
        hashed = layout.clustered(rows, ("name",), {**stored, "id": other})
        assert hashed.settings == (layout.FILES,), other
        hashed_rows = render.sql(hashed.select)
        assert "REPARTITION_BY_RANGE(`name`) */ * FROM (SELECT" in hashed_rows and hashed_rows.count("SORT BY") == 1
        assert hashed_rows.endswith("GROUP BY `name`, `id`, `__ivm_rid_0`, `__ivm_rid_1` SORT BY `name`")
    for exact in ("INT", "decimal(38, 0)", "varchar(10)", "timestamp_ntz", "binary"):
        assert layout.clustered(rows, ("name",), {**stored, "id": exact}).settings[1:] == layout.SORTED_GROUPING
    # a FLOAT or DOUBLE key is normalized as the hash aggregate would, then sorted
    doubled = layout.clustered(rows, ("name",), {**stored, "id": "double"})
    assert doubled.settings[1:] == layout.SORTED_GROUPING
    assert (
        "/*+ REPARTITION_BY_RANGE(`name`) */ CASE WHEN ISNAN(`id`) THEN CAST('NaN' AS DOUBLE) WHEN `id` = CAST(0 AS "
        "DOUBLE) THEN CAST(0 AS DOUBLE) ELSE `id` END AS `id`, `name`, `__ivm_rid_0`, `__ivm_rid_1` FROM"
    ) in render.sql(doubled.select)
    ungrouped = exp.select("id", "name").from_(exp.select("id", "name").from_("t").subquery("v"))
    global_sort = layout.clustered(ungrouped, ("id",), stored)  # no grouping: a global sort
    assert render.sql(global_sort.select).endswith("ORDER BY `id`") and global_sort.settings == (layout.FILES,)
    counted = exp.select("id", exp.Count(this=exp.Star()).as_("n")).from_(ungrouped.subquery("v")).group_by("id")
    assert render.sql(layout.clustered(counted, ("n",), stored).select).endswith("ORDER BY `n`")  # not derived
    computed = exp.select("id", exp.Count(this=exp.Star()).as_("n")).from_(ungrouped.subquery("v")).group_by("id + 1")
    hashed = layout.clustered(computed, ("id",), stored)  # a key that is not a column: ranged, hashed
    assert render.sql(hashed.select).endswith("GROUP BY id + 1 SORT BY `id`") and hashed.settings == (layout.FILES,)


def test_a_build_writes_under_its_settings_and_restores_the_sessions():
    assert layout.FILES.value("") == "250000" and layout.FILES.value("0") == "250000"
    assert layout.FILES.value("1000") == "1000"  # the session's smaller limit
    keep, sort_aggregate = layout.SORTED_GROUPING
    assert keep.value("") == layout.KEEP_SORTS
    assert keep.value("a.B, c.D") == f"a.B,c.D,{layout.KEEP_SORTS}"  # the session's exclusions kept
    assert keep.value(f"a.B,{layout.KEEP_SORTS}") == f"a.B,{layout.KEEP_SORTS}"
    assert sort_aggregate.value("false") == "true"

    class Session:
        def __init__(self) -> None:
            self.values = {layout.MAX_RECORDS_CONF: "0", layout.SORT_AGGREGATE_CONF: "false"}
            self.executed: list[str] = []

        def query(self, sql: str) -> list[dict[str, str]]:
            key = sql.removeprefix("SET ")
            return [{"key": key, "value": self.values.get(key, "<undefined>")}]

        def execute(self, sql: str) -> None:
            self.executed.append(sql)

    session = Session()
    with maintain.session_overrides(session, (layout.FILES, *layout.SORTED_GROUPING)):  # type: ignore[arg-type]
        assert session.executed == [
            f"SET {layout.MAX_RECORDS_CONF}=250000",
            f"SET {layout.EXCLUDED_RULES_CONF}={layout.KEEP_SORTS}",
            f"SET {layout.SORT_AGGREGATE_CONF}=true",
        ]
    assert session.executed[3:] == [
        f"SET {layout.MAX_RECORDS_CONF}=0",
        f"RESET {layout.EXCLUDED_RULES_CONF}",  # the session had none
        f"SET {layout.SORT_AGGREGATE_CONF}=false",
    ]


def test_term_versions_telescope():
    assert changes.term_version(0, 1, old=3, new=4) == 4  # earlier occurrence: new state
    assert changes.term_version(2, 1, old=3, new=4) == 3  # later occurrence: old state


def test_identifiers_are_quoted():
    schema = {"my db.weird table": {"select": "int", "Mixed Case": "string"}}
    plan = analyze("select `select`, `Mixed Case` from `my db`.`weird table`", schema)
    sql = render.sql(joins.build_select(plan, {"my db.weird table": 1}))
    assert "`my db`.`weird table` VERSION AS OF 1" in sql
    assert "`select`" in sql and "`Mixed Case`" in sql


def test_every_class_has_its_rules():
    plan = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)
    assert rules_for(plan) is outer_joins.RULES
    plan = analyze(
        "select c.name, count(o.id) as n from db.c c left join db.o o on o.cust = c.cid group by c.name", SCHEMA
    )
    assert rules_for(plan) is aggregate.RULES
    assert rules_for(analyze(GLOBAL, SCHEMA)) is aggregate.RULES


def test_watermark_round_trip_and_latest():
    mark = Watermark({"db.o": 4, "db.c": 7}, "abc", {"db.o": "Mon Nov 23 04:31:59 UTC 2026"})
    text = mark.encode()
    assert Watermark.decode(text).sources == {"db.o": 4, "db.c": 7}
    history = [{"version": 5, "userMetadata": None}, {"version": 4, "userMetadata": text}]
    latest = latest_watermark(history)
    assert (
        latest is not None and latest.commit_version == 4 and latest.created == {"db.o": "Mon Nov 23 04:31:59 UTC 2026"}
    )
    assert latest_watermark([{"version": 1, "userMetadata": "someone else's"}]) is None


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
                {"tableName": "o", "isTemporary": False, "information": "Created Time: T1\nType: MANAGED\n"},
                {"tableName": "v", "isTemporary": False, "information": "Created Time: T2\nType: VIEW\n"},
                {"tableName": "v__ivm", "isTemporary": True, "information": "Type: VIEW\n"},
            ]

    tables = [TableName("db", "o"), TableName("db", "v__ivm"), TableName("db", "v")]
    entries = catalog_entries(FakeDb(), tables)
    assert entries == {"db.o": CatalogEntry("T1", "MANAGED"), "db.v": CatalogEntry("T2", "VIEW")}
    assert FakeDb.queries == ["SHOW TABLE EXTENDED IN `db` LIKE 'o|v__ivm|v'"]


def test_unique_key_flip_keys_and_sql():
    """The flip applies where a source is the padded side of an outer join whose other side is
    preserved, on its columns ON equates with the other side; it reads that source not at all."""
    flip_keys = flips.flip_keys
    left = analyze("select o.id, c.name from db.o o left join db.c c on c.cid = o.cust and c.name <> 'x'", SCHEMA)
    assert flip_keys(left) == {1: ("cid",)}
    full = analyze("select o.id, c.name from db.o o full join db.c c on o.cust = c.cid", SCHEMA)
    assert flip_keys(full) == {0: ("cust",), 1: ("cid",)}
    tolerant = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid or c.cid is null", SCHEMA)
    assert flip_keys(tolerant) == {}
    nested = "select o.id from db.o o left join (db.c c join db.o p on p.id = c.cid) on c.cid = o.cust"
    assert flip_keys(analyze(nested, SCHEMA)) == {}  # the padded side is a join, not one source

    old, new = {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}
    general = render.sql(joins.delta_select(left, old, new, {1: "chg"}))
    flipped = render.sql(joins.delta_select(left, old, new, {1: "chg"}, flips=frozenset({1})))
    assert "`db`.`c` VERSION AS OF" in general and "LEFT SEMI JOIN" in general
    assert "`db`.`c` VERSION AS OF" not in flipped and "LEFT SEMI JOIN" not in flipped
    assert "`__ivm_flow`" in flipped
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg"), (1, 2, "chg")]))
    assert check.count("`db`.`c` VERSION AS OF") == 2 and "HAVING COUNT(*) > 1" in check
    # read within the change set's range of the key (`outer_join_keys`' filters on c itself)
    narrow = joins.key_ranges({1: "chg"}, terms_for(left).join_keys(), [{"p": 0, "lo_1_0": 3, "hi_1_0": 9}])
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg")], narrow))
    assert "WHERE `cid` BETWEEN 3 AND 9" in check, check
    # and within each piece, when the change lies in several (`keys.key_pieces`)
    pieces = [{"p": 0, "lo_1_0": 3, "hi_1_0": 9}, {"p": 31, "lo_1_0": 90, "hi_1_0": 91}]
    narrow = joins.key_ranges({1: "chg"}, terms_for(left).join_keys(), pieces)
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg")], narrow))
    assert "WHERE (`cid` BETWEEN 3 AND 9 OR `cid` BETWEEN 90 AND 91)" in check, check
    # the change set is asked first: key values it inserts, or deletes, more than once repeat
    # in the source after the change, or before it, without reading the source
    first = render.sql(flips.repeated_in_change(left, flip_keys(left), {1: "chg"}))
    assert "VERSION AS OF" not in first and "FROM `chg` WHERE NOT `cid` IS NULL GROUP BY `cid`" in first, first
    assert "HAVING SUM(IF(`__ivm_d` > 0, `__ivm_d`, 0)) > 1 OR SUM(IF(`__ivm_d` < 0, -`__ivm_d`, 0)) > 1" in first


def test_the_compensation_counts_matches_where_on_is_key_equalities_and_one_sided_conditions():
    """`outer_terms.counted_on`: ON's equalities of the changed source's columns with the other
    side's, and its conditions on the changed source alone; then the compensation reads the
    source once, before the change (`_Term._counted`). Otherwise the general one, at both."""
    left = analyze("select o.id, c.name from db.o o left join db.c c on c.cid = o.cust and c.name <> 'x'", SCHEMA)
    node = left.tree
    assert isinstance(node, OuterJoin)
    keys, own = outer_terms.counted_on(left, node, 1)
    assert [(k, render.sql(y)) for k, y in keys] == [("cid", "`o`.`cust`")]
    assert [render.sql(c) for c in own] == ["`c`.`name` <> 'x'"]
    assert outer_terms.counted_on(left, node, 0) is None  # o is not padded by this join
    old, new = {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}
    counted = render.sql(joins.delta_select(left, old, new, {1: "chg"}))
    assert "`db`.`c` VERSION AS OF 1" in counted and "`db`.`c` VERSION AS OF 2" not in counted
    assert "WHERE `c`.`name` <> 'x' GROUP BY `c`.`cid`" in counted and "`__ivm_dn`" in counted
    for on in ("c.cid = o.cust and c.name < o.note", "c.cid = o.cust or c.cid is null", "c.name <> o.note"):
        general = analyze(f"select o.id, c.name from db.o o left join db.c c on {on}", SCHEMA)
        assert outer_terms.counted_on(general, general.tree, 1) is None, on
        sql = render.sql(joins.delta_select(general, old, new, {1: "chg"}))
        assert "`db`.`c` VERSION AS OF 2" in sql and "`__ivm_dn`" not in sql
    full = analyze("select o.id, c.name from db.o o full join db.c c on o.cust = c.cid", SCHEMA)
    assert [k for k, _ in outer_terms.counted_on(full, full.tree, 0)[0]] == ["cust"]  # either side of a FULL join


def test_a_terms_other_sources_are_narrowed_to_the_keys_its_change_rows_join():
    """`joins.narrowing`: equalities every view row satisfies, of plain columns of one exact type."""
    keys = terms_for(analyze(JOIN, SCHEMA)).join_keys()
    assert keys == {0: [("cust", "c", "cid", "int")], 1: [("cid", "o", "cust", "int")]}
    implicit = analyze("select o.id, c.name from db.o o, db.c c where o.cust = c.cid and o.note = c.name", SCHEMA)
    assert [k[0] for k in terms_for(implicit).join_keys()[0]] == ["cust", "note"]
    for unsafe in (
        "select o.id, c.name from db.o o join db.c c on o.cust = c.cid or o.id = c.cid",  # not every row
        "select o.id from db.o o join db.c c on o.amt = c.cid",  # double = int: no exact bound
        "select o.id from db.o o join db.c c on o.cust + 0 = c.cid",  # not a plain column
    ):
        assert terms_for(analyze(unsafe, SCHEMA)).join_keys() == {}, unsafe
    # over an outer join: each side by the other's range, and itself for the compensation's reads
    outer = terms_for(analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)).join_keys()
    assert outer == {
        0: [("cust", "c", "cid", "int"), ("cust", "o", "cust", "int")],
        1: [("cid", "o", "cust", "int"), ("cid", "c", "cid", "int")],
    }
    stats = joins.key_stats({0: "chg0"}, keys)
    assert stats is not None and "MIN(`__ivm_v`) AS lo_0_0" in render.sql(stats)
    narrow = joins.key_ranges({0: "chg0"}, keys, [{"p": 0, "lo_0_0": 3, "hi_0_0": 9}])
    delta = render.sql(
        joins.delta_select(analyze(JOIN, SCHEMA), OLD, {"db.o": 4, "db.c": 5}, {0: "chg0"}, narrow=narrow)
    )
    assert "FROM `db`.`c` VERSION AS OF 5 WHERE `cid` BETWEEN 3 AND 9)" in delta
    assert joins.key_ranges({0: "chg0"}, keys, [{"p": 0, "lo_0_0": None, "hi_0_0": None}]) == {}  # no key: no bound


def test_a_change_in_far_apart_places_narrows_to_each_place():
    """`keys.key_pieces`: the change set's keys in pieces of their span; pieces next to each
    other are one range, an empty piece between two splits them; an inexact bound narrows
    nothing, since every piece must be covered."""
    keys = terms_for(analyze(JOIN, SCHEMA)).join_keys()
    rows = [
        {"p": 31, "lo_0_0": 900, "hi_0_0": 901},
        {"p": 0, "lo_0_0": 3, "hi_0_0": 9},
        {"p": 1, "lo_0_0": 11, "hi_0_0": 12},
        {"p": 4, "lo_0_0": None, "hi_0_0": None, "lo_1_0": 5, "hi_1_0": 5},  # another key's piece
    ]
    narrow = joins.key_ranges({0: "chg0"}, keys, rows)
    assert [render.sql(e) for e in narrow[0]["c"]] == ["(`cid` BETWEEN 3 AND 12 OR `cid` BETWEEN 900 AND 901)"]
    assert key_pieces([*rows, {"p": 7, "lo_0_0": 1.5, "hi_0_0": 2.5}], "0_0", "int") is None
    # a number's pieces are equal widths of its span; NULLs and a span of one value land in the first
    sql = render.sql(joins.key_stats({0: "chg0"}, keys))
    assert "NULLIF(MAX(CAST(`cust` AS DOUBLE)) OVER () - MIN(CAST(`cust` AS DOUBLE)) OVER (), 0)) * 32)), 0)" in sql
    # text has no width to cut: one piece; each key's columns are NULL in the others' rows
    texts = terms_for(analyze("select o.id from db.o o join db.c c on o.note = c.name", SCHEMA)).join_keys()
    sql = render.sql(joins.key_stats({0: "chg0", 1: "chg1"}, texts))
    assert "SELECT `note` AS `__ivm_v`, 0 AS `__ivm_p`" in sql and "OVER ()" not in sql
    assert "CAST(NULL AS STRING) AS lo_1_0" in sql and "CAST(NULL AS STRING) AS lo_0_0" in sql


def test_sums_kept_as_bigint_or_decimal_check_overflow_and_avg_of_integers_sums_exactly():
    schema = {"db.o": {"id": "int", "g": "int", "m": "decimal(38,0)", "ns": "bigint", "amt": "double"}}
    sql = "select g, sum(m) as sm, sum(ns) as sn, avg(ns) as an, avg(amt) as aa from db.o group by g"
    plan = analyze(sql, schema)
    sums = {a.call.sql(dialect="spark"): a for a in plan.aggregates}
    assert [a.exact for a in sums.values()] == [False, False, True, False]
    assert plan.hidden_names.split(",")[-4:] == ["__ivm_nn_2", "__ivm_ax_2", "__ivm_nn_3", "__ivm_a_3"]
    assert "SUM(CAST(`o`.`ns` AS DECIMAL(38, 0))) AS `__ivm_ax_2`" in render.sql(aggregate.build_select(plan, NEW))
    types = {"__ivm_a_0": "decimal(38,0)", "__ivm_a_1": "bigint", "__ivm_ax_2": "decimal(38,0)", "__ivm_a_3": "double"}
    rules = aggregate.recompute_rules(plan, types)
    assert (rules.checked_sums, rules.decimal_sums, rules.float_sums) == ({0, 1, 2}, {0, 2}, {3})
    delta = render.sql(aggregate.delta_select(plan, OLD, NEW, checked_sums=rules.checked_sums))
    for k in (0, 1, 2):
        assert f"TRY_SUM(IF(`__ivm_d` > 0, `__ivm_x_{k}`, NULL))" in delta
    assert " SUM(IF(`__ivm_d` > 0, `__ivm_x_3`, NULL))" in delta and "TRY_SUBTRACT(" in delta
    assert "`__ivm_o_0`" in delta and "`__ivm_o_3`" not in delta
    stats = render.sql(aggregate.delta_stats(plan, "d", rules, BACKING))
    assert "`__ivm_o_1` > 0" in stats
    assert "(SELECT COUNT(*) FROM `db`.`v__ivm` WHERE (`__ivm_a_0` IS NULL AND `__ivm_nn_0` > 0)" in stats
    lost = render.sql(aggregate.lost_groups(plan, BACKING, "d", rules))
    assert "`t`.`__ivm_ax_2` IS NULL AND `t`.`__ivm_nn_2` > 0" in lost and "`s`.`__ivm_o_1` > 0" in lost
    merge = render.sql(aggregate.merge_statement(plan, BACKING, "d", None, rules))
    assert merge.count("overflowed and its group was not recomputed") == 6  # 3 updates, 3 inserts
    view = render.sql(aggregate.view_select(plan, BACKING, {2: "double", 3: "double"}))
    assert "CAST(`__ivm_ax_2` AS DOUBLE) / CAST(`__ivm_nn_2` AS DOUBLE)" in view


def test_an_avg_whose_argument_type_spark_and_sqlglot_see_differently_is_refused():
    plan = analyze("select g, avg(ns) as an from db.o group by g", {"db.o": {"g": "int", "ns": "bigint"}})
    aggregate.check_exact(plan, {"__ivm_type_0": "bigint"})
    with pytest.raises(UnsupportedView, match=r"AVG\(`o`.`ns`\).*could not be inferred.*CAST"):
        aggregate.check_exact(plan, {"__ivm_type_0": "double"})
