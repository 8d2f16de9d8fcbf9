"""`dbt run --empty`: dbt renders every ref and source as a subquery of no rows.

dbt-core (`BaseRelation.render_limited`, limit 0) writes `(select * from <relation> where false
limit 0)` in place of each relation, with no alias on Spark (dbt-spark's `require_alias` is off).
fast_mv refuses a LIMIT, so `unlimited` puts the relations back: the model is then validated as
a build would validate it, and `Maintainer.materialize_empty` decides what the run writes.
"""

from __future__ import annotations

from sqlglot import exp

from dbt_ivm import verbatim
from dbt_ivm.analyze import parse


def limited_relation(node: exp.Expr) -> exp.Table | None:
    """The relation of one of dbt's `(select * from <relation> where false limit 0)`, else None."""
    if not isinstance(node, exp.Subquery) or not isinstance(node.this, exp.Select):
        return None
    select = node.this
    source = select.args.get("from_")
    limit = select.args.get("limit")
    where = select.args.get("where")
    bare = {k for k, v in select.args.items() if v} <= {"expressions", "from_", "where", "limit"}
    if not (
        bare
        and source is not None
        and isinstance(source.this, exp.Table)
        and len(select.expressions) == 1
        and isinstance(select.expressions[0], exp.Star)
        and where is not None
        and isinstance(where.this, exp.Boolean)
        and not where.this.this
        and limit is not None
        and limit.expression.name == "0"
    ):
        return None
    return source.this


def unlimited(sql: str) -> str:
    """The model's SQL with each of dbt's no-rows subqueries replaced by its relation (under the
    subquery's alias, when the model gave one)."""

    def restore(node: exp.Expr) -> exp.Expr:
        table = limited_relation(node)
        if table is None:
            return node
        restored = table.copy()
        if node.args.get("alias"):
            restored.set("alias", node.args["alias"].copy())
        return restored

    return verbatim.to_sql(parse(sql).transform(restore))
