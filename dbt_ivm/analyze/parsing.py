"""Parsing a model: one SELECT, the source tables it names, and how the analysis names things.

Also the helpers every step shares: the dialect, the schema's shape, and `refuse`, which names
the construct a model cannot use and where it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from dbt_ivm import verbatim
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import TableName

DIALECT = verbatim.DIALECT  # Spark, with every function call kept as written
Schema = Mapping[str, Mapping[str, str]]
# What to do with an aggregate over an aggregate, or a window over one.
SPLIT_HINT = (
    "split it into two fast_mv models: the GROUP BY in one, and the query over its groups in a second model "
    "that reads the first with ref() (a fast_mv can read another fast_mv: README, Chains), "
    "or use materialized='table'"
)
DISTINCT_SPLIT = (
    "split it into two fast_mv models: the windows in one, and the SELECT DISTINCT over its rows in a second "
    "model that reads the first with ref() (a fast_mv can read another fast_mv: README, Chains), "
    "or use materialized='table'"
)


def position(node: exp.Expr) -> str | None:
    """Line and column of the first token of `node` that the parser located."""
    for sub in node.walk():
        meta = sub.meta if isinstance(sub, exp.Expression) else {}
        if meta.get("line") is not None:
            return f"line {meta['line']}, column {meta.get('col', '?')}"
    return None


def snippet(node: exp.Expr, limit: int = 80) -> str:
    text = node.sql(dialect=DIALECT)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def refuse(construct: str, node: exp.Expr | None = None, hint: str = "") -> UnsupportedView:
    return UnsupportedView(construct, hint, position(node) if node is not None else None)


def parse(sql: str) -> exp.Query:
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None and not isinstance(s, exp.Semicolon)]
    except ParseError as e:
        raise UnsupportedView(f"SQL that does not parse ({str(e).splitlines()[0]})", "check the model's SQL") from e
    if not statements:
        raise UnsupportedView("an empty model (no SQL statement)", "a model is one SELECT")
    if len(statements) != 1:
        raise UnsupportedView(f"{len(statements)} statements", "a model is one SELECT")
    stmt = statements[0]
    while isinstance(stmt, exp.Subquery) and isinstance(stmt.this, exp.Query) and not stmt.alias:
        _bare(stmt)
        stmt = stmt.this  # (SELECT ...): the parentheses mean nothing at the top
    if not isinstance(stmt, exp.Query):
        kind = stmt.name.upper() if isinstance(stmt, exp.Command) else stmt.key.upper()
        raise UnsupportedView(f"a non-SELECT statement ({kind})", "a model is one SELECT")
    return stmt


def _bare(subquery: exp.Subquery) -> None:
    """Parentheses around the model and nothing else: no ORDER BY or LIMIT after them."""
    for arg, value in subquery.args.items():
        if arg != "this" and not (value is None or value is False or value == []):
            clause = arg.upper() + " BY" * (arg in ("order", "sort", "cluster", "distribute"))
            raise refuse(f"{clause} after a parenthesized query", subquery, "drop it: a view has no row order or limit")


def cte_names(tree: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def table_name(table: exp.Table) -> TableName:
    return TableName(db=table.db or None, name=table.name, catalog=table.catalog or None)


def source_references(tree: exp.Expr) -> list[exp.Table]:
    """Every place the model names a source table, in the order of the SQL text: CTE names,
    table-valued functions and the aliases hints name (/*+ BROADCAST(c) */) excluded."""
    ctes = cte_names(tree)
    refs = []
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        if not isinstance(table.this, exp.Identifier) or table.find_ancestor(exp.Hint) is not None:
            continue
        refs.append(table)
    return sorted(refs, key=lambda t: t.this.meta.get("start", 0))


def source_tables(model: str | exp.Expr) -> list[TableName]:
    """The tables the model (its SQL, or the tree `parse` made of it) reads, in order of first
    appearance; CTE names excluded."""
    seen: dict[str, TableName] = {}
    for table in source_references(parse(model) if isinstance(model, str) else model):
        name = table_name(table)
        seen.setdefault(name.key, name)
    return list(seen.values())


def schema_key(key: str) -> str:
    return key.lower().replace("`", "")


def nested_schema(schema: Schema) -> dict[str, Any]:
    """{'db.t': cols} -> {'db': {'t': cols}} as sqlglot's MappingSchema wants it; a table with no
    columns left out (sqlglot refuses it; a model that reads it is refused by name)."""
    depths = {len(k.split(".")) for k in schema}
    if len(depths) > 1:
        raise UnsupportedView("sources named with and without a database", "qualify every source as db.table")
    nested: dict[str, Any] = {}
    for key, cols in schema.items():
        if not cols:
            continue
        parts = [p.strip("`").lower() for p in key.split(".")]
        node = nested
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = {c.lower(): t for c, t in cols.items()}
    return nested
