"""Which groups of an aggregate view a refresh recomputes from the sources, and the counts that
decide whether it reads any stored group at all (see `classes.aggregate`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from dbt_ivm.aggregates import extreme, non_finite, overflow, removed_name, rule, stored_overflow, zero_if_null
from dbt_ivm.classes.groups import key_names, match_keys
from dbt_ivm.ir import COUNT_COLUMN, TableName, ViewPlan
from dbt_ivm.render import col, func, ident, lit, temp_table

DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)", re.IGNORECASE)


@dataclass(frozen=True)
class Recompute:
    """Which groups a refresh recomputes, decided from the state's types (see `recompute_rules`)."""

    every_group: bool  # an aggregate without a rule, or a sum Spark would round when adding
    float_sums: frozenset[int]  # SUM/AVG over floating point: recompute where NaN/Inf was removed
    # SUM/AVG kept as BIGINT or DECIMAL: recompute where the change's sum overflowed
    checked_sums: frozenset[int] = frozenset()
    # and those kept as DECIMAL: also where the stored sum overflowed (NULL over non-NULL values)
    decimal_sums: frozenset[int] = frozenset()


def lost_groups(plan: ViewPlan, backing: TableName, delta: str, rules: Recompute) -> exp.Select:
    """The touched groups to recompute from the sources.

    Every one when `rules.every_group`; else those whose stored MIN or MAX is among the values
    the change removed (an equal value removed counts: the copies left are unknown), or is NULL or
    not stored while a value was removed (a join's terms can add and remove the same row),
    those that lost a NaN or infinite value of a floating-point sum, those whose change overflowed
    a BIGINT or DECIMAL sum, and those whose stored DECIMAL sum overflowed (NULL over non-NULL
    values: `stored_overflow`). Groups whose removed values all lie inside the extreme keep it:
    only these groups of the view are read (a join on keys).
    """
    keys = [col(k, "s") for k in key_names(plan)]
    select = exp.select(*keys) if keys else exp.select(lit(1).as_("one"))
    select = select.from_(temp_table(delta).as_("s"))
    if rules.every_group:
        return select
    lost: list[exp.Expr] = []
    for agg in plan.aggregates:
        if (rule_of := extreme(agg)) is not None:
            lost.append(rule_of.lost(agg, "t", "s"))
        if agg.index in rules.float_sums:
            lost.append(exp.GT(this=col(non_finite(agg), "s"), expression=lit(0)))
        if agg.index in rules.checked_sums:
            lost.append(exp.GT(this=col(overflow(agg), "s"), expression=lit(0)))
        if agg.index in rules.decimal_sums:
            lost.append(stored_overflow(agg, "t"))
    stored_rows = backing.to_table()
    stored_rows.set("alias", exp.TableAlias(this=ident("t")))
    joined = select.join(stored_rows, on=match_keys(plan, "s", "t"), join_type="left")
    condition = exp.or_(*lost) if lost else exp.false()
    if plan.group_by:  # a group the change empties is deleted: nothing to recompute
        count = exp.Add(this=zero_if_null(col(COUNT_COLUMN, "t")), expression=col(COUNT_COLUMN, "s"))
        condition = exp.and_(exp.NEQ(this=count, expression=lit(0)), exp.paren(condition))
    return joined.where(condition)


def delta_stats(
    plan: ViewPlan, delta: str, rules: Recompute | None = None, backing: TableName | None = None
) -> exp.Select:
    """Groups touched, how many removed a value that may force a recompute (an extreme's value,
    or a NaN or infinity of a floating-point sum) or overflowed a BIGINT or DECIMAL sum, and how
    many stored groups hold a DECIMAL sum that overflowed (`overflowed`, read from `backing`:
    a filter on NULL, which Delta's file statistics mostly skip)."""
    rules = rules or Recompute(False, frozenset())
    removing: list[exp.Expr] = [
        exp.not_(exp.Is(this=col(removed_name(a)), expression=exp.Null()))
        for a in plan.aggregates
        if rule(a).removes_extreme
    ]
    for a in plan.aggregates:
        if a.index in rules.float_sums:
            removing.append(exp.GT(this=col(non_finite(a)), expression=lit(0)))
        if a.index in rules.checked_sums:
            removing.append(exp.GT(this=col(overflow(a)), expression=lit(0)))
    stats = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(delta))
    if removing:
        stats = stats.select(func("count_if", exp.or_(*removing)).as_("removing"))
    decimals = [stored_overflow(a) for a in plan.aggregates if a.index in rules.decimal_sums]
    if decimals and backing is not None:
        stored = exp.select(exp.Count(this=exp.Star())).from_(backing.to_table()).where(exp.or_(*decimals))
        stats = stats.select(exp.Subquery(this=stored).as_("overflowed"))
    return stats


def recompute_rules(plan: ViewPlan, types: Mapping[str, str]) -> Recompute:
    """From the state's Spark types: sums over floating point, DECIMAL sums of precision 38 and
    scale above 6, which Spark rounds when it adds two of them (the sum's type has no room for
    the carry, and the addition gives up scale): their groups are recomputed, never added to;
    and the sums kept as BIGINT or DECIMAL, whose overflow is checked (`checked_sums`,
    `decimal_sums`)."""
    sums = [a for a in plan.aggregates if rule(a).sums]
    lossy = [a for a in sums if (m := DECIMAL.match(types.get(a.value, ""))) and int(m[1]) >= 38 and int(m[2]) > 6]
    floats = frozenset(a.index for a in sums if types.get(a.value, "").lower() in ("double", "float"))
    decimals = frozenset(a.index for a in sums if DECIMAL.match(types.get(a.value, "")))
    checked = decimals | {a.index for a in sums if types.get(a.value, "").lower() == "bigint"}
    rule_less = any(rule(a).per_group for a in plan.aggregates)
    return Recompute(rule_less or bool(lossy), floats, checked, decimals)
