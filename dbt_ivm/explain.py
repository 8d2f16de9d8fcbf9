"""explain(sql, schema) -> text: what fast_mv makes of a model, like Oracle's EXPLAIN_MVIEW plus the plan."""

from __future__ import annotations

from collections.abc import Sequence

from dbt_ivm import render
from dbt_ivm.analyze import DIALECT, Schema, analyze
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import (
    COUNT_COLUMN,
    Aggregate,
    InnerGroup,
    JoinNode,
    Leaf,
    OuterJoin,
    ViewPlan,
)


def _tree_lines(plan: ViewPlan, node: JoinNode, depth: int = 1) -> list[str]:
    pad = "  " * depth
    if isinstance(node, Leaf):
        s = plan.sources[node.source]
        return [f"{pad}{s.alias} = {s.table} [{s.side.value}]"]
    if isinstance(node, InnerGroup):
        lines = [f"{pad}INNER JOIN group"]
        for child in node.children:
            lines += _tree_lines(plan, child, depth + 1)
        for pred in node.predicates:
            lines.append(f"{pad}  ON {pred.sql(dialect=DIALECT)}")
        return lines
    assert isinstance(node, OuterJoin)
    kind = "FULL OUTER JOIN" if node.kind == "full" else "LEFT OUTER JOIN"
    lines = [f"{pad}{kind} (ON is {'null-intolerant' if node.null_intolerant else 'null-tolerant'})"]
    lines += _tree_lines(plan, node.preserved, depth + 1)
    lines += _tree_lines(plan, node.null_supplied, depth + 1)
    lines.append(f"{pad}  ON {node.on.sql(dialect=DIALECT)}")
    return lines


def _call(agg: Aggregate) -> str:
    if agg.func == "count_star":
        return "count(*)"
    return f"{agg.func}({agg.argument.sql(dialect=DIALECT) if agg.argument is not None else ''})"


def refresh_steps(plan: ViewPlan) -> list[str]:
    """For each source table, what a change to it triggers."""
    lines = []
    maintained = plan.view_class in render.MAINTAINED
    for table in plan.tables:
        occurrences = [s for s in plan.sources if s.table.key == table.key]
        lines.append(f"  change to {table}:")
        if not maintained:
            lines.append(f"    not maintained by this release ({plan.view_class.value}): use materialized='table'")
            continue
        for s in occurrences:
            others = [o.alias for o in plan.sources if o.index != s.index]
            lines.append(
                f"    {s.alias}: net change feed per row identity (inserts +1, deletes -1, update images "
                f"cancel when no used column changed)"
                + (
                    f"; joined with {', '.join(others)} (earlier occurrences at the new version, later at the "
                    f"consumed version)"
                    if others
                    else ""
                )
            )
        lines.append(
            "    apply: one MERGE on the identity tuple (count += delta, delete at 0), "
            "or one INSERT when every changed identity is new; no changes: no write"
        )
    return lines


def explain(sql: str, schema: Schema, functions: Sequence[str] = ()) -> str:
    """Raises UnsupportedView for a refused model; `functions`: the model's deterministic_functions."""
    plan = analyze(sql, schema, functions)
    lines = [f"class: {plan.view_class.value}"]
    if plan.view_class not in render.MAINTAINED:
        try:
            render.ensure_maintainable(plan)
        except UnsupportedView as e:
            lines.append(f"status: {e}")
    lines.append("sources:")
    for s in plan.sources:
        cols = ", ".join(f"{n} {t}" for n, t in s.columns) or "(no columns used)"
        lines.append(f"  [{s.index}] {s.alias} = {s.table} ({s.side.value}); reads {cols}")
    lines.append("join tree:")
    lines += _tree_lines(plan, plan.tree)
    if plan.where is not None:
        lines.append(f"where: {plan.where.sql(dialect=DIALECT)}")
    if plan.distinct:
        lines.append(f"distinct: one row per distinct output row, its copies counted in {COUNT_COLUMN}")
    if plan.group_by:
        lines.append("group by: " + ", ".join(g.sql(dialect=DIALECT) for g in plan.group_by))
    if plan.aggregates:
        lines.append("aggregates: " + ", ".join(f"{a.output} = {_call(a)}" for a in plan.aggregates))
    if plan.having is not None:
        lines.append(f"having: {plan.having.sql(dialect=DIALECT)}")
    lines.append("columns: " + ", ".join(o.name for o in plan.outputs))
    lines.append("hidden columns:")
    lines += [f"  {h.name}: {h.role}" for h in plan.hidden]
    lines.append("refresh steps:")
    lines += refresh_steps(plan)
    lines.append(f"normalized SQL: {plan.normalized_sql}")
    return "\n".join(lines)
