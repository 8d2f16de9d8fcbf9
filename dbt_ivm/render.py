"""Pure builders of the Spark SQL a build or a refresh runs, as sqlglot trees.

Nothing here touches a database: `maintain` decides which of these to run.
Every identifier goes through sqlglot, so quoting is never string work.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import TokenType, exp

from dbt_ivm import verbatim
from dbt_ivm.analyze import parse, source_references
from dbt_ivm.errors import ConfigError, UnsupportedView
from dbt_ivm.ir import (
    HIDDEN_PREFIX,
    TableName,
    ViewPlan,
)

BACKING_PROPERTIES = {
    # A refresh's MERGE touches a few rows of large files: mark them deleted, don't rewrite.
    "delta.enableDeletionVectors": "true",
    # A change feed of the view would make every MERGE write change files too; nothing reads it
    # (sessions may default it on for new tables, so say it).
    "delta.enableChangeDataFeed": "false",
}


def sql(expression: exp.Expr) -> str:
    """Spark SQL of a statement; what sqlglot cannot write in Spark raises (see `verbatim`)."""
    return verbatim.to_sql(expression)


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(ident(name), table=ident(table) if table else None)


def func(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def lit(value: str | int) -> exp.Literal | exp.Neg:  # a negative number is Neg(Literal)
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def temp_table(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


# Types a view column cannot have: Spark rewrites a MAP it groups by and cannot group a VARIANT.
UNGROUPABLE = ("map<", "variant")


def ensure_groupable(output_types: Mapping[str, str]) -> None:
    """Refuse output columns of MAP or VARIANT type (or holding one): the view stores its rows
    grouped by their values, and Spark rewrites a map it groups by (keys sorted, NULL values
    lost) and cannot group a VARIANT, so the stored value would differ from the model's."""
    for name, spark_type in output_types.items():
        if any(t in spark_type.lower() for t in UNGROUPABLE):
            raise UnsupportedView(
                f"column {name} of type {spark_type}, which fast_mv cannot store exactly (Spark changes MAP "
                "values when it groups rows by them, and cannot group VARIANT)",
                "select what the view needs from it (element_at, map_values, to_json, variant_get), or use "
                "materialized='table'",
            )


def _properties(props: Mapping[str, str]) -> exp.Properties:
    return exp.Properties(
        expressions=[exp.FileFormatProperty(this=exp.var("DELTA"))]
        + [exp.Property(this=lit(k), value=lit(v)) for k, v in props.items()]
    )


def create_backing(backing: TableName, select: exp.Select, props: Mapping[str, str]) -> exp.Create:
    return exp.Create(
        this=backing.to_table(),
        kind="TABLE",
        replace=True,
        expression=select,
        properties=_properties({**BACKING_PROPERTIES, **props}),
    )


def create_view(view: TableName, select: exp.Select) -> exp.Create:
    return exp.Create(this=view.to_table(), kind="VIEW", replace=True, expression=select)


# --- refresh -----------------------------------------------------------------------


def cache_as(name: str, select: exp.Select) -> str:
    """Evaluate the change set once: MERGE would otherwise evaluate its source twice."""
    return f"CACHE TABLE {sql(ident(name))} AS {sql(select)}"


def release(name: str) -> str:
    """Drop a cached change set: dropping its temporary view also drops its cached rows (Spark
    uncaches a temporary view it drops), so no UNCACHE TABLE, one statement less per stage."""
    return f"DROP VIEW IF EXISTS {sql(ident(name))}"


def output_columns(plan: ViewPlan, value: object, config: str) -> tuple[str, ...]:
    """A model config naming output columns (`unique_key`, `cluster_by`: a name or a list of
    names) as the columns' names, each once; anything else fails, naming the config."""
    if not value:
        return ()
    listed = list(value) if isinstance(value, (list, tuple)) else [value]
    names = [n for n in listed if isinstance(n, str)]
    if len(names) != len(listed):
        raise ConfigError(f"{config} must be a column name or a list of column names, not {value!r}")
    outputs = {o.name.lower(): o.name for o in plan.outputs}
    missing = [n for n in names if n.strip().lower() not in outputs]
    if missing:
        raise ConfigError(
            f"{config} {', '.join(map(repr, missing))} is not a column of the model (its columns: "
            f"{', '.join(o.name for o in plan.outputs)}); name output columns, or drop {config}"
        )
    return tuple(dict.fromkeys(outputs[n.strip().lower()] for n in names))


def raise_error(message: str) -> exp.Expr:
    return exp.Cast(this=func("raise_error", lit(message)), to=exp.DataType.build("bigint"))


def empty_commit(backing: TableName) -> exp.Merge:
    """A commit that changes no row, to record a watermark when the changes net to nothing.

    A MERGE that matches nothing still commits, and unlike ALTER TABLE … SET TBLPROPERTIES it
    honours Delta's idempotent-write confs, so it is guarded like every other write.
    """
    nothing = exp.select(lit(1).as_("one")).where(exp.false())
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident("t")))
    return exp.Merge(
        this=target,
        using=nothing.subquery("s"),
        on=exp.false(),
        whens=exp.Whens(expressions=[exp.When(matched=True, source=False, then=exp.var("DELETE"))]),
    )


# --- consistency -------------------------------------------------------------------


def pin_versions(model_sql: str, versions: Mapping[str, int]) -> str:
    """The model's own SQL text, every read of a source pinned `VERSION AS OF` its version.

    Text is inserted after each source's name and nothing else changes (a trailing semicolon
    goes): the query is exactly the one dbt compiled, never sqlglot's rewrite of it, so the
    consistency test can catch the engine.
    """
    inserts: list[tuple[int, str]] = []
    for table in source_references(parse(model_sql)):
        key = TableName(table.db or None, table.name, table.catalog or None).key
        end = table.this.meta.get("end")
        if key in versions and end is not None:
            inserts.append((end + 1, f" VERSION AS OF {versions[key]}"))
    inserts += [(t.start, "") for t in verbatim.DIALECT().tokenize(model_sql) if t.token_type == TokenType.SEMICOLON]
    text = model_sql
    for position, insert in sorted(inserts, reverse=True):
        text = text[:position] + insert + (text[position + 1 :] if not insert else text[position:])
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
