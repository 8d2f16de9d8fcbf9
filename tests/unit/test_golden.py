"""Golden SQL of the refresh builders: each case's SQL, pretty-printed, against tests/unit/golden/<case>.sql.

Regenerate the golden files after an intended change with:
    .venv/bin/python scripts/update_golden.py
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from sqlglot import exp

from dbt_ivm import analyze, consistency, verbatim
from dbt_ivm.analyze.union_join import check_types
from dbt_ivm.classes import aggregate, joins, semijoins, setops, windows
from tests.unit.views import (
    AGG,
    BACKING,
    FULL,
    GLOBAL,
    JOIN,
    LATEST,
    LEFT,
    NESTED,
    NESTED_SETOPS,
    NEW,
    NOT_IN,
    OLD,
    OUTER_SCHEMA,
    RANKED,
    SCHEMA,
    SELF,
    SEMI,
    SETOPS,
    SIGNED,
    UNION_AGG,
    UNION_JOIN,
    UNION_JOIN_WINDOW,
    UNION_NULL_SIDE,
    UNION_SELECT,
    WINDOW_SCHEMA,
)

GOLDEN = Path(__file__).parent / "golden"


def golden_sql(name: str) -> str:
    """The SQL of golden case `name`, as the engine writes it now (pretty-printed)."""
    built = CASES[name]()
    return built if isinstance(built, str) else verbatim.to_sql(built, pretty=True)


def _first_changes() -> exp.Select:
    """A keep-the-first's change rows, as stored rows would hold them, with their net count."""
    changes = windows.first_changes(analyze(LATEST, WINDOW_SCHEMA), {"db.h": 3}, {"db.h": 4}, {0: "__ivm_chg_0"})
    assert changes is not None
    return changes


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
    "build_window": lambda: windows.build_select(analyze(LATEST, WINDOW_SCHEMA), {"db.h": 4}),
    "touched_window_join": lambda: windows.touched_select(
        analyze(RANKED, WINDOW_SCHEMA), OLD, NEW, {0: "__ivm_chg_0", 1: "__ivm_chg_1"}
    ),
    "delta_window": lambda: windows.delta_select(analyze(RANKED, WINDOW_SCHEMA), BACKING, NEW, "__ivm_parts_x"),
    "merge_window": lambda: windows.merge_statement(analyze(LATEST, WINDOW_SCHEMA), BACKING, "__ivm_delta_x"),
    "parts_first": lambda: windows.first_parts(analyze(LATEST, WINDOW_SCHEMA), _first_changes(), BACKING),
    "delta_first": lambda: windows.first_delta(
        analyze(LATEST, WINDOW_SCHEMA), BACKING, {"db.h": 4}, "__ivm_parts_x", _first_changes(), True
    ),
    "view_window_filtered": lambda: windows.view_select(analyze(LATEST, WINDOW_SCHEMA), BACKING),
    "build_setops": lambda: setops.build_select(analyze(SETOPS, OUTER_SCHEMA), {**NEW, "db.r": 6}),
    "delta_setops": lambda: setops.delta_select(
        analyze(SETOPS, OUTER_SCHEMA),
        {**OLD, "db.r": 2},
        {**NEW, "db.r": 2},
        {0: "__ivm_chg_0", 1: "__ivm_chg_1", 3: "__ivm_chg_3"},
        {"id": "int", "name": "string"},
    ),
    "merge_setops": lambda: setops.merge_statement(analyze(SETOPS, OUTER_SCHEMA), BACKING, "__ivm_delta_x"),
    "build_setops_signed": lambda: setops.build_select(analyze(SIGNED, SCHEMA), NEW, {"id": "int", "amt": "double"}),
    "merge_setops_signed": lambda: setops.merge_statement(
        analyze(SIGNED, SCHEMA), BACKING, "__ivm_delta_x", {"id": "int", "amt": "double"}
    ),
    "view_setops_nested": lambda: setops.view_select(analyze(NESTED_SETOPS, OUTER_SCHEMA), BACKING, {"cust": "bigint"}),
    "recompute": lambda: consistency.consistency_sql(BACKING, consistency.pin_versions(JOIN, {"db.o": 3, "db.c": 5})),
    "recompute_float_columns": lambda: consistency.consistency_sql(
        BACKING, consistency.pin_versions(GLOBAL, {"db.o": 3}), {"n": "bigint", "low": "double"}
    ),
}
SEMI_OLD, SEMI_NEW = {**OLD, "db.r": 2}, {**NEW, "db.r": 6}
CASES |= {
    "build_semi_join": lambda: semijoins.build_select(analyze(SEMI, OUTER_SCHEMA), SEMI_NEW),
    "touched_semi_join": lambda: semijoins.touched_select(
        analyze(SEMI, OUTER_SCHEMA), SEMI_OLD, SEMI_NEW, {0: "__ivm_chg_0", 1: "__ivm_chg_1", 2: "__ivm_chg_2"}
    ),
    "touched_not_in": lambda: semijoins.touched_select(analyze(NOT_IN, SCHEMA), OLD, NEW, {1: "__ivm_chg_1"}),
    "delta_semi_join": lambda: semijoins.delta_select(analyze(SEMI, OUTER_SCHEMA), BACKING, SEMI_NEW, "__ivm_keys_x"),
    "merge_semi_join": lambda: semijoins.merge_statement(analyze(SEMI, OUTER_SCHEMA), BACKING, "__ivm_delta_x"),
    "view_semi_join": lambda: semijoins.view_select(analyze(NOT_IN, SCHEMA), BACKING),
    "build_union_aggregate": lambda: aggregate.build_select(analyze(UNION_AGG, OUTER_SCHEMA), NEW),
    "delta_union_aggregate": lambda: aggregate.delta_select(
        analyze(UNION_AGG, OUTER_SCHEMA), OLD, NEW, {0: "__ivm_chg_0", 1: "__ivm_chg_1", 2: "__ivm_chg_2"}
    ),
    "recompute_union_aggregate": lambda: aggregate.recompute_select(
        analyze(UNION_AGG, OUTER_SCHEMA), NEW, "__ivm_lost_x"
    ),
}


def _type_check(sql: str) -> exp.Select:
    """The DESCRIBE QUERY by which a build compares the union's types with its distributed branches'."""
    seen: list[exp.Select] = []
    check_types(analyze(sql, OUTER_SCHEMA), lambda q: seen.append(q) or defaultdict(lambda: "int"))
    return seen[0]


CASES |= {
    "build_union_join": lambda: setops.build_select(analyze(UNION_JOIN, OUTER_SCHEMA), {**NEW, "db.r": 6}),
    "delta_union_join": lambda: setops.delta_select(
        analyze(UNION_JOIN, OUTER_SCHEMA),
        {**OLD, "db.r": 2},
        {**NEW, "db.r": 6},
        {0: "__ivm_chg_0", 1: "__ivm_chg_1", 2: "__ivm_chg_2", 3: "__ivm_chg_3"},
        {"cust": "int", "amt": "double", "name": "string"},
    ),
    "types_union_join": lambda: _type_check(UNION_JOIN),
    "delta_union_select": lambda: setops.delta_select(
        analyze(UNION_SELECT, OUTER_SCHEMA),
        OLD,
        NEW,
        {0: "__ivm_chg_0", 1: "__ivm_chg_1"},
        {"cust": "int", "a2": "double"},
    ),
    "build_union_join_window": lambda: windows.build_select(
        analyze(UNION_JOIN_WINDOW, OUTER_SCHEMA), {**NEW, "db.r": 6}
    ),
    "touched_union_join_window": lambda: windows.touched_select(
        analyze(UNION_JOIN_WINDOW, OUTER_SCHEMA),
        {**OLD, "db.r": 2},
        {**NEW, "db.r": 6},
        {i: f"__ivm_chg_{i}" for i in range(4)},
    ),
    "types_union_join_window": lambda: _type_check(UNION_JOIN_WINDOW),
    "delta_union_null_side": lambda: setops.delta_select(
        analyze(UNION_NULL_SIDE, OUTER_SCHEMA),
        {**OLD, "db.r": 2},
        {**NEW, "db.r": 6},
        {i: f"__ivm_chg_{i}" for i in range(7)},
        {"name": "string", "amt": "double"},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_sql(name):
    path = GOLDEN / f"{name}.sql"
    sql = golden_sql(name)
    assert sql == path.read_text().strip(), f"golden {path.name} differs (scripts/update_golden.py):\n{sql}"
