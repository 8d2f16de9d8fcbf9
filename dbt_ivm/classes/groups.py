"""The groups of an aggregate view: its GROUP BY keys, its rows before grouping, and the pass
that also groups by each counted MIN or MAX argument to count the rows at the extreme."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt_ivm.aggregates import extreme, if_, rule, zero_if_null
from dbt_ivm.ir import COUNT_COLUMN, HIDDEN_PREFIX, Aggregate, ViewPlan, group_column
from dbt_ivm.render import col, func, ident, lit
from dbt_ivm.verbatim import DIALECT


def argument_name(agg: Aggregate) -> str:
    return f"{HIDDEN_PREFIX}x_{agg.index}"


def counted_arguments(plan: ViewPlan) -> list[exp.Expr]:
    """The distinct arguments of the MIN and MAX that count the rows at their extreme."""
    seen: dict[str, exp.Expr] = {}
    for a in plan.aggregates:
        if a.counted and a.argument is not None:
            seen.setdefault(a.argument.sql(dialect=DIALECT), a.argument)
    return list(seen.values())


def slot(plan: ViewPlan, agg: Aggregate) -> int:
    """The position of `agg`'s argument among `counted_arguments`."""
    assert agg.argument is not None
    texts = [a.sql(dialect=DIALECT) for a in counted_arguments(plan)]
    return texts.index(agg.argument.sql(dialect=DIALECT))


def value_name(j: int) -> str:
    return f"{HIDDEN_PREFIX}v_{j}"


def in_set(j: int) -> exp.Expr:
    """A row of the pass by values (`grouped_by_values`) grouped by counted argument `j`."""
    return exp.EQ(this=col(f"{HIDDEN_PREFIX}s_{j}"), expression=lit(0))


def grouped_by_values(query: exp.Select, keys: Sequence[exp.Expr], values: Sequence[exp.Expr]) -> exp.Select:
    """`query` (aggregates grouped by `keys`) grouped in the same pass also by `keys` and each of
    `values`: GROUPING SETS ((keys), (keys, value 0), …). A row grouped by value `j` has
    `__ivm_s_<j>` = 0 and the value as `__ivm_v_<j>`; the rows of the first set have every
    `__ivm_s_<j>` = 1 and are the groups' aggregates as `query` gives them."""
    query = query.select(
        *[v.copy().as_(ident(value_name(j))) for j, v in enumerate(values)],
        *[func("grouping", v.copy()).as_(ident(f"{HIDDEN_PREFIX}s_{j}")) for j, v in enumerate(values)],
        copy=False,
    )
    sets = [exp.Tuple(expressions=[k.copy() for k in keys])]
    sets += [exp.Tuple(expressions=[*(k.copy() for k in keys), v.copy()]) for v in values]
    query.set("group", exp.Group(expressions=[exp.GroupingSets(expressions=sets)]))
    return query


def of_groups(plan: ViewPlan, by_values: exp.Select, carried: list[str], counts: set[str]) -> exp.Select:
    """The groups' rows of a pass by values (`grouped_by_values`): the columns `carried` from the rows of
    the groups' own set (`counts` 0 where there is none: the one global row over no rows)."""
    own = exp.and_(*[exp.not_(in_set(j)) for j in range(len(counted_arguments(plan)))])
    columns: list[exp.Expr] = []
    for name in carried:
        value: exp.Expr = exp.Max(this=if_(own.copy(), col(name), exp.Null()))
        columns.append((zero_if_null(value) if name in counts else value).as_(ident(name)))
    keys = [col(k) for k in key_names(plan)]
    select = exp.select(*keys, *columns).from_(by_values.subquery(ident(f"{HIDDEN_PREFIX}l")))
    return select.group_by(*[k.copy() for k in keys]) if keys else select


def count_columns(plan: ViewPlan) -> set[str]:
    """The state columns that are counts: 0, not NULL, for a group with no row (see `of_groups`)."""
    return {COUNT_COLUMN, *(a.non_null for a in plan.aggregates if rule(a).counts_non_null)}


def at_extreme(agg: Aggregate, j: int, measure: exp.Expr, where: exp.Expr | None = None) -> tuple[exp.Expr, exp.Expr]:
    """Over the rows grouped by counted argument `j`: the extreme of its values (where `where`),
    and `measure` of the row that holds it."""
    ordering = if_(exp.and_(in_set(j), where) if where is not None else in_set(j), col(value_name(j)), exp.Null())
    e = extreme(agg)
    assert e is not None
    return e.pick(this=ordering), e.pick_by(this=measure, expression=ordering.copy())


def key_names(plan: ViewPlan) -> list[str]:
    return [group_column(i) for i in range(len(plan.group_by))]


def ungrouped(plan: ViewPlan) -> exp.Select:
    """The model's FROM, joins and WHERE, without its projections, grouping, HAVING or DISTINCT."""
    query = plan.query.copy()
    for arg in ("group", "having", "distinct"):
        query.set(arg, None)
    query.set("expressions", [])
    return query


def grouping(key: exp.Expr) -> exp.Expr:
    """A GROUP BY expression as written in a statement: an integer literal would be read as an
    ordinal, so a numeric constant is cast (it groups the same, and is never shown: see `from_state`)."""
    if isinstance(key, exp.Literal) and not key.is_string:
        return exp.Cast(this=key.copy(), to=exp.DataType.build("decimal(38,0)" if "." not in key.name else "double"))
    return key.copy()


def grouped(plan: ViewPlan, projections: list[exp.Expr]) -> exp.Select:
    query = ungrouped(plan)
    keys = [grouping(g).as_(ident(k)) for g, k in zip(plan.group_by, key_names(plan), strict=True)]
    query = query.select(*keys, *projections, copy=False)
    if plan.group_by:
        query.set("group", exp.Group(expressions=[grouping(g) for g in plan.group_by]))
    return query


def match_keys(plan: ViewPlan, left: str, right: str) -> exp.Expr:
    """Group keys equal, NULL-safe (a NULL key is a group); TRUE for the one global row."""
    if not plan.group_by:
        return exp.true()
    return exp.and_(*[exp.NullSafeEQ(this=col(k, left), expression=col(k, right)) for k in key_names(plan)])
