"""`classes/aggregate.py`: aggregate views' sums, averages and their overflow checks."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dbt_ivm import analyze, render
from dbt_ivm.classes import aggregate
from dbt_ivm.classes.rules import Refresh
from dbt_ivm.errors import UnsupportedView
from tests.unit.views import BACKING, NEW, OLD


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


def test_the_stored_state_types_come_from_the_storage_s_columns_else_are_described():
    """The storage's columns, described at inspect, give the state's types; without them, or
    without one of the state's columns, the refresh describes `state_types` (one more statement)."""
    plan = analyze(
        "select g, sum(m) as sm, max(amt) as hi from db.o group by g",
        {"db.o": {"g": "int", "m": "int", "amt": "double"}},
    )
    stored = {"__ivm_g_0": "int", "__ivm_count": "bigint", "__ivm_nn_0": "bigint", "__ivm_a_0": "bigint"}
    stored |= {"__ivm_a_1": "double", "__ivm_m_1": "bigint"}
    described: list[str] = []

    def refresh(storage_types: dict[str, str] | None) -> Refresh:
        def describe(query: exp.Select) -> dict[str, str]:
            described.append(render.sql(query))
            return {"__ivm_a_0": "decimal(20,0)"}

        return Refresh(
            plan, BACKING, OLD, NEW, {}, lambda role: role, lambda _: None, lambda _: [], describe,
            storage_types=storage_types,
        )  # fmt: skip

    assert aggregate.stored_state_types(refresh(stored)) == stored and not described
    without_sum = {k: v for k, v in stored.items() if k != "__ivm_a_0"}
    for storage_types in (None, without_sum):
        assert aggregate.stored_state_types(refresh(storage_types)) == {"__ivm_a_0": "decimal(20,0)"}
    assert len(described) == 2 and all("SUM(`o`.`m`) AS `__ivm_a_0`" in d for d in described)
