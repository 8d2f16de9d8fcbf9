"""An aggregate view's model columns, read from its stored state (see `classes.aggregate`)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.aggregates import rule
from dbt_ivm.classes.groups import argument_name, key_names, ungrouped
from dbt_ivm.classes.union_leaf import over_leaf
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import HIDDEN_PREFIX, INTEGRAL_TYPES, Aggregate, TableName, ViewPlan
from dbt_ivm.render import col, ident
from dbt_ivm.verbatim import DIALECT


def from_state(expr: exp.Expr, plan: ViewPlan, avg_types: Mapping[int, str]) -> exp.Expr:
    """`expr` (an output or HAVING) over the stored state: group keys and aggregate calls replaced."""
    keys = {
        g.sql(dialect=DIALECT): k
        for g, k in zip(plan.group_by, key_names(plan), strict=True)
        if not isinstance(g, exp.Literal)  # a constant stays itself (`round(x, 2)` keeps its 2)
    }
    calls = {a.call.sql(dialect=DIALECT): a for a in plan.aggregates}

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.DataType):
            return node.copy()
        text = node.sql(dialect=DIALECT)
        if text in keys:
            return col(keys[text])
        if text in calls:
            return rule(calls[text]).final(calls[text], avg_types)
        node = node.copy()
        for name, child in list(node.args.items()):
            if isinstance(child, exp.Expr):
                node.set(name, replace(child))
            elif isinstance(child, list):
                node.set(name, [replace(c) if isinstance(c, exp.Expr) else c for c in child])
        return node

    return replace(expr)


def _argument_type(agg: Aggregate) -> str:
    return f"{HIDDEN_PREFIX}type_{agg.index}"


def average_types(plan: ViewPlan) -> exp.Select | None:
    """A query whose described types are Spark's AVG result types of the view's AVG arguments
    (`__ivm_x_<k>`) and the arguments' own types (`__ivm_type_<k>`)."""
    avgs = [a for a in plan.aggregates if rule(a).averages]
    if not avgs:
        return None
    assert all(a.argument is not None for a in avgs)
    return over_leaf(plan, ungrouped(plan)).select(
        *[exp.Avg(this=a.argument.copy()).as_(ident(argument_name(a))) for a in avgs if a.argument is not None],
        *[exp.Min(this=a.argument.copy()).as_(ident(_argument_type(a))) for a in avgs if a.argument is not None],
        copy=False,
    )


def check_exact(plan: ViewPlan, described: Mapping[str, str]) -> None:
    """An AVG sums exactly (`Aggregate.exact`, from sqlglot's type inference) exactly when Spark
    types its argument as an integer; where they disagree, the model is refused."""
    for agg in (a for a in plan.aggregates if rule(a).averages):
        integral = described[_argument_type(agg)].lower() in INTEGRAL_TYPES
        if integral != agg.exact:
            raise UnsupportedView(
                f"{agg.call.sql(dialect=DIALECT)}: the type of its argument could not be inferred "
                f"(Spark: {described[_argument_type(agg)]})",
                "cast the argument to its type in the model, e.g. AVG(CAST(... AS BIGINT))",
            )


def view_select(plan: ViewPlan, backing: TableName, avg_types: Mapping[int, str]) -> exp.Select:
    """The model's columns from the stored state (each state column has the type of the aggregate
    it holds, and AVG divides as Spark does, so every column has the model's type); HAVING
    filters here, so a group that fails it keeps its state for the next refresh."""
    outputs = [from_state(o.expression, plan, avg_types).as_(ident(o.name)) for o in plan.outputs]
    select = exp.select(*outputs).from_(backing.to_table())
    if plan.having is not None:
        select = select.where(from_state(plan.having, plan, avg_types))
    return select
