"""Pure builders of the Spark SQL a build or a refresh runs, as sqlglot trees.

Nothing here touches a database: `maintain` decides which of these to run.
Every identifier goes through sqlglot, so quoting is never string work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt_ivm import verbatim
from dbt_ivm.errors import ConfigError, UnsupportedView
from dbt_ivm.ir import (
    Ordering,
    TableName,
    ViewPlan,
)

CHANGE_FEED = "delta.enableChangeDataFeed"
BACKING_PROPERTIES = {
    # A refresh's MERGE touches a few rows of large files: mark them deleted, don't rewrite.
    "delta.enableDeletionVectors": "true",
    # A change feed of the view would make every MERGE write change files too; nothing reads it
    # (sessions may default it on for new tables, so say it).
    CHANGE_FEED: "false",
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


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    """The AND-ed parts of `condition`, through parentheses: `(a = b AND c <> d) AND e` is three.
    A part that is itself an AND would hide its other parts from a test of one conjunct."""
    while isinstance(condition, exp.Paren):
        condition = condition.this
    if condition is None:
        return []
    if isinstance(condition, exp.And):
        return [c for part in (condition.this, condition.expression) for c in conjuncts(part)]
    return [condition]


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


def _properties(props: Mapping[str, str], layout: Sequence[exp.Expr]) -> exp.Properties:
    return exp.Properties(
        expressions=[exp.FileFormatProperty(this=exp.var("DELTA")), *layout]
        + [exp.Property(this=lit(k), value=lit(v)) for k, v in props.items()]
    )


def create_backing(
    backing: TableName, select: exp.Select, props: Mapping[str, str], layout: Sequence[exp.Expr] = ()
) -> exp.Create:
    """The storage's CREATE OR REPLACE: `BACKING_PROPERTIES` under `props`, and `layout` (its
    PARTITIONED BY or CLUSTER BY, see `storage`)."""
    return exp.Create(
        this=backing.to_table(),
        kind="TABLE",
        replace=True,
        expression=select,
        properties=_properties({**BACKING_PROPERTIES, **props}, layout),
    )


def enable_change_feed(table: TableName) -> str:
    """Turn on a table's change data feed: it records the changes of the commits after this one."""
    properties = exp.Properties(expressions=[exp.Property(this=lit(CHANGE_FEED), value=lit("true"))])
    return sql(exp.Alter(this=table.to_table(), kind="TABLE", actions=[exp.AlterSet(expressions=[properties])]))


def create_view(view: TableName, select: exp.Query) -> exp.Create:
    return exp.Create(this=view.to_table(), kind="VIEW", replace=True, expression=select)


def ordered(select: exp.Select, order: Sequence[Ordering]) -> exp.Select:
    """`select` with the model's top-level ORDER BY, over its own columns (`ir.Ordering`)."""
    if not order:
        return select
    keys = [exp.Ordered(this=col(o.column), desc=o.descending, nulls_first=o.nulls_first) for o in order]
    return select.order_by(*keys, copy=True)


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
