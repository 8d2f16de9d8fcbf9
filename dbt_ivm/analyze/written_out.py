"""What Spark reads the same way, written out before the analysis sees it: `GROUP BY ALL` as the
grouping it stands for, and an `ORDER BY` inside a subquery or CTE, which orders nothing, dropped.

Spark's `GROUP BY ALL` groups by every SELECT expression that holds no aggregate call (Spark's
`ResolveGroupByAll`); with none, the query is a global aggregate. A subquery's ORDER BY without
a LIMIT does not change which rows it gives: Spark's optimizer removes it (`EliminateSorts`).
The top-level ORDER BY stays, for `refusals` to name. The model's own SQL is untouched: the
consistency test still runs it as written, so a difference would show there.
"""

from __future__ import annotations

from sqlglot import exp

from dbt_ivm.analyze.functions import is_aggregate

ORDER_FREE = ("limit", "offset", "fetch")  # with one of these, ORDER BY chooses rows: kept (and refused)


def written_out(tree: exp.Expr) -> exp.Expr:
    """A copy of `tree` with GROUP BY ALL written out and subqueries' ORDER BY dropped; `tree`
    itself when there is neither."""
    if not any(_group_by_all(g) for g in tree.find_all(exp.Group)) and not any(
        _ordering_nothing(o, tree) for o in tree.find_all(exp.Order)
    ):
        return tree
    copy = tree.copy()
    for order in [o for o in copy.find_all(exp.Order) if _ordering_nothing(o, copy)]:
        order.pop()
    for group in [g for g in copy.find_all(exp.Group) if _group_by_all(g)]:
        _write_out(group)
    return copy


def _group_by_all(group: exp.Group) -> bool:
    """`GROUP BY ALL` with no grouping listed, over a SELECT list without a star, whose grouping
    reads a column or is empty (grouped by constants alone, an empty input gives no row, unlike
    a global aggregate's one: left for `refusals` to name)."""
    select = group.parent
    if not (group.args.get("all") and not group.expressions and isinstance(select, exp.Select)):
        return False
    keys = _keys(select)
    return not any(e.is_star for e in select.expressions) and (not keys or any(_reads_columns(k) for k in keys))


def _keys(select: exp.Select) -> list[exp.Expr]:
    """What Spark groups by under GROUP BY ALL: the SELECT expressions without an aggregate call."""
    return [e.unalias() for e in select.expressions if not any(is_aggregate(n) for n in e.walk())]


def _reads_columns(expr: exp.Expr) -> bool:
    return expr.find(exp.Column) is not None


def _write_out(group: exp.Group) -> None:
    """Constants leave the grouping as they are (a literal there would read as a position)."""
    assert isinstance(group.parent, exp.Select)
    keys = [k.copy() for k in _keys(group.parent) if _reads_columns(k)]
    if keys:
        group.replace(exp.Group(expressions=keys))
    else:
        group.pop()  # every expression aggregates: a global aggregate


def _ordering_nothing(order: exp.Order, root: exp.Expr) -> bool:
    """A subquery's or CTE's ORDER BY without LIMIT, OFFSET or FETCH."""
    select = order.parent
    return isinstance(select, exp.Select) and select is not root and not any(select.args.get(a) for a in ORDER_FREE)
