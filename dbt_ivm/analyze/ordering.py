"""The model's top-level ORDER BY: taken off the query before the analysis, and kept as an order
of the model's own columns (`ir.Ordering`), which the view `ref()` reads is created with.

Spark resolves an ORDER BY key against the SELECT list's names first, then against the columns
of the FROM. So a key is taken as the column of that name, or the column at that position (a
literal, as `spark.sql.orderByOrdinal` reads it), or the column whose expression it repeats (a
qualified `o.id` the model selects). Any other key orders by something the view does not hold:
refused. A set operation's ORDER BY is refused by `setops`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt_ivm.analyze.parsing import DIALECT, refuse, snippet
from dbt_ivm.analyze.written_out import ORDER_FREE
from dbt_ivm.ir import Ordering, OutputColumn

HINT = "order by the model's own columns (by name or position), or sort when reading"


def split_order(query: exp.Expr) -> tuple[exp.Expr, exp.Order | None]:
    """(the query without its top-level ORDER BY, that ORDER BY); a query with a LIMIT, OFFSET
    or FETCH keeps it, for the refusals to name."""
    order = query.args.get("order")
    if not isinstance(query, exp.Select) or order is None or any(query.args.get(a) for a in ORDER_FREE):
        return query, None
    rest = query.copy()
    rest.set("order", None)
    return rest, order


def orderings(order: exp.Order, written: exp.Select, outputs: Sequence[OutputColumn]) -> tuple[Ordering, ...]:
    """Each key of `order` as one of the model's columns; `written`: the SELECT as the model wrote it."""
    return tuple(
        Ordering(_column(key.this, written, outputs, key), bool(key.args.get("desc")), _nulls_first(key))
        for key in order.expressions
    )


def _nulls_first(key: exp.Ordered) -> bool:
    nulls_first = key.args.get("nulls_first")
    return bool(nulls_first) if nulls_first is not None else not key.args.get("desc")


def _column(expr: exp.Expr, written: exp.Select, outputs: Sequence[OutputColumn], key: exp.Expr) -> str:
    names = [o.name for o in outputs]
    if isinstance(expr, exp.Literal) and not expr.is_string and expr.this.isdigit():
        position = int(expr.this)
        if 1 <= position <= len(names):
            return names[position - 1]
    elif isinstance(expr, exp.Column) and not expr.table:
        found = [n for n in names if n.lower() == expr.name.lower()]
        if found:
            return found[0]
    elif not any(e.is_star for e in written.expressions):
        spelled = _spelled(expr)
        for name, selected in zip(names, written.expressions, strict=False):
            if _spelled(selected.unalias()) == spelled:
                return name
    raise refuse(f"ORDER BY {snippet(key)}, which is not one of the model's columns", key, HINT)


def _spelled(expr: exp.Expr) -> str:
    return expr.sql(dialect=DIALECT).lower()
