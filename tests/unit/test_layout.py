"""`layout.py`: `cluster_by`, the clustered build and its session settings."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dbt_ivm import analyze, layout, maintain, render
from dbt_ivm.classes import joins, rules_for
from dbt_ivm.errors import ConfigError
from tests.unit.views import JOIN, SCHEMA


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
