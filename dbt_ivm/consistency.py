"""The `fast_mv_consistent` test's query: the view against the model's own SQL, run on the
source versions the view last consumed (never the engine's rewrite of it, so it can catch the
engine), with floating-point columns compared within a relative tolerance."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import TokenType, exp

from dbt_ivm import verbatim
from dbt_ivm.analyze import parse, source_references
from dbt_ivm.ir import HIDDEN_PREFIX, TableName, Upstream
from dbt_ivm.render import col, func, ident, lit, sql, temp_table
from dbt_ivm.upstream import at_version


def pin_versions(model_sql: str, versions: Mapping[str, int], upstreams: Mapping[str, Upstream] | None = None) -> str:
    """The model's own SQL text, every read of a source pinned `VERSION AS OF` its version.

    Text is inserted after each source's name and nothing else changes (a trailing semicolon
    goes): the query is exactly the one dbt compiled, never sqlglot's rewrite of it, so the
    consistency test can catch the engine. A source that is another fast_mv's view (`upstreams`)
    is read as that view's own select over its storage at the version (`upstream.at_version`),
    in the name's place and under the name's alias: each level of a chain is checked at the
    versions it reflects.
    """
    edits: list[tuple[int, int, str]] = []  # (start, end, text): text[start:end] replaced
    for table in source_references(parse(model_sql)):
        key = TableName(table.db or None, table.name, table.catalog or None).key
        first = next(p for p in (table.args.get("catalog"), table.args.get("db"), table.this) if p)
        start, end = first.meta.get("start"), table.this.meta.get("end")
        if key not in versions or start is None or end is None:
            continue
        upstream = (upstreams or {}).get(key)
        if upstream is None:
            edits.append((end + 1, end + 1, f" VERSION AS OF {versions[key]}"))
        else:
            read = f"({sql(at_version(upstream, versions[key]))})"
            edits.append((start, end + 1, read if table.alias else f"{read} AS {sql(ident(table.name))}"))
    tokens = verbatim.DIALECT().tokenize(model_sql)
    edits += [(t.start, t.start + 1, "") for t in tokens if t.token_type == TokenType.SEMICOLON]
    text = model_sql
    for start, end, insert in sorted(edits, reverse=True):
        text = text[:start] + insert + text[end:]
    return text


MODEL_PLACEHOLDER = f"{HIDDEN_PREFIX}model_sql"


# Floating-point columns of the consistency test match within this tolerance, relative to the
# larger of the two values: a DOUBLE sum maintained by deltas adds in another order than a
# recompute, and may differ in its last digits. Relative however small the values: a sum of 3e-10
# read as 3.49e-10 is 16 % off, not a last digit. The scale's floor, the smallest normal double,
# only keeps the bound above 0 where both values are (subnormal or) zero.
FLOAT_TOLERANCE = 1e-9
FLOAT_FLOOR = 2.2250738585072014e-308
FLOAT_TYPES = ("double", "float")


def consistency_sql(view: TableName, model_sql: str, columns: Mapping[str, str] | None = None) -> str:
    """Rows in one multiset and not the other, between the view and `model_sql` (the model's text,
    see `pin_versions`) as a subquery. NULLs are equal and duplicates counted.

    Without floating-point columns (`columns`: the view's column types), EXCEPT ALL both ways.
    With some, rows are paired on every other column, the n-th smallest with the n-th smallest,
    and a pair differs when a float differs by more than `FLOAT_TOLERANCE` (see `_float_pairs`).
    """
    floats = [c for c, t in (columns or {}).items() if t.lower() in FLOAT_TYPES]
    model = exp.select("*").from_(temp_table(MODEL_PLACEHOLDER).as_(ident(f"{HIDDEN_PREFIX}m")))
    if floats:
        query: exp.Query = _float_pairs(view, model, list(columns or {}), floats)
    else:
        v = exp.select("*").from_(view.to_table())
        missing = exp.except_(model.copy(), v.copy(), distinct=False)
        extra = exp.except_(v, model, distinct=False)
        diff = ident(f"{HIDDEN_PREFIX}diff")
        query = exp.union(
            exp.select(lit("missing from the view").as_(diff), "*").from_(missing.subquery("m")),
            exp.select(lit("extra in the view").as_(diff), "*").from_(extra.subquery("x")),
            distinct=False,
        )
    return sql(query).replace(sql(temp_table(MODEL_PLACEHOLDER)), f"(\n{model_sql}\n)")


def _float_pairs(view: TableName, model: exp.Select, names: list[str], floats: list[str]) -> exp.Select:
    exact = [n for n in names if n not in floats]
    rn = f"{HIDDEN_PREFIX}rn"

    def numbered(rows: exp.Select, alias: str) -> exp.Expr:
        order = exp.Order(expressions=[exp.Ordered(this=col(f)) for f in floats])
        number = exp.Window(this=exp.RowNumber(), partition_by=[col(c) for c in exact] or None, order=order).as_(
            ident(rn)
        )
        return exp.select("*", number).from_(rows.subquery(ident(f"{alias}_rows"))).subquery(ident(alias))

    def close(f: str) -> exp.Expr:
        """Equal (NULL, NaN and infinities only to themselves), or both finite and within the tolerance."""
        a, b = col(f, "v"), col(f, "m")
        infinity = exp.Cast(this=lit("Infinity"), to=exp.DataType.build("double"))
        finite = [exp.LT(this=func("abs", x.copy()), expression=infinity.copy()) for x in (a, b)]  # NaN is not
        floor = exp.Literal.number(repr(FLOAT_FLOOR))
        scale = func("greatest", func("abs", a.copy()), func("abs", b.copy()), floor)
        within = exp.LTE(
            this=func("abs", exp.Sub(this=a.copy(), expression=b.copy())),
            expression=exp.Mul(this=exp.Literal.number(FLOAT_TOLERANCE), expression=scale),
        )
        near = func("coalesce", exp.and_(*finite, within), exp.false())
        return exp.or_(exp.NullSafeEQ(this=a, expression=b), near)

    only_model = exp.Is(this=col(rn, "v"), expression=exp.Null())
    only_view = exp.Is(this=col(rn, "m"), expression=exp.Null())
    label = exp.Case(
        ifs=[
            exp.If(this=only_model.copy(), true=lit("missing from the view")),
            exp.If(this=only_view.copy(), true=lit("extra in the view")),
        ],
        default=lit("differs beyond the float tolerance"),
    )
    shown = [exp.If(this=only_model.copy(), true=col(n, "m"), false=col(n, "v")).as_(ident(n)) for n in names]
    on = exp.and_(
        *[exp.NullSafeEQ(this=col(c, "v"), expression=col(c, "m")) for c in exact],
        exp.EQ(this=col(rn, "v"), expression=col(rn, "m")),
    )
    differs = exp.or_(only_model, only_view, exp.not_(exp.and_(*[close(f) for f in floats])))
    return (
        exp.select(label.as_(ident(f"{HIDDEN_PREFIX}diff")), *shown)
        .from_(numbered(exp.select("*").from_(view.to_table()), "v"))
        .join(numbered(model, "m"), on=on, join_type="full outer")
        .where(differs)
    )
