"""The view's shape: its output columns, its grouping and aggregates, its class, and the hidden
columns its backing table stores."""

from __future__ import annotations

import dataclasses

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from dbt_ivm.aggregates import rule
from dbt_ivm.aggregates import state as aggregate_state
from dbt_ivm.analyze.functions import aggregate_calls, aggregate_rule, aggregated, is_aggregate
from dbt_ivm.analyze.parsing import DIALECT, Schema, nested_schema, refuse, snippet
from dbt_ivm.ir import (
    COUNT_COLUMN,
    HIDDEN_PREFIX,
    INTEGRAL_TYPES,
    Aggregate,
    HiddenColumn,
    OutputColumn,
    Role,
    Side,
    Source,
    ViewClass,
    group_column,
    is_hidden,
    order_column,
    partition_column,
)


def output_columns(select: exp.Select) -> tuple[OutputColumn, ...]:
    outputs = []
    seen: dict[str, str] = {}
    for e in select.expressions:
        name = e.alias_or_name
        if not name:
            raise refuse(f"unnamed column {snippet(e)}", e, "give it an alias")
        if is_hidden(name):
            raise refuse(
                f"column {name!r} uses the reserved prefix {HIDDEN_PREFIX}",
                e,
                f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
        if name.lower() in seen:
            raise refuse(f"duplicate column name {name!r}", e, "alias one of them")
        seen[name.lower()] = name
        outputs.append(OutputColumn(name, e.this if isinstance(e, exp.Alias) else e))
    return tuple(outputs)


def without_redundant_distinct(select: exp.Select) -> exp.Select:
    """`select` without its DISTINCT where its rows are distinct already, else `select` itself:
    a global aggregate (one row at most) or groups of which every GROUP BY expression is selected
    (one row per group). DISTINCT changes nothing there, and the view is the aggregate it is."""
    distinct = select.args.get("distinct")
    group = select.args.get("group")
    if distinct is None or distinct.args.get("on") or any(e.find(exp.Window) for e in select.expressions):
        return select
    if group is None:
        redundant = aggregated(select)  # a global aggregate: one row at most
    else:
        redundant = not any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")) and all(
            _selected(key, select.expressions) for key in group.expressions
        )
    if not redundant:
        return select
    stripped = select.copy()
    stripped.set("distinct", None)
    return stripped


def _selected(key: exp.Expr, projections: list[exp.Expr]) -> bool:
    """GROUP BY expression `key` is one of `projections`, or an ordinal pointing at one (an alias is
    not trusted: Spark resolves a name that is also a column of the FROM to the column)."""
    if isinstance(key, exp.Literal) and key.is_int:
        return 1 <= int(key.name) <= len(projections)
    return any((p.this if isinstance(p, exp.Alias) else p) == key for p in projections)


def aggregation(
    select: exp.Select, outputs: tuple[OutputColumn, ...]
) -> tuple[tuple[exp.Expr, ...], tuple[Aggregate, ...], exp.Expr | None, bool]:
    """GROUP BY expressions, the aggregates to maintain, HAVING, and whether the SELECT is DISTINCT."""
    group = select.args.get("group")
    group_by = tuple(group.expressions) if group is not None else ()
    having_node = select.args.get("having")
    having = having_node.this if having_node is not None else None
    distinct = select.args.get("distinct") is not None
    if distinct and select.args["distinct"].args.get("on"):
        raise refuse("DISTINCT ON", select.args["distinct"], "use GROUP BY")
    if distinct and group_by:
        raise refuse(  # `without_redundant_distinct` took it away where every group is one distinct row
            "DISTINCT together with GROUP BY over columns it does not select",
            select,
            "select every GROUP BY column (DISTINCT is then redundant), or split it into two fast_mv models "
            "(see Chains)",
        )
    _check_aggregate_places(select)
    calls = [agg for out in outputs for agg in aggregate_calls(out.expression)]
    if having is not None:
        calls += list(aggregate_calls(having))
    if group_by or calls or having is not None:  # HAVING alone makes Spark aggregate globally
        _check_grouped(outputs, having, group_by)
    # An ordinal qualify left in place points at a constant output (GROUP BY 2 of `'web' AS channel`).
    group_by = tuple(
        outputs[int(g.name) - 1].expression
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.name) <= len(outputs)
        else g
        for g in group_by
    )
    if distinct:
        group_by = tuple(o.expression for o in outputs)  # one group per distinct row
    by_key: dict[str, Aggregate] = {}
    for call in calls:
        key = call.sql(dialect=DIALECT)
        if key not in by_key:
            function, argument = aggregate_rule(call)
            by_key[key] = Aggregate(len(by_key), function, call, argument)
    return group_by, _count_extremes(tuple(by_key.values()), group_by), having, distinct


def _count_extremes(aggregates: tuple[Aggregate, ...], group_by: tuple[exp.Expr, ...]) -> tuple[Aggregate, ...]:
    """MIN and MAX count the rows that hold their extreme, unless every touched group is recomputed
    anyway (an aggregate without a rule) or the argument is a constant or a group key (the
    extreme is then the group's one value: nothing to gain)."""
    if any(rule(a).per_group for a in aggregates):
        return aggregates
    keys = {g.sql(dialect=DIALECT) for g in group_by}

    def counts(a: Aggregate) -> bool:
        if not rule(a).removes_extreme or a.argument is None:
            return False
        return any(a.argument.find_all(exp.Column)) and a.argument.sql(dialect=DIALECT) not in keys

    return tuple(dataclasses.replace(a, counted=True) if counts(a) else a for a in aggregates)


def exact_averages(select: exp.Select, aggregates: tuple[Aggregate, ...], schema: Schema) -> tuple[Aggregate, ...]:
    """AVG over an integral argument sums it exactly (`Aggregate.exact`). The argument's type is
    sqlglot's inference over the sources' columns, re-parsed (the normalized tree holds Spark's
    functions as anonymous calls); the build checks it against Spark's (`aggregate.user_view`)."""
    averages = [a for a in aggregates if rule(a).averages and a.argument is not None]
    if not averages:
        return aggregates
    probe = select.copy()
    for arg in ("group", "having", "distinct"):
        probe.set(arg, None)
    probe.set("expressions", [a.argument.copy() for a in averages if a.argument is not None])
    parsed = sqlglot.parse_one(probe.sql(dialect=DIALECT), read="spark")
    typed = annotate_types(parsed, schema=nested_schema(schema), dialect="spark")
    types = [e.type.sql(dialect="spark").lower() if e.type else "" for e in typed.expressions]
    integral = {a.index for a, t in zip(averages, types, strict=True) if t in INTEGRAL_TYPES}
    return tuple(dataclasses.replace(a, exact=True) if a.index in integral else a for a in aggregates)


def _check_aggregate_places(select: exp.Select) -> None:
    """Aggregates belong in the select list and HAVING only."""
    places = [("WHERE", select.args.get("where")), ("GROUP BY", select.args.get("group"))]
    places += [("JOIN ... ON", j) for j in select.args.get("joins") or []]
    for place, node in places:
        agg = next((n for n in node.walk() if is_aggregate(n)), None) if node is not None else None
        if agg is not None:
            raise refuse(f"aggregate {snippet(agg)} in {place}", agg, "aggregates belong in the SELECT list or HAVING")


def _check_grouped(outputs: tuple[OutputColumn, ...], having: exp.Expr | None, group_by: tuple[exp.Expr, ...]) -> None:
    keys = {g.sql(dialect=DIALECT) for g in group_by}
    exprs = [o.expression for o in outputs] + ([having] if having is not None else [])
    for e in exprs:
        col = _ungrouped_column(e, keys)
        if col is not None:
            raise refuse(
                f"column {snippet(col)} that is neither in GROUP BY nor aggregated",
                col,
                "add it to GROUP BY, or aggregate it",
            )


def _ungrouped_column(expr: exp.Expr, keys: set[str]) -> exp.Column | None:
    if is_aggregate(expr) or expr.sql(dialect=DIALECT) in keys:
        return None
    if isinstance(expr, exp.Column):
        return expr
    for child in expr.iter_expressions():
        col = _ungrouped_column(child, keys)
        if col is not None:
            return col
    return None


def classify(sources: tuple[Source, ...], aggregated: bool) -> ViewClass:
    if aggregated:
        return ViewClass.AGGREGATE if len(sources) == 1 else ViewClass.AGGREGATE_JOIN
    if any(s.side is not Side.PRESERVED for s in sources):
        return ViewClass.OUTER_JOIN
    return ViewClass.SINGLE_SOURCE if len(sources) == 1 else ViewClass.INNER_JOIN


def hidden_columns(
    view_class: ViewClass,
    sources: tuple[Source, ...],
    group_by: tuple[exp.Expr, ...],
    aggregates: tuple[Aggregate, ...],
) -> tuple[HiddenColumn, ...]:
    if view_class in (ViewClass.AGGREGATE, ViewClass.AGGREGATE_JOIN):
        keys = [HiddenColumn(group_column(i), Role.GROUP_KEY, g.sql(dialect=DIALECT)) for i, g in enumerate(group_by)]
        count = HiddenColumn(COUNT_COLUMN, Role.GROUP_COUNT)
        return (*keys, count, *(h for agg in aggregates for h in aggregate_state(agg)))
    rids = [HiddenColumn(s.rid, Role.ROW_IDENTITY, f"{s.alias} ({s.table})") for s in sources]
    return (*rids, HiddenColumn(COUNT_COLUMN, Role.MULTIPLICITY))


def window_hidden_columns(
    partition_by: tuple[exp.Expr, ...], first: tuple[exp.Ordered, ...] = ()
) -> tuple[HiddenColumn, ...]:
    """A window view's: each PARTITION BY value its windows share, a keep-the-first's ORDER BY
    values, and each row's multiplicity."""
    keys = [
        HiddenColumn(partition_column(i), Role.PARTITION_KEY, p.sql(dialect=DIALECT))
        for i, p in enumerate(partition_by)
    ]
    orders = [HiddenColumn(order_column(i), Role.ORDER_KEY, o.this.sql(dialect=DIALECT)) for i, o in enumerate(first)]
    return (*keys, *orders, HiddenColumn(COUNT_COLUMN, Role.MULTIPLICITY))
