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
    tree = merge_subqueries(_inline_shared_ctes(verbatim.as_calls(tree)))
    tree = verbatim.as_anonymous(eliminate_ctes(tree))
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
