"""Window views: the SELECT that computes window functions, the query over it, and the partition
every window of it shares (`ir.Windows`).

A window view is a SELECT whose select list calls window functions over a FROM and WHERE the
engine maintains, or a query over one such SELECT (a derived table or CTE) that projects and
filters its rows: the SCD-2 keep-the-latest `SELECT * FROM (SELECT …, ROW_NUMBER() OVER (…) AS
rn FROM t) s WHERE rn = 1`. A refresh recomputes the partitions a change touches whole, from
the sources at the pinned versions, so every window function is exact there; the outer query is
applied where `ref()` reads the stored rows, as HAVING is for aggregates.
"""

from __future__ import annotations

from sqlglot import exp

from dbt_ivm.analyze.functions import (
    ORDER_SENSITIVE_AGGREGATES,
    aggregate_calls,
    aggregated,
    func_key,
)
from dbt_ivm.analyze.parsing import DIALECT, DISTINCT_SPLIT, refuse, snippet
from dbt_ivm.ir import Windows

# Window functions whose value depends on the order of the rows in the partition (or frame):
# over a window without ORDER BY, Spark gives them in no defined order.
ORDER_SENSITIVE = frozenset({"row_number", "ntile", "lag", "lead", "first_value", "last_value", "nth_value"})


def has_window(select: exp.Select) -> bool:
    return any(e.find(exp.Window) is not None for e in select.expressions)


def with_window_subquery(tree: exp.Expr) -> exp.Expr:
    """A query over one CTE that computes windows, written with that CTE as a derived table
    (normalization leaves an unmergeable derived table as a CTE): one form for `split`."""
    if not isinstance(tree, exp.Select) or has_window(tree) or tree.args.get("joins"):
        return tree
    with_ = tree.args.get("with_")
    source = tree.args.get("from_")
    if not isinstance(with_, exp.With) or len(with_.expressions) != 1 or source is None:
        return tree
    cte = with_.expressions[0]
    table = source.this
    if not isinstance(table, exp.Table) or table.db or table.name != cte.alias_or_name:
        return tree
    if not isinstance(cte.this, exp.Select) or not has_window(cte.this):
        return tree
    tree = tree.copy()
    tree.set("with_", None)
    alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name, quoted=True))
    tree.args["from_"].set("this", exp.Subquery(this=cte.this.copy(), alias=alias))
    return tree


def split(select: exp.Select) -> tuple[exp.Select, exp.Select | None]:
    """(the SELECT that computes the windows, the query over it), or (`select`, None) when the
    windows are `select`'s own or it has none."""
    if has_window(select):
        return select, None
    source = select.args.get("from_")
    derived = source.this if source is not None else None
    if isinstance(derived, exp.Subquery) and isinstance(derived.this, exp.Select) and has_window(derived.this):
        return derived.this, select
    return select, None


def windows(select: exp.Select, outer: exp.Select | None) -> Windows:
    """The checked window SELECT, the partition its windows share, and the ORDER BY of a
    keep-the-first."""
    _check_rows(select)
    if outer is not None:
        _check_outer(outer)
    return Windows(select, _common_partition(select), _kept_first(select, outer))


def _kept_first(select: exp.Select, outer: exp.Select | None) -> tuple[exp.Ordered, ...]:
    """The ORDER BY of `select`'s one window, `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) AS
    rn`, where the query over it keeps `rn = 1` and nothing else: each partition's first row; its
    ORDER BY of plain columns (stored as they are: an expression may have a type the storage
    cannot hold, an interval). () otherwise: the partitions are recomputed."""
    where = outer.args.get("where") if outer is not None else None
    if where is None or select.args.get("distinct") or not isinstance(where.this, exp.EQ) or aggregated(select):
        return ()
    found = [(e, w) for e in select.expressions for w in e.find_all(exp.Window)]
    if len(found) != 1:
        return ()
    output, window = found[0]
    if not isinstance(output, exp.Alias) or output.this is not window or func_key(window.this) != "row_number":
        return ()
    sides = [where.this.this, where.this.expression]
    one = [s for s in sides if isinstance(s, exp.Literal) and not s.is_string and str(s.this) == "1"]
    named = [s for s in sides if isinstance(s, exp.Column) and s.name == output.alias]
    order = window.args.get("order")
    if len(one) != 1 or len(named) != 1 or order is None or not window.args.get("partition_by"):
        return ()
    if not all(isinstance(o.this, exp.Column) for o in order.expressions):
        return ()
    return tuple(order.expressions)


def _check_rows(select: exp.Select, at: exp.Expr | None = None) -> None:
    """Windows over the FROM's rows, or over the groups of the SELECT's own aggregate (no DISTINCT
    then); `at`: the node whose position the message gives."""
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        raise refuse("DISTINCT ON", distinct, "use GROUP BY")  # as `shape.aggregation` refuses it
    if distinct is not None and aggregated(select):
        raise refuse(
            "window functions together with DISTINCT and GROUP BY or aggregates",
            at or distinct,
            "GROUP BY only the selected columns and drop DISTINCT, or split it into two fast_mv models (see Chains)",
        )
    if distinct is not None and not _distinct_within_partitions(select):
        raise refuse(
            "window functions together with DISTINCT over rows of several partitions (a PARTITION BY "
            "expression the windows share is not in the SELECT list)",
            at or distinct,
            f"put every PARTITION BY expression in the SELECT list, or {DISTINCT_SPLIT}",
        )


def _check_outer(outer: exp.Select) -> None:
    """The query over the window's rows only projects and filters them."""
    places = [("a join", "joins"), ("GROUP BY", "group"), ("HAVING", "having"), ("DISTINCT", "distinct")]
    for construct, arg in places:
        if outer.args.get(arg):
            raise refuse(
                f"{construct} in the query over window functions' rows",
                outer,
                "only project and filter the rows of a window's derived table (WHERE rn = 1), or use "
                "materialized='table'",
            )
    for e in [*outer.expressions, outer.args.get("where")]:
        call = next(iter(aggregate_calls(e)), None) if e is not None else None
        if call is not None or (e is not None and e.find(exp.Window) is not None):
            raise refuse(
                f"{snippet(call or e)} in the query over window functions' rows",
                outer,
                "compute it inside the derived table, or use materialized='table'",
            )


def _distinct_within_partitions(select: exp.Select) -> bool:
    """SELECT DISTINCT with windows is exact by partition when each PARTITION BY expression the
    windows share is in the SELECT list: two equal rows are then in one partition, which a refresh
    recomputes whole, DISTINCT included, so no stored row stands for rows of two partitions (with
    none shared the view is one partition)."""
    outputs = [e.unalias() for e in select.expressions]
    texts = {e.sql(dialect=DIALECT) for e in outputs}
    return all(p.sql(dialect=DIALECT) in texts or _column_selected(p, outputs) for p in _common_partition(select))


def _column_selected(partition: exp.Expr, outputs: list[exp.Expr]) -> bool:
    """The PARTITION BY column `partition` is selected, written another way: qualified on one side
    only (`key` and `h.key`: the query resolves, so the unqualified name is the one column of that
    name), or in a star (`*`, or `h.*` for `h.key`)."""
    if not isinstance(partition, exp.Column):
        return False
    name, table = partition.name.lower(), partition.table.lower()
    for e in outputs:
        if isinstance(e, exp.Star):
            return True
        if not isinstance(e, exp.Column):
            continue
        if isinstance(e.this, exp.Star):
            if table and e.table.lower() == table:
                return True
        elif e.name.lower() == name and (not table or not e.table or e.table.lower() == table):
            return True
    return False


def _common_partition(select: exp.Select) -> tuple[exp.Expr, ...]:
    """The PARTITION BY expressions every window of `select` has (in the first one's order): a
    partition of them is a union of each window's partitions, so recomputing it whole recomputes
    every window exactly. None shared: the whole view is one partition.

    Over an aggregate's groups, only those that are a GROUP BY expression as written: each group
    lies in one partition, and a partition's groups are computed from the FROM's rows of that
    partition alone (the semi-join of a recompute keeps or drops a group's rows together, with
    the equality GROUP BY groups by: -0.0 and 0.0 are one group, as `<=>` compares them). Not an
    aggregate (no key of a change row), nor another function of the keys (`CAST(x AS STRING)`
    tells -0.0 from the group's 0.0, so a change row's key would select part of a group)."""
    found = [w for e in select.expressions for w in e.find_all(exp.Window)]
    common = list(found[0].args.get("partition_by") or [])
    if aggregated(select):
        group = select.args.get("group")
        keys = {g.sql(dialect=DIALECT) for g in (group.expressions if group is not None else [])}
        common = [p for p in common if p.sql(dialect=DIALECT) in keys]
    for w in found[1:]:
        texts = {p.sql(dialect=DIALECT) for p in w.args.get("partition_by") or []}
        common = [p for p in common if p.sql(dialect=DIALECT) in texts]
    unique: dict[str, exp.Expr] = {}
    for p in common:
        unique.setdefault(p.sql(dialect=DIALECT), p)
    return tuple(unique.values())


def check_window(window: exp.Window) -> None:
    """On the raw tree: a window function in a select list, inline, ordered where its value
    depends on the order of the rows."""
    if isinstance(window.this, exp.Identifier) or window.args.get("alias") is not None:
        raise refuse("a named window (OVER w … WINDOW w AS (…))", window, "write the window inline: OVER (…)")
    select = window.find_ancestor(exp.Select)
    if select is None or not any(window is e or _inside(window, e) for e in select.expressions):
        raise refuse(
            f"window function {snippet(window)} outside the SELECT list",
            window,
            "compute it in the SELECT list of a derived table and filter in the query over it",
        )
    _check_rows(select, window)  # on the model as written, where the positions are
    function = window.this.this if isinstance(window.this, (exp.IgnoreNulls, exp.RespectNulls)) else window.this
    ordered = window.args.get("order") is not None
    if not ordered and func_key(function) in ORDER_SENSITIVE | ORDER_SENSITIVE_AGGREGATES:
        raise refuse(
            f"window function {snippet(window)} without ORDER BY, whose value depends on an order of the rows "
            "that Spark does not define",
            window,
            "give the window an ORDER BY that orders the partition's rows completely (add a unique column)",
        )


def _inside(node: exp.Expr, root: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is root:
            return True
        parent = parent.parent
    return False


def in_window(node: exp.Expr) -> bool:
    """`node` is a window's function (perhaps under IGNORE or RESPECT NULLS): `check_window`
    judges it with its window."""
    parent = node.parent
    if isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls)):
        node, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is node
