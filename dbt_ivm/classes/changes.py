"""The view's net change between two sets of source versions: each moved source's change feed,
netted per row identity (`change_select`), and the telescoping sum of per-occurrence change
terms over them (`delta_terms`), whose terms `terms.terms_for` builds for the view's join tree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sqlglot import exp

from dbt_ivm.classes.relations import Narrowing, TermInput, rid_expression, source_columns
from dbt_ivm.classes.rules import Stage
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.ir import DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Source, Span, ViewPlan
from dbt_ivm.render import UNGROUPABLE, col, func, ident, lit
from dbt_ivm.upstream import read_feed

SIGN_COLUMN = f"{HIDDEN_PREFIX}sign"

INSERT_TYPES = ("insert", "update_postimage")


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
    feed = read_feed(source, start, end)
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
    `terms_for` builds each term for the join tree (over outer joins: `outer_terms`; `flips`:
    its occurrences that take the unique-key flip; `stage`: caches a level's change read twice).
    `narrow`: per changed occurrence, filters on the other occurrences of its term that keep
    every row its change rows can join (see `joins.narrowing`; over outer joins each applies at
    one join only, `jointree.outer_join_keys`).
    """
    terms = terms_for(plan)
    for changed in plan.sources:
        key = changed.table.key
        if new[key] == old[key]:
            continue
        before = {
            s.index: term_version(s.index, changed.index, old[s.table.key], new[s.table.key]) for s in plan.sources
        }
        span = Span(old[key], new[key])
        change = changes_relation(changed, span.first, span.pinned, (staged or {}).get(changed.index), signed)
        term = TermInput(changed, change, before, {**before, changed.index: new[key]})
        filters = (narrow or {}).get(changed.index, {})
        yield changed, terms.term(query, term, rids, changed.index in flips, stage, filters)
