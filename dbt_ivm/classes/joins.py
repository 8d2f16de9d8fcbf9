"""Views without aggregation: one source, or inner joins of several (N-way, self, non-equi).

Stored row: the view's columns, each source occurrence's row identity (`__ivm_rid_<i>`, a hash
of the columns the view reads) and a multiplicity (`__ivm_count`); `ref()` repeats each row
`count` times. A refresh sums the telescoping change terms per identity tuple and applies
them in one MERGE (count += delta, delete at 0), or one INSERT when every changed identity is
new; with a declared unique key, sources that only appended take the append path (one INSERT
straight from the change feeds).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dbt_ivm.classes import NULL_KEY_FALLBACK, Describe, Refresh, Stage, Write, stager
from dbt_ivm.classes.changes import Narrowing, copies, delta_terms, snapshot_relation, substitute, union_all
from dbt_ivm.errors import StateError
from dbt_ivm.ir import COUNT_COLUMN, DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Side, Source, TableName, ViewPlan
from dbt_ivm.metadata import Highs
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, raise_error, sql, temp_table

# Up to this many changed identities are written into the MERGE as literals (see identity_filter).
MAX_FILTER_IDENTITIES = 10_000


def _with_rids(query: exp.Select, plan: ViewPlan) -> exp.Select:
    return query.select(*[col(RID_COLUMN, s.alias).as_(ident(s.rid)) for s in plan.sources])


def _group_by_key(inner: exp.Query, plan: ViewPlan, measure: exp.Expr, name: str) -> exp.Select:
    """One row per stored key: (view columns, identity tuple)."""
    key = [col(c) for c in _stored_columns(plan)]
    return (
        exp.select(*key, measure.as_(ident(name)))
        .from_(inner.subquery(ident(f"{HIDDEN_PREFIX}v")))
        .group_by(*[k.copy() for k in key])
    )


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """The backing table's full contents at the pinned versions: outputs, identities, count."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key]) for s in plan.sources}
    inner = _with_rids(substitute(plan.query, rels), plan)
    return _group_by_key(inner, plan, exp.Count(this=exp.Star()), COUNT_COLUMN)


def delta_select(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    broadcast: bool = False,
    flips: frozenset[int] = frozenset(),
    stage: Stage | None = None,
    narrow: Narrowing | None = None,
) -> exp.Select | None:
    """Net change of the view between the `old` and `new` source versions, per identity tuple
    (the sum of `changes.delta_terms`). `staged` maps occurrence index -> cached change set.
    `broadcast` hints each term to broadcast its change rows: an unstaged change feed has no
    size estimate, so Spark would otherwise shuffle the other sources to join it.
    `flips`, `stage`, `narrow`: see `changes.delta_terms`. Returns None when no source moved.
    """
    terms = []
    for changed, term in delta_terms(plan, plan.query, old, new, staged, flips=flips, stage=stage, narrow=narrow):
        term = _with_rids(term, plan)
        if broadcast:
            term = _hint_broadcast(term, changed.alias)
        terms.append(term)
    if not terms:
        return None
    total = exp.Sum(this=col(DELTA_COLUMN))
    grouped = _group_by_key(union_all(terms), plan, total, DELTA_COLUMN)
    return grouped.having(exp.NEQ(this=total.copy(), expression=lit(0)))


def _hint_broadcast(query: exp.Select, alias: str) -> exp.Select:
    hint = exp.JoinHint(this="BROADCAST", expressions=[exp.Table(this=ident(alias))])
    existing = query.args.get("hint")
    query.set("hint", exp.Hint(expressions=[*(existing.expressions if existing else []), hint]))
    return query


def view_select(plan: ViewPlan, backing: TableName) -> exp.Select:
    """What `ref()` returns: the model's columns, each stored row repeated `count` times."""
    n = ident(f"{HIDDEN_PREFIX}n")
    lateral = exp.Lateral(
        this=exp.Explode(this=exp.GenerateSeries(start=lit(1), end=col(COUNT_COLUMN))),
        view=True,
        alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[n]),
    )
    select = exp.select(*[col(o.name) for o in plan.outputs]).from_(backing.to_table())
    select.set("laterals", [lateral])
    return select


def _readable(value: exp.Expr, type_: str) -> exp.Expr:
    """A value of type `type_` as `_bound` reads it: a timestamp's in microseconds since the
    epoch, a timestamp_ntz's as text, any other as itself."""
    if type_ == "timestamp":
        return func("unix_micros", value)
    if type_ == "timestamp_ntz":
        return exp.cast(value, exp.DataType.build("string"))
    return value


def _extremes(column: str, type_: str) -> tuple[exp.Expr, exp.Expr]:
    """MIN and MAX of `column` as `_bound` reads them (`_readable`)."""
    return _readable(exp.Min(this=col(column)), type_), _readable(exp.Max(this=col(column)), type_)


def key_not_null(unique_key: Sequence[str]) -> exp.Expr:
    """Whether a row's declared unique key is a value: none of its columns NULL. As dbt's `unique`
    test, only such rows are held to the key: two rows whose key is NULL share no key value (a
    LEFT JOIN's unmatched rows, padded with NULL), and the key says nothing about them either."""
    return exp.and_(*[exp.not_(exp.Is(this=col(c), expression=exp.Null())) for c in unique_key])


def delta_stats(name: str, unique_key: tuple[str, ...] = (), columns: Mapping[str, str] | None = None) -> exp.Select:
    """Size of the change set; with a unique key, also its rows whose key is a value (`keyed`,
    `key_not_null`), their distinct keys and their largest delta; for each of `columns` (name:
    type), its smallest and largest value and whether it holds a NULL (`value_ranges`; a
    timestamp's in microseconds since the epoch, a timestamp_ntz's as text).

    An append under a declared unique key is only trusted when the change set itself keeps the
    key unique: one copy per key (`keyed_max_d` 1), no key twice (`keys` = `keyed`), and no row
    whose key is NULL (`keyed` = `n`), which the key does not vouch is new.
    """
    d = col(DELTA_COLUMN)
    pos, neg = copies()
    select = exp.select(
        exp.Count(this=exp.Star()).as_("n"),
        func("coalesce", exp.Sum(this=pos), lit(0)).as_("inserted"),
        func("coalesce", exp.Sum(this=neg), lit(0)).as_("deleted"),
        exp.Min(this=d.copy()).as_("min_d"),
    ).from_(temp_table(name))
    if unique_key:
        keyed = key_not_null(unique_key)
        key = exp.If(this=keyed, true=exp.Struct(expressions=[col(c) for c in unique_key]), false=exp.Null())
        select = select.select(
            exp.Count(this=exp.If(this=keyed.copy(), true=lit(1), false=exp.Null())).as_("keyed"),
            exp.Count(this=exp.Distinct(expressions=[key])).as_("keys"),
            exp.Max(this=exp.If(this=keyed.copy(), true=d.copy(), false=exp.Null())).as_("keyed_max_d"),
        )
    for i, (c, type_) in enumerate((columns or {}).items()):
        missing = exp.Sub(this=exp.Count(this=exp.Star()), expression=exp.Count(this=col(c)))
        nulls = exp.GT(this=missing, expression=lit(0))
        lo, hi = _extremes(c, type_)
        select = select.select(lo.as_(f"lo_{i}"), hi.as_(f"hi_{i}"), nulls.as_(f"nulls_{i}"))
    return select


# Column types whose values `_bound` writes as literals, and Delta keeps file statistics of.
RANGED_TYPES = re.compile(
    r"(tinyint|smallint|int|bigint|decimal\(\d+,\d+\)|string|date|timestamp(_ntz)?|(var)?char\(\d+\))"
)


# Ranged types whose highest stored value a watermark carries (`Watermark.highs`): their statistics
# are an int (a timestamp's microseconds since the epoch) or a date.
TRACKED_TYPES = re.compile(r"(tinyint|smallint|int|bigint|date|timestamp)")


def tracked_columns(ranged: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """Of the ranged columns (in `delta_stats`' order), those whose highest stored value the
    watermark carries: name -> (position in the statistics, type)."""
    return {c: (i, t) for i, (c, t) in enumerate(ranged.items()) if TRACKED_TYPES.fullmatch(t)}


def _high(value: object) -> int | str | None:
    """A statistic as the watermark keeps it (JSON): an int, or a date's ISO text; None for
    anything else (its column is then left out: unknown)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    return None


def _statistic(high: int | str, type_: str) -> object:
    """A kept high back as the statistics give it (see `_high`)."""
    return datetime.date.fromisoformat(str(high)) if type_ == "date" else int(high)


def stored_highs(backing: TableName, tracked: Mapping[str, tuple[int, str]]) -> exp.Select:
    """Each tracked column's highest stored value (as `delta_stats` gives it: `hi_<position>`).
    Delta answers a plain MAX from its file statistics while no file has deleted rows."""
    return exp.select(*[_extremes(c, t)[1].as_(f"hi_{i}") for c, (i, t) in tracked.items()]).from_(backing.to_table())


def read_highs(refresh: Refresh, tracked: Mapping[str, tuple[int, str]]) -> dict[str, int | str | None]:
    row = refresh.query(sql(stored_highs(refresh.backing, tracked)))[0]
    highs: dict[str, int | str | None] = {}
    for c, (i, _) in tracked.items():
        if row[f"hi_{i}"] is None:
            highs[c] = None  # no stored row has a value there
        elif (kept := _high(row[f"hi_{i}"])) is not None:
            highs[c] = kept
    return highs


def above_stored(highs: Highs | None, tracked: Mapping[str, tuple[int, str]], stats: Mapping[str, Any]) -> bool:
    """Every change row lies above every stored row in some tracked column: its lowest value
    exceeds the highest stored one, and it has no NULL there. A stored row with a change row's
    identity tuple holds that row's values, so there is none: the change set appends."""
    for c, (i, type_) in tracked.items():
        if highs is None or c not in highs or stats.get(f"nulls_{i}") or stats.get(f"lo_{i}") is None:
            continue
        high = highs[c]
        if high is None or stats[f"lo_{i}"] > _statistic(high, type_):
            return True
    return False


def raised_highs(
    highs: Highs | None, tracked: Mapping[str, tuple[int, str]], stats: Mapping[str, Any]
) -> dict[str, int | str | None] | None:
    """The highs after a write of the change set: each the larger of the stored one and the change
    set's highest value (a bound for the rows it deletes too: it only needs to be at or above)."""
    if highs is None:
        return None
    raised: dict[str, int | str | None] = {}
    for c, (i, type_) in tracked.items():
        if c not in highs:
            continue
        high, new = highs[c], stats.get(f"hi_{i}")
        if new is None or (high is not None and _statistic(high, type_) >= new):
            raised[c] = high
        elif (kept := _high(new)) is not None:
            raised[c] = kept
    return raised


def ranged_columns(plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
    """The view columns the MERGE narrows by the change set's value range, with their types (see
    `value_ranges`)."""
    typed = {o.name: types.get(o.name, "").lower() for o in plan.outputs}
    return {name: type_ for name, type_ in typed.items() if RANGED_TYPES.fullmatch(type_)}


# Text the range filter writes as a literal: nothing a string literal would have to escape.
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9 _.,:;#@!?%&*()+=/-]*")
# A timestamp_ntz as Spark writes it as text, which it reads back as the same value.
_TIMESTAMP_TEXT = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?")


def _bound(value: object, type_: str) -> exp.Expr | None:
    """A literal Spark orders exactly as the value it came from (a column of type `type_`). A
    timestamp's is its instant (microseconds since the epoch: no time zone in between), a
    timestamp_ntz's its text. None where no literal is exact: doubles (NaN and -0.0), text that
    would need escaping, a timestamp_ntz whose text is not `yyyy-mm-dd hh:mm:ss[.f]` (a year
    past 9999)."""
    if type_ == "timestamp":
        return func("timestamp_micros", exp.Literal.number(value)) if isinstance(value, int) else None
    if type_ == "timestamp_ntz":
        if not isinstance(value, str) or not _TIMESTAMP_TEXT.fullmatch(value):
            return None
        return exp.cast(exp.Literal.string(value), exp.DataType.build("timestamp_ntz", dialect="spark"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, Decimal) and value.is_finite():
        return exp.Literal.number(format(value, "f"))  # positional: `1E+2` would be a DOUBLE
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("date"))
    if isinstance(value, str) and _PLAIN_TEXT.fullmatch(value):
        return exp.Literal.string(value)
    return None


def value_ranges(columns: Mapping[str, str], stats: Mapping[str, Any], table: str) -> list[exp.Expr]:
    """Per view column (name: type), the range of the change set's values that every stored row it
    matches lies in.

    The MERGE matches a stored row only where each view column equals a change row's (NULL-safe),
    so the row's value lies between the change set's smallest and largest, or is NULL if the
    change set has a NULL there: adding this to ON changes no match. Delta skips the files whose
    statistics lie outside it, in both passes of the MERGE: changes local in a column (recent
    orders) then read only the files that hold it, all the more on a storage laid out along it
    (`layout`). The probe whether a change set only appends (`existing_identities`) narrows the
    same way.
    """
    ranges: list[exp.Expr] = []
    for i, (c, type_) in enumerate(columns.items()):
        lo, hi, nulls = stats.get(f"lo_{i}"), stats.get(f"hi_{i}"), bool(stats.get(f"nulls_{i}"))
        target = col(c, table)
        if lo is None and hi is None:
            if nulls:
                ranges.append(exp.Is(this=target, expression=exp.null()))
            continue
        low, high = _bound(lo, type_), _bound(hi, type_)
        if low is None or high is None:
            continue
        between = exp.Between(this=target.copy(), low=low, high=high)
        ranges.append(exp.paren(exp.or_(exp.Is(this=target, expression=exp.null()), between)) if nulls else between)
    return ranges


# Join keys a term's other occurrences are narrowed by: types whose values `_bound` writes exactly
# and that compare without padding (CHAR and VARCHAR pad, so they are left out).
KEY_TYPES = re.compile(r"(tinyint|smallint|int|bigint|decimal\(\d+,\d+\)|string|date|timestamp(_ntz)?)")


def join_keys(plan: ViewPlan) -> dict[int, list[tuple[str, str, str, str]]]:
    """Per occurrence, (its column, another occurrence's alias, that one's column, their type) of
    each equality between two plain columns of one type that every row of the view satisfies: a
    conjunct of an inner join's ON or of the WHERE. Over outer joins: those of each join on the
    occurrence's way to the root (`outer_terms.outer_join_keys`)."""
    from dbt_ivm.classes.outer_terms import has_outer_join, outer_join_keys

    if has_outer_join(plan.tree):
        return outer_join_keys(plan)
    where = plan.query.args.get("where")
    # the view's own joins (also those of a parenthesized join), not a subquery's
    joins = [j for j in plan.query.find_all(exp.Join) if j.find_ancestor(exp.Select) is plan.query]
    keys: dict[int, list[tuple[str, str, str, str]]] = {}
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
    for eq in condition.flatten() if isinstance(condition, exp.And) else [condition]:
        eq = eq.unnest() if eq is not None else None
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
    """For each join key (`join_keys`) k of each staged change set i, one row per piece of its
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
                lo, hi = _extremes(value.name, type_)
                columns += [lo.as_(f"lo_{j}_{m}"), hi.as_(f"hi_{j}_{m}")]
            else:  # typed as `_extremes` gives that key's values, so the UNION ALL keeps its type
                typed = exp.cast(exp.null(), exp.DataType.build(other, dialect="spark"))
                columns += [_readable(typed.copy(), other).as_(f"{side}_{j}_{m}") for side in ("lo", "hi")]
        grouped = exp.select(col(piece.name).as_("p"), *columns)
        parts.append(
            grouped.from_(rows.from_(temp_table(name)).subquery(ident(f"{HIDDEN_PREFIX}k"))).group_by(col(piece.name))
        )
    return union_all(parts) if parts else None


def key_pieces(rows: Sequence[Mapping[str, Any]], prefix: str, type_: str) -> list[tuple[exp.Expr, exp.Expr]] | None:
    """The literal bounds of the change set's values of one key (`<prefix>` of `key_stats`' rows),
    pieces next to each other joined into one; [] without a value, None where some bound has no
    exact literal (`_bound`): then nothing may be narrowed by it."""
    found = sorted(
        (int(r["p"]), r[f"lo_{prefix}"], r[f"hi_{prefix}"]) for r in rows if r.get(f"lo_{prefix}") is not None
    )
    pieces: list[tuple[exp.Expr, exp.Expr]] = []
    last = None
    for p, lo, hi in found:
        low, high = _bound(lo, type_), _bound(hi, type_)
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
    hold its keys, not the whole source.
    """
    narrow: dict[int, dict[str, list[exp.Expr]]] = {}
    for i in sorted(staged):
        columns = _key_columns(keys, i)
        for column, other, other_column, type_ in keys.get(i, ()):
            pieces = key_pieces(rows, f"{i}_{columns.index((column, type_))}", type_)
            if pieces:
                between = [exp.Between(this=col(other_column), low=lo.copy(), high=hi.copy()) for lo, hi in pieces]
                narrow.setdefault(i, {}).setdefault(other, []).append(
                    between[0] if len(between) == 1 else exp.paren(exp.or_(*between))
                )
    return narrow


def narrowing(refresh: Refresh) -> Narrowing:
    """The filters `key_ranges` gives this refresh's terms, from one query over its staged change sets."""
    keys = join_keys(refresh.plan)
    stats = key_stats(refresh.staged, keys)
    if stats is None:
        return {}
    return key_ranges(refresh.staged, keys, refresh.query(sql(stats)))


def key_match(plan: ViewPlan, left: str, right: str) -> exp.Expr:
    """Identity tuple and view columns, NULL-safe: the hashes find the row, the columns make it exact.

    A source an outer join can pad has a NULL identity on its padded rows: matched NULL-safe.
    """
    rids = [
        (exp.EQ if s.side is Side.PRESERVED else exp.NullSafeEQ)(this=col(s.rid, left), expression=col(s.rid, right))
        for s in plan.sources
    ]
    outs = [exp.NullSafeEQ(this=col(o.name, left), expression=col(o.name, right)) for o in plan.outputs]
    return exp.and_(*rids, *outs)


def _stored_columns(plan: ViewPlan) -> list[str]:
    return [o.name for o in plan.outputs] + [s.rid for s in plan.sources]


def changed_identities(staged: Mapping[int, str], limit: int) -> exp.Select:
    """(occurrence, identity) of every change row, at most `limit` rows."""
    parts = [
        exp.select(lit(i).as_("i"), col(RID_COLUMN)).distinct().from_(temp_table(name))
        for i, name in sorted(staged.items())
    ]
    return exp.select("*").from_(union_all(parts).subquery(ident(f"{HIDDEN_PREFIX}ids"))).limit(limit)


def identity_filter(plan: ViewPlan, identities: Mapping[int, list[int]], table: str | None = None) -> exp.Expr:
    """Stored rows a change set can reach: a changed occurrence's identity column holds a change row's.

    Every key of the change set carries, in the column of the occurrence whose term produced it,
    the identity of one of that occurrence's change rows; so this is implied by the MERGE's match
    and adding it to ON changes no match. Delta evaluates it inside the target scan, so the
    MERGE's joins see only these rows instead of the whole view. (Delta prunes files for an IN
    list by its min..max only, which scattered hashes defeat: this filters rows, not files.)
    """
    parts = [
        exp.In(
            this=col(plan.sources[index].rid, table), expressions=[exp.Literal.number(v) for v in sorted(set(values))]
        )
        for index, values in sorted(identities.items())
        if values
    ]
    return exp.paren(exp.or_(*parts)) if parts else exp.false()


def existing_identities(
    plan: ViewPlan, backing: TableName, staged: Mapping[int, str], ranges: Sequence[exp.Expr] = ()
) -> exp.Select:
    """How many stored rows mention a changed source row (0: every changed key is new, append).

    Reads one bigint column of the view per changed occurrence: every key of the change set
    carries the identity of a change row in that occurrence's column. `ranges` (`value_ranges`
    over `t`) narrow it to the stored rows a change row can match, so on a storage laid out along
    them (`layout`) new rows beyond the stored ones read no file.
    """
    probes = []
    for i, name in sorted(staged.items()):
        target = backing.to_table()
        target.set("alias", exp.TableAlias(this=ident("t")))
        changed = exp.select(col(RID_COLUMN)).from_(temp_table(name)).subquery()
        found = exp.In(this=col(plan.sources[i].rid, "t"), query=changed)
        probes.append(exp.select(lit(1).as_("one")).from_(target).where(exp.and_(found, *[r.copy() for r in ranges])))
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(union_all(probes).subquery(ident(f"{HIDDEN_PREFIX}p")))


def insert_statement(plan: ViewPlan, backing: TableName, delta: str) -> exp.Insert:
    """Insert-only change set of brand-new identity tuples: append, no MERGE."""
    return _insert_stored(plan, backing, col(DELTA_COLUMN), temp_table(delta))


def _insert_stored(plan: ViewPlan, backing: TableName, count: exp.Expr, rows: exp.Expr) -> exp.Insert:
    """INSERT of `rows` into the backing table: its stored columns, and `count` as the count."""
    cols = _stored_columns(plan)
    select = exp.select(*[col(c) for c in cols], count.as_(ident(COUNT_COLUMN))).from_(rows)
    return exp.insert(select, backing.to_table(), columns=[ident(c) for c in [*cols, COUNT_COLUMN]])


def append_statement(
    plan: ViewPlan,
    backing: TableName,
    old: Mapping[str, int],
    new: Mapping[str, int],
    unique_key: tuple[str, ...],
    violation: str,
    broadcast: bool = False,
) -> exp.Insert:
    """The view's new rows straight from the change feeds, appended in one statement.

    For a monotone view whose moved sources only appended rows: every net change adds copies.
    The declared unique key makes each row new to the stored rows too, and is checked here on the
    rows added (a key or a row twice fails the INSERT with `violation`: nothing is written). A
    row whose key is NULL is held to no key (`key_not_null`), so nothing says it is new: it fails
    the INSERT with `NULL_KEY_FALLBACK`, and the caller refreshes through the general path. A
    negative change would mean the history lied about the appends: it fails as well, never applied.
    """
    delta = delta_select(plan, old, new, broadcast=broadcast)
    assert delta is not None
    d = col(DELTA_COLUMN)
    repeats = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[col(c) for c in unique_key])
    count = exp.Case(
        ifs=[
            exp.If(
                this=exp.LT(this=d.copy(), expression=lit(1)),
                true=raise_error(f"fast_mv {backing}: an appended source row removed a view row; nothing was written"),
            ),
            exp.If(this=exp.not_(key_not_null(unique_key)), true=raise_error(f"{NULL_KEY_FALLBACK} {backing}")),
            exp.If(
                this=exp.or_(exp.GT(this=d.copy(), expression=lit(1)), exp.GT(this=repeats, expression=lit(1))),
                true=raise_error(violation),
            ),
        ],
        default=lit(1),
    )
    return _insert_stored(plan, backing, count, delta.subquery(ident(f"{HIDDEN_PREFIX}a")))


def merge_statement(
    plan: ViewPlan,
    backing: TableName,
    delta: str,
    identities: Mapping[int, list[int]] | None = None,
    ranged: Mapping[str, str] | None = None,
    stats: Mapping[str, Any] | None = None,
) -> exp.Merge:
    """Apply signed multiplicities by identity tuple; a count that would go negative is corrupt state, loudly.

    Three clauses, the guards folded into the values: every extra clause costs the MERGE a pass
    over its rows. `identities` (see `identity_filter`) and the change set's `stats` (see
    `value_ranges`) narrow the target side.
    """
    t, s = "t", "s"
    new_count = exp.Add(this=col(COUNT_COLUMN, t), expression=col(DELTA_COLUMN, s))
    corrupt = (
        f"fast_mv {backing}: the change set removes rows the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )

    def positive_or_fail(value: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.GT(this=value.copy(), expression=lit(0)), true=value.copy(), false=raise_error(corrupt))

    cols = _stored_columns(plan)
    whens = [
        exp.When(
            matched=True,
            source=False,
            condition=exp.EQ(this=new_count.copy(), expression=lit(0)),
            then=exp.var("DELETE"),
        ),
        exp.When(
            matched=True,
            source=False,
            then=exp.Update(expressions=[exp.EQ(this=col(COUNT_COLUMN), expression=positive_or_fail(new_count))]),
        ),
        exp.When(
            matched=False,
            source=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c in [*cols, COUNT_COLUMN]]),
                expression=exp.Tuple(expressions=[col(c, s) for c in cols] + [positive_or_fail(col(DELTA_COLUMN, s))]),
            ),
        ),
    ]
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    on = key_match(plan, t, s)
    if identities is not None:
        on = exp.and_(on, identity_filter(plan, identities, t))
    if stats is not None:
        on = exp.and_(on, *value_ranges(ranged or {}, stats, t))
    return exp.Merge(
        this=target,
        using=temp_table(delta).as_(s),
        on=on,
        whens=exp.Whens(expressions=whens),
    )


class JoinRules:
    MONOTONE = True
    INSERTS = True

    def stages_changes(self, plan: ViewPlan) -> bool:
        return True  # read by the change set, its statistics, the identity filter and the probe

    def build_select(self, plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        return view_select(plan, backing)

    def append_statement(
        self,
        plan: ViewPlan,
        backing: TableName,
        old: Mapping[str, int],
        new: Mapping[str, int],
        unique_key: tuple[str, ...],
        violation: str,
        broadcast: bool = False,
    ) -> exp.Insert:
        return append_statement(plan, backing, old, new, unique_key, violation, broadcast)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the net change per identity tuple once, then one MERGE, INSERT, or nothing."""
        plan = refresh.plan
        narrow = narrowing(refresh)
        flips, detail = self.flips(refresh, narrow)
        delta = delta_select(
            plan, refresh.old, refresh.new, refresh.staged, flips=flips, stage=stager(refresh), narrow=narrow
        )
        assert delta is not None
        name = refresh.temp("delta")  # after the levels it reads: temporaries are released newest first
        refresh.run(cache_as(name, delta))
        ranged = self.ranged_columns(plan, refresh.output_types)
        stats = refresh.query(sql(delta_stats(name, refresh.unique_key, ranged)))[0]
        n, min_d = int(stats["n"]), int(stats["min_d"] or 0)
        inserted, deleted = int(stats["inserted"]), int(stats["deleted"])
        keyed = int(stats["keyed"]) if refresh.unique_key else 0
        if keyed and min_d > 0 and (int(stats["keyed_max_d"]) > 1 or int(stats["keys"]) < keyed):
            raise StateError(refresh.key_violation)
        if n == 0:
            return Write("empty", empty_commit(refresh.backing), 0, 0, detail, highs=refresh.highs)
        tracked, highs = tracked_columns(ranged), refresh.highs
        if min_d > 0 and not refresh.unique_key and highs is None and tracked:
            highs = read_highs(refresh, tracked)  # once: the watermark carries them from now on
        raised = raised_highs(highs, tracked, stats)
        if min_d > 0 and (
            (refresh.unique_key and keyed == n)  # a NULL key makes no row new: probe for it
            or above_stored(highs, tracked, stats)
            or self.all_new(refresh, name, value_ranges(ranged, stats, "t"))
        ):
            return Write("insert", insert_statement(plan, refresh.backing, name), inserted, 0, detail, highs=raised)
        identities = self.changed_identities(refresh, name)
        merge = merge_statement(plan, refresh.backing, name, identities, ranged, stats)
        return Write("merge", merge, inserted, deleted, detail, check_repeats=True, highs=raised)

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return ranged_columns(plan, types)

    def flips(self, refresh: Refresh, narrow: Narrowing) -> tuple[frozenset[int], str]:
        """The occurrences that take an outer join's unique-key flip, and a log detail: none here."""
        return frozenset(), ""

    def changed_identities(self, refresh: Refresh, delta: str) -> dict[int, list[int]] | None:
        """Each changed occurrence's change-row identities, or None when too many to write out."""
        return read_identities(refresh, changed_identities(refresh.staged, MAX_FILTER_IDENTITIES + 1))

    def all_new(self, refresh: Refresh, delta: str, ranges: Sequence[exp.Expr] = ()) -> bool:
        """No stored row mentions a changed source row: the change set only appends. `ranges`:
        the change set's value ranges over the stored rows `t` (a stored row outside them
        matches no change row, see `value_ranges`).

        Skipped under a declared unique key: a row this refresh adds cannot share its key with a
        stored row without the model's rows repeating the key.
        """
        probe = existing_identities(refresh.plan, refresh.backing, refresh.staged, ranges)
        rows = refresh.query(sql(probe))
        return int(rows[0]["n"]) == 0

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        lines = []
        for table in plan.tables:
            lines.append(f"  change to {table}:")
            for s in (s for s in plan.sources if s.table.key == table.key):
                others = [o.alias for o in plan.sources if o.index != s.index]
                lines.append(
                    f"    {s.alias}: net change feed per row identity (inserts +1, deletes -1, update images "
                    f"cancel when no used column changed)"
                    + (
                        f"; joined with {', '.join(others)} (earlier occurrences at the new version, later at the "
                        f"consumed version)"
                        if others
                        else ""
                    )
                )
            lines.append(
                "    apply: one MERGE on the identity tuple (count += delta, delete at 0), "
                "or one INSERT when every changed identity is new; no changes: no write"
            )
        return lines


def read_identities(refresh: Refresh, query: exp.Select) -> dict[int, list[int]] | None:
    """{occurrence: identities} from `query`'s (i, identity) rows, or None past the filter's limit."""
    rows = refresh.query(sql(query))
    if len(rows) > MAX_FILTER_IDENTITIES:
        return None
    identities: dict[int, list[int]] = {i: [] for i in refresh.staged}
    for row in rows:
        identities.setdefault(int(row["i"]), []).append(int(row[RID_COLUMN]))
    return identities


RULES = JoinRules()
