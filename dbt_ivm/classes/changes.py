"""What every view class shares at refresh time: row identities, change feeds and their
netting, snapshots at pinned versions, and the telescoping sum of per-source change terms.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import cast

from sqlglot import exp

from dbt_ivm.classes import Stage
from dbt_ivm.ir import DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Source, ViewPlan
from dbt_ivm.render import UNGROUPABLE, col, func, ident, lit

SIGN_COLUMN = f"{HIDDEN_PREFIX}sign"
INSERT_TYPES = ("insert", "update_postimage")


def rid_expression(columns: tuple[tuple[str, str], ...], table: str | None = None) -> exp.Expr:
    """Row identity of a source row: a 64-bit hash of the columns the view uses, NULLs flagged.

    Delta withholds row ids from change-feed reads, so identity comes from content;
    rows equal on every used column are interchangeable duplicates (a multiplicity).
    A hash collision can only merge rows whose view columns are also equal, because
    every key below is (identities, view columns): the view's multiset stays exact.
    """
    if not columns:
        return exp.Literal.number(0)
    args: list[exp.Expr] = []
    for name, ctype in columns:
        c = col(name, table)
        args.append(func("to_json", c) if ctype.lower().startswith("map") else c)
    args += [exp.Is(this=col(name, table), expression=exp.Null()) for name, _ in columns]
    return func("xxhash64", *args)


def source_columns(source: Source) -> list[exp.Expr]:
    return [col(name) for name, _ in source.columns]


def snapshot_relation(source: Source, version: int, with_rid: bool = True, where: Sequence[exp.Expr] = ()) -> exp.Expr:
    """`(SELECT used columns, rid FROM t VERSION AS OF v [WHERE where]) AS alias`."""
    table = source.table.to_table()
    table.set("version", exp.Version(this="VERSION", kind="AS OF", expression=lit(version)))
    select = exp.select(*source_columns(source)).from_(table)
    if not source.columns:
        select = exp.select(lit(1).as_(ident(f"{HIDDEN_PREFIX}one"))).from_(table)
    if with_rid:
        select = select.select(rid_expression(source.columns).as_(ident(RID_COLUMN)))
    if where:
        select = select.where(*[w.copy() for w in where])
    return select.subquery(ident(source.alias))


# Types whose values Spark changes when it groups by them: -0.0 becomes 0.0 (also inside arrays
# and structs), a map's keys are sorted and its NULL values lost; VARIANT cannot be grouped at all.
NORMALIZED_WHEN_GROUPED = ("double", "float", *UNGROUPABLE)


def normalized_when_grouped(spark_type: str) -> bool:
    return any(t in spark_type.lower() for t in NORMALIZED_WHEN_GROUPED)


def change_select(source: Source, start: int, end: int) -> exp.Select:
    """Net change of one source between two versions, per row identity.

    `__ivm_d` is +n for n more copies, -n for n fewer: an update's pre- and
    post-image cancel when the view reads none of the changed columns, and a row
    inserted then deleted between two refreshes nets to nothing. A column whose values
    grouping would change (`normalized_when_grouped`) is grouped by its text, which tells
    -0.0 from 0.0 and keeps a map's order and NULLs, and carried through as one of its values.
    """
    feed = exp.Table(this=func("table_changes", lit(source.table.sql()), lit(start), lit(end)))
    sign = exp.If(
        this=exp.In(this=col("_change_type"), expressions=[lit(t) for t in INSERT_TYPES]),
        true=lit(1),
        false=lit(-1),
    )
    rows = (
        exp.select(*source_columns(source))
        .from_(feed)
        .select(rid_expression(source.columns).as_(ident(RID_COLUMN)), sign.as_(ident(SIGN_COLUMN)))
    )
    total = exp.Sum(this=col(SIGN_COLUMN))
    values: list[exp.Expr] = []
    keys: list[exp.Expr] = [col(RID_COLUMN)]
    for name, spark_type in source.columns:
        if normalized_when_grouped(spark_type):
            values.append(func("any_value", col(name)).as_(ident(name)))
            keys.append(exp.Cast(this=col(name), to=exp.DataType.build("string")))
        else:
            values.append(col(name))
            keys.append(col(name))
    netted = (
        exp.select(*values)
        .select(col(RID_COLUMN), total.as_(ident(DELTA_COLUMN)))
        .from_(rows.subquery(ident(f"{HIDDEN_PREFIX}feed")))
        .group_by(*keys)
        .having(exp.NEQ(this=total.copy(), expression=lit(0)))
    )
    return netted


def changes_relation(source: Source, start: int, end: int, staged: str | None = None, signed: bool = False) -> exp.Expr:
    """The net change as a relation under the source's alias; `staged` names a cached copy;
    `signed`: one row per copy (see `signed_rows`).

    Staging (CACHE TABLE) evaluates the feed once and gives Spark its real, small size,
    so the joins below broadcast the change rows instead of shuffling the other sources.
    """
    net: exp.Expr = (
        exp.Table(this=ident(staged)) if staged else change_select(source, start, end).subquery(f"{HIDDEN_PREFIX}n")
    )
    if signed:
        return signed_rows(net, source).subquery(ident(source.alias))
    if staged:
        return exp.Table(this=ident(staged), alias=exp.TableAlias(this=ident(source.alias)))
    return change_select(source, start, end).subquery(ident(source.alias))


def copies() -> tuple[exp.Expr, exp.Expr]:
    """Per row of a change set, the copies it inserts and the copies it deletes (`__ivm_d` > 0,
    < 0), each 0 otherwise: summed, the rows a change adds and removes."""
    d = col(DELTA_COLUMN)
    inserted = exp.If(this=exp.GT(this=d.copy(), expression=lit(0)), true=d.copy(), false=lit(0))
    deleted = exp.If(this=exp.LT(this=d.copy(), expression=lit(0)), true=exp.Neg(this=d.copy()), false=lit(0))
    return inserted, deleted


def union_all(queries: list[exp.Select]) -> exp.Query:
    """`q1 UNION ALL q2 UNION ALL …` (one query: itself)."""
    return exp.union(*queries, distinct=False) if len(queries) > 1 else queries[0]


def substitute(query: exp.Select, relations: Mapping[str, exp.Expr]) -> exp.Select:
    """Copy of `query` with each source table replaced by the relation for its alias."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.alias_or_name in relations:
            relation = relations[node.alias_or_name].copy()
            if node.args.get("joins"):  # the first table of a parenthesized join carries its joins
                relation.set("joins", [join.transform(swap) for join in node.args["joins"]])
            return relation
        return node

    # swap replaces tables only, so the root stays the Select that transform types as any node
    return cast(exp.Select, query.copy().transform(swap))


# changed occurrence -> the alias of another occurrence in its term -> filters on that occurrence
Narrowing = Mapping[int, Mapping[str, Sequence[exp.Expr]]]


def term_version(other: int, changed: int, old: int, new: int) -> int:
    """The version of source occurrence `other` in the telescoping term of occurrence `changed`."""
    return new if other < changed else old


def delta_terms(
    plan: ViewPlan,
    query: exp.Select,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    rids: bool = True,
    signed: bool = False,
    flips: frozenset[int] = frozenset(),
    stage: Stage | None = None,
    narrow: Narrowing | None = None,
) -> Iterator[tuple[Source, exp.Select]]:
    """The terms of the view's net change between the `old` and `new` source versions.

    A view's rows before aggregation are multilinear in its sources' multiplicities, so with
    sources in occurrence order R1..Rk the change telescopes exactly (pg_ivm's several-tables case):

        V(R1',..,Rk') - V(R1,..,Rk) = sum_i V(R1',..,R(i-1)', dRi, R(i+1),..,Rk)

    where Rj' is source j at its new (pinned) version, Rj at the version the view
    last consumed, and dRi the netted change feed between them. Term i is `query` (over the
    plan's sources) reading the sources before i new and those after i old (time travel); a
    source whose version did not move has dRi = 0 (no term) and Rj = Rj' (read once, at the
    pinned version). Self-joins are just two occurrences, each its own Ri. `signed` gives the
    change rows one row per copy, `__ivm_d` +1 or -1 (see `signed_rows`). `staged` maps
    occurrence index -> cached change set;
    `rids`: snapshots carry their row identities. Each term selects the multiplicity `__ivm_d`.
    A join tree with outer joins has its own terms (`outer_terms`; `flips`: its occurrences
    that take the unique-key flip; `stage`: caches a level's change read twice).
    `narrow`: per changed occurrence, filters on the other occurrences of its term that keep
    every row its change rows can join (see `joins.narrowing`; over outer joins each applies at
    one join only, `outer_terms.outer_join_keys`).
    """
    from dbt_ivm.classes.outer_terms import has_outer_join, outer_delta_terms

    if has_outer_join(plan.tree):
        yield from outer_delta_terms(plan, query, old, new, staged, rids, signed, flips, stage, narrow)
        return
    for i, changed in enumerate(plan.sources):
        key = changed.table.key
        if new[key] == old[key]:
            continue
        rels: dict[str, exp.Expr] = {}
        for other in plan.sources:
            k = other.table.key
            if other.index == i:
                rels[other.alias] = changes_relation(other, old[k] + 1, new[k], (staged or {}).get(i), signed)
            else:
                version = term_version(other.index, i, old[k], new[k])
                where = (narrow or {}).get(i, {}).get(other.alias, ())
                rels[other.alias] = snapshot_relation(other, version, with_rid=rids, where=where)
        term = substitute(query, rels)
        yield changed, term.select(col(DELTA_COLUMN, changed.alias).as_(ident(DELTA_COLUMN)), copy=False)


def signed_rows(relation: exp.Expr, source: Source) -> exp.Select:
    """A net change with one row per copy: `__ivm_d` +1 for each copy added, -1 for each removed.

    Aggregates sum values with their sign (`IF(d > 0, x, -x)`): exact for every type, where a
    product `x * d` would widen a DECIMAL and may round it.
    """
    d = col(DELTA_COLUMN)
    sign = exp.If(this=exp.GT(this=d.copy(), expression=lit(0)), true=lit(1), false=lit(-1))
    copies = func("array_repeat", sign, exp.Cast(this=func("abs", d.copy()), to=exp.DataType.build("int")))
    s = ident(f"{HIDDEN_PREFIX}s")
    lateral = exp.Lateral(
        this=exp.Explode(this=copies), view=True, alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[s])
    )
    select = exp.select(*source_columns(source), col(RID_COLUMN), exp.column(s).as_(ident(DELTA_COLUMN)))
    select = select.from_(relation)
    select.set("laterals", [lateral])
    return select
