"""Normalization: qualify and expand the model with sqlglot's optimizer rules, merge its CTEs and
select-project-join subqueries into one SELECT, and name each output column as Spark does."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.eliminate_ctes import eliminate_ctes
from sqlglot.optimizer.eliminate_subqueries import eliminate_subqueries
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_columns import quote_identifiers
from sqlglot.optimizer.scope import Scope, build_scope, traverse_scope
from sqlglot.schema import ensure_schema

from dbt_ivm import using, verbatim
from dbt_ivm.analyze.nulls import padded_null
from dbt_ivm.analyze.parsing import DIALECT, Schema, nested_schema, refuse, schema_key, snippet, table_name
from dbt_ivm.errors import UnsupportedView

ORIGINAL_NAME = "ivm_original"  # identifier meta: the spelling the model used, before normalization


def normalize(tree: exp.Expr, schema: Schema) -> exp.Expr:
    """Qualify and expand with sqlglot's own optimizer rules; merge CTEs and SPJ subqueries.

    Output column names keep the spelling the model used (Spark does; sqlglot lower-cases).
    """
    tree = tree.copy()
    _lowercase_tables(tree)
    for ident in tree.find_all(exp.Identifier):
        ident.meta[ORIGINAL_NAME] = ident.this
    using.mark(tree)
    sources = ensure_schema(nested_schema(schema), dialect=DIALECT)
    try:
        tree = qualify(
            tree,
            schema=sources,
            dialect=DIALECT,
            quote_identifiers=True,
            validate_qualify_columns=True,
            identify=True,
        )
        using.resolve(tree, sources)
    except OptimizeError as e:
        raise UnsupportedView(f"unresolvable SQL ({e})", "check the column and table names") from e
    _restore_output_names(tree, schema)
    tree = eliminate_subqueries(tree)
    _check_null_supplied_subqueries(tree)
    tree = merge_subqueries(_filters_into_on(_inline_shared_ctes(verbatim.as_calls(tree))))
    tree = _keep_grouping(verbatim.as_anonymous(eliminate_ctes(tree)))
    return quote_identifiers(tree, dialect=DIALECT, identify=True)  # merging renames unquoted


def _inline_shared_ctes(tree: exp.Expr) -> exp.Expr:
    """A CTE read more than once becomes one derived table per read (in place), so that
    merge_subqueries, which merges only CTEs read once, can merge each of them.
    Runs after eliminate_subqueries (which would deduplicate the copies back into one CTE),
    so every derived table is a CTE of the top-level WITH."""
    with_ = tree.args.get("with_") or tree.args.get("with")
    if not isinstance(with_, exp.With):
        return tree
    for cte in list(with_.expressions):
        name = cte.alias_or_name.lower()
        reads = [
            t
            for t in tree.find_all(exp.Table)
            if not t.db and t.name.lower() == name and t.find_ancestor(exp.CTE) is not cte
        ]
        if len(reads) < 2 or not _mergeable(cte.this):
            continue
        for table in reads:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name, quoted=True))
            table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
        cte.pop()
    if not with_.expressions:
        with_.pop()
    return tree


ON_FILTER = "__ivm_on_filter"  # the projection that carries a null-supplied filter to its join's ON


def _filters_into_on(tree: exp.Expr) -> exp.Expr:
    """The WHERE of a one-table subquery or CTE on the null-supplied side of a LEFT JOIN moves into
    the join's ON (in place), so that merge_subqueries, which merges no filtered subquery into an
    outer join, merges it: `a LEFT JOIN (SELECT … FROM b WHERE p) x ON c` is `a LEFT JOIN b ON c AND p`
    (a row of b that fails p joins nothing, as when the subquery drops it), once its projections
    are NULL on padded rows (`_check_null_supplied_subqueries`). The filter goes through a
    projection that the ON reads, so that merging writes it in the ON's names; the projection
    goes with the subquery. Not for RIGHT or FULL joins: a FULL join would pad the dropped rows."""
    moves: list[tuple[exp.Join, exp.Select]] = []
    for scope in traverse_scope(tree):
        for join in scope.expression.args.get("joins") or []:
            source = scope.sources.get(join.alias_or_name)
            left = (join.side or "").upper() == "LEFT" and not join.kind and join.args.get("on") is not None
            select = source.expression if isinstance(source, Scope) else None
            if left and isinstance(select, exp.Select) and _one_filtered_table(select):
                moves.append((join, select))
    for join, select in moves:
        where = select.args["where"].pop()
        select.select(exp.alias_(where.this, ON_FILTER, quoted=True), copy=False)
        carried = exp.column(exp.to_identifier(ON_FILTER, quoted=True), table=join.alias_or_name, quoted=True)
        join.set("on", exp.and_(join.args["on"], carried))
    return tree


def _one_filtered_table(select: exp.Expr) -> bool:
    """A SELECT of columns and expressions from one table, with a WHERE and nothing else."""
    return (
        _mergeable(select)
        and select.args.get("where") is not None
        and isinstance((select.args.get("from_") or exp.From()).this, exp.Table)
        and {k for k, v in select.args.items() if v} <= {"expressions", "from_", "where"}
    )


def _keep_grouping(tree: exp.Expr) -> exp.Expr:
    """Parentheses (in place) around each AND or OR that an operator holds and whose text would
    regroup without them: merge_subqueries puts a projection `a OR b` where the outer query read
    its name (`x.ok AND c`, `NOT x.ok`, `x.ok = TRUE`) and, since sqlglot counts AND and OR as
    functions, without parentheses. A chain of one connective needs none (they associate)."""
    for node in list(tree.find_all(exp.Connector)):
        parent = node.parent
        if isinstance(parent, exp.Paren) or not isinstance(parent, (exp.Unary, exp.Binary, exp.Predicate)):
            continue
        if type(parent) is type(node) or (isinstance(parent, exp.Or) and isinstance(node, exp.And)):
            continue
        paren = exp.Paren()
        node.replace(paren)
        paren.set("this", node)
    return tree


def _lowercase_tables(tree: exp.Expr) -> None:
    """Spark's catalog is case-insensitive: compare table names in lower case."""
    for table in tree.find_all(exp.Table):
        for part in ("this", "db", "catalog"):
            ident = table.args.get(part)
            if isinstance(ident, exp.Identifier):
                ident.set("this", ident.this.lower())


def _restore_output_names(tree: exp.Expr, schema: Schema) -> None:
    """Name each top-level column as Spark would: as written, or as the source table spells it."""
    if not isinstance(tree, exp.Select):
        return
    scope = build_scope(tree)
    if scope is None:
        return
    columns = {schema_key(k): {c.lower(): c for c in cols} for k, cols in schema.items()}
    for projection in tree.expressions:
        if isinstance(projection, exp.Alias):
            name = _spelled_name(projection, scope, columns)
            projection.set("alias", exp.to_identifier(name, quoted=True))


def _original_name(ident: exp.Expr) -> str | None:
    """The spelling the model used for `ident`, recorded by `normalize` before qualifying."""
    original: str | None = ident.meta.get(ORIGINAL_NAME)
    return original


def _spelled_name(projection: exp.Expr, scope: Scope, columns: dict[str, dict[str, str]]) -> str:
    alias = projection.args.get("alias")
    if isinstance(alias, exp.TableAlias):
        alias = alias.this
    if isinstance(alias, exp.Identifier) and (original := _original_name(alias)):
        return original
    expr = projection.this if isinstance(projection, exp.Alias) else projection
    if expr.meta.get(using.MERGED):  # a FULL join's USING column: named after its left key
        return _spelled_name(expr.expressions[0], scope, columns)
    if isinstance(expr, exp.Column) and not isinstance(expr.this, exp.Star):
        if original := _original_name(expr.this):
            return original  # written in the query: Spark keeps that spelling
        source = scope.sources.get(expr.table)  # expanded from a star: the source's spelling
        if isinstance(source, exp.Table):
            return columns.get(table_name(source).key, {}).get(expr.name.lower(), expr.name)
        if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
            for inner in source.expression.expressions:
                if inner.alias_or_name == expr.name:
                    return _spelled_name(inner, source, columns)
    return projection.alias_or_name


def _check_null_supplied_subqueries(tree: exp.Expr) -> None:
    """Merging a derived table into the null-supplied side of an outer join must keep padded rows NULL.

    sqlglot's merge_subqueries would turn `LEFT JOIN (SELECT id, 1 AS flag FROM t) x` into a
    constant 1 on rows with no match, where Spark gives NULL. Refuse such subqueries.
    """
    for scope in traverse_scope(tree):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            continue
        joins = list(select.args.get("joins") or [])
        relations = [from_.this] + [j.this for j in joins]
        sides = [""] + [(j.side or "").upper() for j in joins]
        for i, rel in enumerate(relations):
            padded = sides[i] in ("LEFT", "FULL") or any(s in ("RIGHT", "FULL") for s in sides[i + 1 :])
            source = scope.sources.get(rel.alias_or_name)
            if not padded or not isinstance(source, Scope) or not _mergeable(source.expression):
                continue
            for projection in source.expression.expressions:
                inner = projection.this if isinstance(projection, exp.Alias) else projection
                if not padded_null(inner, source):
                    raise refuse(
                        f"subquery or CTE {rel.alias_or_name} on the null-supplied side of an outer join "
                        f"computes {snippet(projection)}, which is not NULL on rows without a match",
                        rel,
                        "compute the expression in the outer SELECT, or use materialized='table'",
                    )


def _mergeable(select: exp.Expr) -> bool:
    return (
        isinstance(select, exp.Select)
        and not select.args.get("group")
        and not select.args.get("distinct")
        and select.find(exp.AggFunc) is None
    )
