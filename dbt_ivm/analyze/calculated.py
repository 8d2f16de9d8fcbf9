"""A calculated SELECT over an aggregate: merged into the aggregate, so that the stored state stays
the aggregate's and the calculation is applied where `ref()` reads the groups.

A query that only projects and filters the rows of one aggregating subquery or CTE,
`SELECT k, a / b AS r FROM (SELECT k, sum(x) AS a, count(*) AS b FROM t GROUP BY k) s WHERE b > 1`,
is that aggregate with the outer expressions written over the inner ones:
`SELECT k, sum(x) / count(*) AS r FROM t GROUP BY k HAVING count(*) > 1`. The outer query keeps one
row per group (it neither groups nor joins), so the GROUP BY (or the one global row) stays; its
WHERE filters groups, as HAVING does, after the inner HAVING (Spark combines the two filters in
that order); an inner column the outer query does not read is dropped (Spark prunes it too, so
it is not evaluated there either). The view then computes each outer expression from the stored
state (`classes.aggregate_view`), on the same values and with the same types as the model's SQL,
so division by zero, NULLs and ANSI errors come out as they do there.

Windows over the groups merge the same way (`SELECT k, rank() OVER (ORDER BY a) FROM (SELECT k,
sum(x) AS a …) s`: `SELECT k, rank() OVER (ORDER BY sum(x)) … GROUP BY k`): SQL computes a
SELECT's windows after its GROUP BY and HAVING, over the groups, as the outer query does over the
subquery's rows after its WHERE. An aggregate or DISTINCT over the grouped rows is refused: split
it in two models.
"""

from __future__ import annotations

from sqlglot import exp

from dbt_ivm.analyze.functions import aggregated, aggregates_outside_windows
from dbt_ivm.analyze.parsing import SPLIT_HINT, refuse, snippet

# What a substituted expression can be without parentheses (an operator's operand could regroup;
# sqlglot counts AND and OR as functions, hence the second test).
_ATOMS = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Null, exp.Boolean)
_OPERATORS = (exp.Binary, exp.Unary, exp.Predicate)


def merge_calculated(tree: exp.Expr) -> exp.Expr:
    """`tree` (normalized: its derived tables are top-level CTEs) with a calculated SELECT over one
    aggregating CTE merged into it; `tree` itself (not modified) when it is no such query."""
    found = _aggregate_read(tree)
    if found is None:
        return _merged_under_windows(tree)
    assert isinstance(tree, exp.Select)
    inner, alias = found
    _check_outer(tree)
    return _merged(tree, inner, alias)


def _merged_under_windows(tree: exp.Expr) -> exp.Expr:
    """A query over windows over an aggregate's groups, `WITH a AS (<aggregate>), b AS (<windows
    over a>) SELECT … FROM b WHERE r <= 3` (the top groups of each partition), with `b` merged into
    `a`; `tree` itself when it is no such query."""
    ctes = _ctes_read(tree, 2)
    if ctes is None:
        return tree
    groups, windows = ctes
    query = tree.copy()
    query.set("with_", None)
    if any(t.name == groups.alias_or_name and not t.db for t in query.find_all(exp.Table)):
        return tree  # the query reads the aggregate itself too
    over = windows.this.copy()
    if not isinstance(over, exp.Select) or not any(e.find(exp.Window) for e in over.expressions):
        return tree
    over.set("with_", exp.With(expressions=[groups.copy()]))
    found = _aggregate_read(over)
    if found is None:
        return tree
    over.set("with_", None)
    _check_outer(over)
    cte = exp.CTE(this=_merged(over, *found), alias=windows.args["alias"].copy())
    query.set("with_", exp.With(expressions=[cte]))
    return query


def _ctes_read(tree: exp.Expr, count: int) -> list[exp.CTE] | None:
    """The `count` CTEs of `tree` when it is a SELECT without joins whose FROM is the last of them."""
    if not isinstance(tree, exp.Select) or tree.args.get("joins"):
        return None
    with_ = tree.args.get("with_")
    source = tree.args.get("from_")
    if not isinstance(with_, exp.With) or len(with_.expressions) != count or source is None:
        return None
    table = source.this
    if not isinstance(table, exp.Table) or table.db or table.name != with_.expressions[-1].alias_or_name:
        return None
    return list(with_.expressions)


def aggregating(select: exp.Expr) -> bool:
    """A SELECT that groups its rows: GROUP BY, HAVING, DISTINCT or an aggregate call (not a window's)."""
    if not isinstance(select, exp.Select):
        return False
    return bool(select.args.get("distinct")) or aggregated(select)


def _aggregate_read(tree: exp.Expr) -> tuple[exp.Select, str] | None:
    """(the aggregating SELECT, the name the query reads it by) when `tree` reads one CTE, and
    nothing else, that groups without windows."""
    ctes = _ctes_read(tree, 1)
    if ctes is None:
        return None
    cte = ctes[0]
    table = tree.args["from_"].this
    inner = cte.this
    if not aggregating(inner) or any(e.find(exp.Window) for e in inner.expressions):
        return None
    return inner, table.alias_or_name


def _check_outer(outer: exp.Select) -> None:
    """The query over the groups only projects and filters them, or computes windows over them
    (`analyze.windows`: the merged SELECT's windows are over its groups, after HAVING)."""
    for arg in ("group", "having", "distinct"):
        if outer.args.get(arg):
            raise refuse(
                f"an aggregate over an aggregate (a {arg.upper().replace('GROUP', 'GROUP BY')} over a grouped "
                "subquery or CTE)",
                outer.args[arg],
                SPLIT_HINT,
            )
    for e in outer.expressions:
        call = next(iter(aggregates_outside_windows(e)), None)  # SUM(n) OVER (…): a window over the groups
        if call is not None:
            raise refuse(
                f"an aggregate over an aggregate ({snippet(call)} over a grouped subquery or CTE)", call, SPLIT_HINT
            )


def _merged(outer: exp.Select, inner: exp.Select, alias: str) -> exp.Select:
    """The aggregate `inner` with `outer`'s select list and its WHERE as (more) HAVING."""
    distinct = inner.args.get("distinct")
    if distinct is not None and (inner.args.get("group") is not None or inner.args.get("having") is not None):
        raise refuse(  # DISTINCT's groups would replace the GROUP BY's, and HAVING would filter them
            "DISTINCT together with GROUP BY or HAVING in a subquery or CTE under a query over its rows",
            distinct,
            "drop DISTINCT and GROUP BY the selected columns, or split it into two fast_mv models (see Chains)",
        )
    columns = {_name(p): p.this if isinstance(p, exp.Alias) else p for p in inner.expressions}

    def substitute(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == alias and node.name.lower() in columns:
            value = columns[node.name.lower()].copy()
            return value if isinstance(value, _ATOMS) and not isinstance(value, _OPERATORS) else exp.Paren(this=value)
        return node

    merged = inner.copy()
    if merged.args.get("distinct"):  # one group per distinct row, whatever the outer query computes
        merged.set("distinct", None)
        merged.set("group", exp.Group(expressions=[columns[_name(p)].copy() for p in inner.expressions]))
    group = merged.args.get("group")
    if group is not None:  # an ordinal points at an inner column, which the outer list replaces
        group.set("expressions", [_resolved(g, inner) for g in group.expressions])
    merged.set("expressions", [_named(p).transform(substitute) for p in outer.expressions])
    where = outer.args.get("where")
    if where is not None:
        having = merged.args.get("having")
        condition = exp.Paren(this=where.this.transform(substitute))
        merged.set("having", exp.Having(this=exp.and_(having.this, condition) if having else condition))
    return merged


def _name(projection: exp.Expr) -> str:
    return projection.alias_or_name.lower()


def _named(projection: exp.Expr) -> exp.Expr:
    """`projection` with the name it has in the outer query's result."""
    if isinstance(projection, exp.Alias):
        return projection.copy()
    return exp.alias_(projection.copy(), exp.to_identifier(projection.alias_or_name, quoted=True))


def _resolved(key: exp.Expr, inner: exp.Select) -> exp.Expr:
    if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(inner.expressions):
        projection = inner.expressions[int(key.name) - 1]
        key = (projection.this if isinstance(projection, exp.Alias) else projection).copy()
    if isinstance(key, exp.Literal) and key.is_int:  # Spark would read it as an ordinal of the outer list
        raise refuse(
            f"GROUP BY the integer constant {snippet(key)} under a query over the groups",
            key,
            "leave the constant out of GROUP BY",
        )
    return key
