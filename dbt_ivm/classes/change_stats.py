"""A change set's statistics, read in one query before its write: its size, whether a declared
unique key holds over it, each ranged column's smallest and largest value (`delta_stats`); the
literal ranges those give the MERGE and the append probe (`value_ranges`); and the highest stored
values a watermark carries, which tell a change set that lies above every stored row (`above_stored`).
"""

from __future__ import annotations

import datetime
import enum
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dbt_ivm.classes.relations import copies
from dbt_ivm.classes.rules import Refresh
from dbt_ivm.ir import DELTA_COLUMN, TableName, ViewPlan
from dbt_ivm.metadata import Highs
from dbt_ivm.render import col, func, lit, sql, temp_table


class Stat(str, enum.Enum):
    """A statistic of the change set a query computes per tracked column or join key, named
    `<stat>_<index>`: the query writes it under `of(index)`, the code reads the row's value by it."""

    LO = "lo"
    HI = "hi"
    NULLS = "nulls"

    def of(self, *index: object) -> str:
        return "_".join([self.value, *(str(i) for i in index)])


def readable(value: exp.Expr, type_: str) -> exp.Expr:
    """A value of type `type_` as `bound` reads it: a timestamp's in microseconds since the
    epoch, a timestamp_ntz's as text, any other as itself."""
    if type_ == "timestamp":
        return func("unix_micros", value)
    if type_ == "timestamp_ntz":
        return exp.cast(value, exp.DataType.build("string"))
    return value


def extremes(column: str, type_: str) -> tuple[exp.Expr, exp.Expr]:
    """MIN and MAX of `column` as `bound` reads them (`readable`)."""
    return readable(exp.Min(this=col(column)), type_), readable(exp.Max(this=col(column)), type_)


def key_not_null(unique_key: Sequence[str]) -> exp.Expr:
    """Whether a row's declared unique key is a value: none of its columns NULL. As dbt's `unique`
    test, only such rows are held to the key: two rows whose key is NULL share no key value (a
    LEFT JOIN's unmatched rows, padded with NULL), and the key says nothing about them either."""
    return exp.and_(*[exp.not_(exp.Is(this=col(c), expression=exp.Null())) for c in unique_key])


def change_size(name: str) -> exp.Select:
    """Rows of the change set `name` (`n`), and the copies they insert and delete."""
    pos, neg = copies()
    return exp.select(
        exp.Count(this=exp.Star()).as_("n"),
        func("coalesce", exp.Sum(this=pos), lit(0)).as_("inserted"),
        func("coalesce", exp.Sum(this=neg), lit(0)).as_("deleted"),
    ).from_(temp_table(name))


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
    select = change_size(name).select(exp.Min(this=d.copy()).as_("min_d"), copy=False)
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
        lo, hi = extremes(c, type_)
        select = select.select(lo.as_(Stat.LO.of(i)), hi.as_(Stat.HI.of(i)), nulls.as_(Stat.NULLS.of(i)))
    return select


# Column types whose values `bound` writes as literals, and Delta keeps file statistics of.
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
    return exp.select(*[extremes(c, t)[1].as_(Stat.HI.of(i)) for c, (i, t) in tracked.items()]).from_(
        backing.to_table()
    )


def read_highs(refresh: Refresh, tracked: Mapping[str, tuple[int, str]]) -> dict[str, int | str | None]:
    row = refresh.query(sql(stored_highs(refresh.backing, tracked)))[0]
    highs: dict[str, int | str | None] = {}
    for c, (i, _) in tracked.items():
        if row[Stat.HI.of(i)] is None:
            highs[c] = None  # no stored row has a value there
        elif (kept := _high(row[Stat.HI.of(i)])) is not None:
            highs[c] = kept
    return highs


def above_stored(highs: Highs | None, tracked: Mapping[str, tuple[int, str]], stats: Mapping[str, Any]) -> bool:
    """Every change row lies above every stored row in some tracked column: its lowest value
    exceeds the highest stored one, and it has no NULL there. A stored row with a change row's
    identity tuple holds that row's values, so there is none: the change set appends."""
    for c, (i, type_) in tracked.items():
        if highs is None or c not in highs or stats.get(Stat.NULLS.of(i)) or stats.get(Stat.LO.of(i)) is None:
            continue
        high = highs[c]
        if high is None or stats[Stat.LO.of(i)] > _statistic(high, type_):
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
        high, new = highs[c], stats.get(Stat.HI.of(i))
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


def bound(value: object, type_: str) -> exp.Expr | None:
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
        lo, hi, nulls = stats.get(Stat.LO.of(i)), stats.get(Stat.HI.of(i)), bool(stats.get(Stat.NULLS.of(i)))
        target = col(c, table)
        if lo is None and hi is None:
            if nulls:
                ranges.append(exp.Is(this=target, expression=exp.null()))
            continue
        low, high = bound(lo, type_), bound(hi, type_)
        if low is None or high is None:
            continue
        between = exp.Between(this=target.copy(), low=low, high=high)
        ranges.append(exp.paren(exp.or_(exp.Is(this=target, expression=exp.null()), between)) if nulls else between)
    return ranges
