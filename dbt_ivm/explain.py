"""explain(sql, schema) -> text: what fast_mv makes of a model, like Oracle's EXPLAIN_MVIEW plus the plan."""

from __future__ import annotations

from collections.abc import Sequence

from dbt_ivm.analyze import DIALECT, Schema, analyze
from dbt_ivm.classes import rules_for
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import (
    COUNT_COLUMN,
    InnerGroup,
    JoinKind,
    JoinNode,
    Leaf,
    OuterJoin,
    ViewPlan,
)
from dbt_ivm.policy import COSTS


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
    kind = "FULL OUTER JOIN" if node.kind is JoinKind.FULL else "LEFT OUTER JOIN"
    lines = [f"{pad}{kind} (ON is {'null-intolerant' if node.null_intolerant else 'null-tolerant'})"]
    lines += _tree_lines(plan, node.preserved, depth + 1)
    lines += _tree_lines(plan, node.null_supplied, depth + 1)
    lines.append(f"{pad}  ON {node.on.sql(dialect=DIALECT)}")
    return lines


def refresh_steps(plan: ViewPlan) -> list[str]:
    """For each source table, what a change to it triggers."""
    try:
        return rules_for(plan).explain_steps(plan)
    except UnsupportedView as e:
        return [f"  not maintained by this release: {e}"]


def explain(sql: str, schema: Schema, functions: Sequence[str] = ()) -> str:
    """Raises UnsupportedView for a refused model; `functions`: the model's deterministic_functions."""
    plan = analyze(sql, schema, functions)
    lines = [f"class: {plan.view_class.value}"]
    try:
        rules_for(plan)
    except UnsupportedView as e:
        lines.append(f"status: {e}")
    lines.append("sources:")
    for s in plan.sources:
        cols = ", ".join(f"{n} {t}" for n, t in s.columns) or "(no columns used)"
        lines.append(f"  [{s.index}] {s.alias} = {s.table} ({s.side.value}); reads {cols}")
    lines.append("join tree:")
    if plan.union is not None:
        lines.append(f"  {plan.union.alias} = UNION ALL of:")
    distributed = plan.set_operation.distributed if plan.set_operation is not None else ()
    if len(distributed) == 1:
        alias = distributed[0].alias
        lines.append(f"  the query over the UNION ALL {alias}, distributed: one branch per branch of {alias}")
        if (padded := distributed[0].padded) is not None:
            lines.append(f"  branch {padded}: the rows that match no row of {alias}, its columns NULL")
    elif distributed:
        aliases = ", ".join(d.alias for d in distributed)
        lines.append(
            f"  the query over the UNION ALLs {aliases}, distributed: one branch per combination of a branch of "
            f"each ({distributed[0].alias}'s outermost)"
        )
    branches = plan.set_operation.branches if plan.set_operation is not None else ()
    for branch in branches or (plan.union.branches if plan.union is not None else ()):
        lines.append(f"  branch {branch.index}" + " (SELECT DISTINCT)" * branch.distinct + ":")
        lines += _tree_lines(branch.plan, branch.plan.tree, 2)
    if plan.set_operation is None and plan.union is None:
        lines += _tree_lines(plan, plan.tree)
    if plan.where is not None:
        lines.append(f"where: {plan.where.sql(dialect=DIALECT)}")
    if plan.distinct:
        lines.append(f"distinct: one group per distinct output row, its copies counted in {COUNT_COLUMN}")
    elif plan.group_by:
        lines.append("group by: " + ", ".join(g.sql(dialect=DIALECT) for g in plan.group_by))
    if plan.windows is not None:
        shared = ", ".join(p.sql(dialect=DIALECT) for p in plan.windows.partition_by)
        lines.append(f"partition by: {shared or 'none shared by every window: the whole view is one partition'}")
        group = plan.windows.select.args.get("group")
        if group is not None:
            keys = ", ".join(g.sql(dialect=DIALECT) for g in group.expressions)
            lines.append(f"windows over the groups of GROUP BY {keys}: a recomputed partition is aggregated again")
    if plan.aggregates:
        lines.append("aggregates:")
        lines += [f"  {a.call.sql(dialect=DIALECT)}: {a.function.value}" for a in plan.aggregates]
    if plan.having is not None:
        lines.append(f"having: {plan.having.sql(dialect=DIALECT)}")
    lines.append("columns: " + ", ".join(o.name for o in plan.outputs))
    lines.append("hidden columns:")
    lines += [f"  {h.name}: {h.role.value}" + (f" of {h.of}" if h.of else "") for h in plan.hidden]
    lines.append("refresh steps:")
    lines += refresh_steps(plan)
    lines.append("refresh_policy auto rebuilds when the estimated rebuild is cheaper:")
    lines += COSTS.describe()
    lines.append(f"normalized SQL: {plan.normalized_sql}")
    return "\n".join(lines)
