"""Join keys, and the filters they give a term's other occurrences: the equalities every row of
the view satisfies (`key_equalities`), the change set's values of each key cut into pieces
(`key_stats`, `key_pieces`), and per changed occurrence the BETWEENs on the occurrences its term
joins (`key_ranges`), so Delta reads only the files that hold rows a change row can join.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlglot import exp

from dbt_ivm.classes.change_stats import Stat, bound, extremes, readable
from dbt_ivm.classes.relations import union_all
from dbt_ivm.ir import HIDDEN_PREFIX, Source, ViewPlan
from dbt_ivm.render import col, conjuncts, func, ident, lit, temp_table

# Join keys a term's other occurrences are narrowed by: types whose values `bound` writes exactly
# and that compare without padding (CHAR and VARCHAR pad, so they are left out).
KEY_TYPES = re.compile(r"(tinyint|smallint|int|bigint|decimal\(\d+,\d+\)|string|date|timestamp(_ntz)?)")


# Per occurrence, (its column, another occurrence's alias, that one's column, their type) of each
# join key equality it takes part in (`terms.Terms.join_keys`).
JoinKeys = dict[int, list[tuple[str, str, str, str]]]


def inner_join_keys(plan: ViewPlan) -> JoinKeys:
    """`JoinKeys` of a view without outer joins: each equality between two plain columns of one
    type that every row of the view satisfies, a conjunct of an inner join's ON or of the WHERE.
    A window view's rows are those of its windows' SELECT (the derived table a query over the
    windows reads: `… WHERE rn = 1`)."""
    query = plan.windows.select if plan.windows is not None else plan.query
    where = query.args.get("where")
    # the view's own joins (also those of a parenthesized join), not a subquery's
    joins = [j for j in query.find_all(exp.Join) if j.find_ancestor(exp.Select) is query]
    keys: JoinKeys = {}
    for condition in [j.args.get("on") for j in joins] + [where.this if where else None]:
        for (a, a_col), (b, b_col), type_ in key_equalities(plan, condition):
            keys.setdefault(a.index, []).append((a_col, b.alias, b_col, type_))
            keys.setdefault(b.index, []).append((b_col, a.alias, a_col, type_))
    return keys


def key_equalities(
    plan: ViewPlan, condition: exp.Expr | None
) -> Iterator[tuple[tuple[Source, str], tuple[Source, str], str]]:
    """((occurrence, column), (another occurrence, column), type) of each conjunct of `condition`
    (not one under an OR) that equates plain columns of two occurrences, of one `KEY_TYPES` type."""
    by_alias = {s.alias: s for s in plan.sources}
    for eq in conjuncts(condition):
        if not isinstance(eq, exp.EQ) or not all(_plain_column(c) for c in (eq.this, eq.expression)):
            continue
        (a, a_col), (b, b_col) = [(by_alias.get(c.table), c.name) for c in (eq.this, eq.expression)]
        if a is None or b is None or a.alias == b.alias:
            continue
        types = [dict(s.columns).get(name, "").lower() for s, name in ((a, a_col), (b, b_col))]
        if types[0] == types[1] and KEY_TYPES.fullmatch(types[0]):
            yield (a, a_col), (b, b_col), types[0]


def _plain_column(e: exp.Expr) -> bool:
    """`alias.column`, not an expression or a struct's field (`o.s.x`)."""
    return isinstance(e, exp.Column) and not e.args.get("db") and not e.args.get("catalog")


# Pieces a change set's range of a join key is cut into (`key_stats`): equal widths of its span,
# for the types `_position` numbers. A change whose keys lie in a few far-apart places (recent
# rows, fresh inserts far above them, a few old corrections) narrows each other source to those
# places, not to the span between them, which holds every older batch's rows.
KEY_PIECES = 32


def _position(column: exp.Expr, type_: str) -> exp.Expr | None:
    """A number that orders as `column` does, to cut its range into equal widths; None for a
    type without one (text). Only the cut depends on it: each piece's bounds are its values'."""
    if type_ == "date":
        return func("unix_date", column)
    if type_ == "timestamp":
        return func("unix_micros", column)
    if type_ in ("string", "timestamp_ntz"):
        return None
    return exp.cast(column, exp.DataType.build("double"))


def _piece(position: exp.Expr) -> exp.Expr:
    """Which of `KEY_PIECES` equal widths of the change set's span `position` falls in (0 where the
    span is one value, or the position NULL)."""
    low, high = exp.Window(this=exp.Min(this=position.copy())), exp.Window(this=exp.Max(this=position.copy()))
    offset = exp.paren(exp.Sub(this=position, expression=low.copy()))
    share = exp.Div(this=offset, expression=func("nullif", exp.Sub(this=high, expression=low), lit(0)))
    index = exp.Floor(this=exp.Mul(this=exp.paren(share), expression=lit(KEY_PIECES)))
    return func("coalesce", func("least", lit(KEY_PIECES - 1), index), lit(0))


def _key_columns(keys: Mapping[int, Sequence[tuple[str, str, str, str]]], i: int) -> list[tuple[str, str]]:
    """Occurrence i's distinct (key column, type): the k of `lo_<i>_<k>`."""
    return list(dict.fromkeys((c, type_) for c, _, _, type_ in keys.get(i, ())))


def key_stats(staged: Mapping[int, str], keys: Mapping[int, Sequence[tuple[str, str, str, str]]]) -> exp.Query | None:
    """For each join key (`JoinKeys`) k of each staged change set i, one row per piece of its
    values' span that holds one (`KEY_PIECES`): the piece `p`, its smallest and largest value in
    `lo_<i>_<k>` and `hi_<i>_<k>`, NULL in the other keys' columns."""
    slots = [
        (i, name, k, c, type_)
        for i, name in sorted(staged.items())
        for k, (c, type_) in enumerate(_key_columns(keys, i))
    ]
    value, piece = ident(f"{HIDDEN_PREFIX}v"), ident(f"{HIDDEN_PREFIX}p")
    parts = []
    for i, name, k, c, type_ in slots:
        position = _position(col(c), type_)
        rows = exp.select(col(c).as_(value), (lit(0) if position is None else _piece(position)).as_(piece))
        columns: list[exp.Expr] = []
        for j, _, m, _, other in slots:
            if (j, m) == (i, k):
                lo, hi = extremes(value.name, type_)
                columns += [lo.as_(Stat.LO.of(j, m)), hi.as_(Stat.HI.of(j, m))]
            else:  # typed as `extremes` gives that key's values, so the UNION ALL keeps its type
                typed = exp.cast(exp.null(), exp.DataType.build(other, dialect="spark"))
                columns += [readable(typed.copy(), other).as_(f"{side}_{j}_{m}") for side in ("lo", "hi")]
        grouped = exp.select(col(piece.name).as_("p"), *columns)
        parts.append(
            grouped.from_(rows.from_(temp_table(name)).subquery(ident(f"{HIDDEN_PREFIX}k"))).group_by(col(piece.name))
        )
    return union_all(parts) if parts else None


def key_pieces(rows: Sequence[Mapping[str, Any]], prefix: str, type_: str) -> list[tuple[exp.Expr, exp.Expr]] | None:
    """The literal bounds of the change set's values of one key (`<prefix>` of `key_stats`' rows),
    pieces next to each other joined into one; [] without a value; None where some bound has no
    exact literal (`bound`), or where rows came back without the key's columns: then nothing may
    be narrowed by it. (No rows at all: every change set is empty.)"""
    if rows and not any(Stat.LO.of(prefix) in r for r in rows):
        return None
    found = sorted(
        (int(r["p"]), r[Stat.LO.of(prefix)], r[Stat.HI.of(prefix)])
        for r in rows
        if r.get(Stat.LO.of(prefix)) is not None
    )
    pieces: list[tuple[exp.Expr, exp.Expr]] = []
    last = None
    for p, lo, hi in found:
        low, high = bound(lo, type_), bound(hi, type_)
        if low is None or high is None:
            return None
        if last is not None and last == p - 1:
            pieces[-1] = (pieces[-1][0], high)
        else:
            pieces.append((low, high))
        last = p
    return pieces


def key_ranges(
    staged: Mapping[int, str],
    keys: Mapping[int, Sequence[tuple[str, str, str, str]]],
    rows: Sequence[Mapping[str, Any]],
) -> dict[int, dict[str, list[exp.Expr]]]:
    """Per changed occurrence, per other occurrence its term joins by a key: `column BETWEEN lo AND
    hi` for each piece of the change set's values of the key it equals (`key_pieces`), OR-ed.

    Implied by the join (a row of the other occurrence joins a change row only where its key
    equals the change row's, which lies in one of the pieces; NULL equals nothing), so adding it
    inside the other occurrence's snapshot drops only rows that join no change row. Delta then
    skips the files whose statistics lie outside every piece: a change local in a key (new
    orders, recent lines, and a few old corrections) reads only the other sources' files that
    hold its keys, not the whole source. A change set without a value of the key (empty after
    netting, as an update of a column the view does not read is, or NULL in every row) joins no
    row: the filter is `column BETWEEN NULL AND NULL`, which holds for no row and which Spark's
    optimizer folds to an empty read, so that term reads nothing of the other source.
    """
    narrow: dict[int, dict[str, list[exp.Expr]]] = {}
    for i in sorted(staged):
        columns = _key_columns(keys, i)
        for column, other, other_column, type_ in keys.get(i, ()):
            pieces = key_pieces(rows, f"{i}_{columns.index((column, type_))}", type_)
            if pieces == []:
                pieces = [(exp.null(), exp.null())]  # no value of the key: no row joins
            if pieces:
                between = [exp.Between(this=col(other_column), low=lo.copy(), high=hi.copy()) for lo, hi in pieces]
                narrow.setdefault(i, {}).setdefault(other, []).append(
                    between[0] if len(between) == 1 else exp.paren(exp.or_(*between))
                )
    return narrow
