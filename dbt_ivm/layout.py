"""How a view's storage is laid out: `cluster_by`, the columns its files are ranges of.

A refresh's MERGE reads the stored rows its change set can reach; Delta skips the files whose
statistics lie outside the change set's value ranges (`classes.joins.value_ranges`). On a
storage written in arrival order every file spans every value, so only the new rows' files are
skipped. With `cluster_by`, a build writes the rows sorted by those columns, in files of at most
`FILE_ROWS` rows: each file then holds a narrow range of them, and a change local in them
(recent dates, the newest orders) reads and rewrites only the few files of its range. What a
refresh inserts goes to new files of its change rows only; refreshes do not re-sort, the next
build does. The layout changes no row: `cluster_by` is not part of the view's definition, and a
changed one applies from the next build.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt_ivm.errors import ConfigError
from dbt_ivm.ir import Role, ViewPlan
from dbt_ivm.render import col, func, ident, lit, output_columns

# Rows per file of a clustered storage: at 10M rows, 40 files, of which a change to the newest
# 1 % reads one or two. Smaller files would skip more and make the build slower.
FILE_ROWS = 250_000
MAX_RECORDS_CONF = "spark.sql.files.maxRecordsPerFile"
# A grouped build sorts each range by the whole grouping key and groups the sorted rows as they
# stream by (one sort aggregate), instead of a partial and a final hash aggregate over rows that
# are nearly all distinct (measured in docs/journal.md).
# Spark plans it only when its optimizer keeps a sort below an aggregate (it drops it otherwise,
# since a count does not depend on order) and replaces a hash aggregate whose input is sorted by
# its keys. Both change the plan, never the rows.
EXCLUDED_RULES_CONF = "spark.sql.optimizer.excludedRules"
KEEP_SORTS = "org.apache.spark.sql.catalyst.optimizer.EliminateSorts"
SORT_AGGREGATE_CONF = "spark.sql.execution.replaceHashWithSortAgg"


@dataclass(frozen=True)
class Setting:
    """A session setting a build's write runs under: its value from the session's own ('' when
    the session has none)."""

    key: str
    value: Callable[[str], str]


def _file_rows(before: str) -> str:
    """At most FILE_ROWS rows per file, or the session's smaller limit."""
    return str(min(FILE_ROWS, int(before))) if before.isdigit() and int(before) > 0 else str(FILE_ROWS)


def _keeping_sorts(before: str) -> str:
    rules = [r.strip() for r in before.split(",") if r.strip()]
    return ",".join(rules if KEEP_SORTS in rules else [*rules, KEEP_SORTS])


FILES = Setting(MAX_RECORDS_CONF, _file_rows)
SORTED_GROUPING = (Setting(EXCLUDED_RULES_CONF, _keeping_sorts), Setting(SORT_AGGREGATE_CONF, lambda _: "true"))
# Key types whose equal values are equal bytes. The sort aggregate tells groups apart by their
# bytes, where Spark's hash aggregate first normalizes floating-point keys: with a raw DOUBLE
# key, 0.0 and -0.0 sort as equal, interleave, and come out as several stored rows of one key
# (measured), which a refresh's MERGE would then match together; so a FLOAT or DOUBLE key is
# normalized first (`_normal`). Collated strings and complex types keep the hash aggregate.
FLOATING = ("float", "double")
BYTE_EQUAL = re.compile(
    r"tinyint|smallint|int|bigint|decimal\(\d+,\s*\d+\)|string|(var)?char\(\d+\)"
    r"|date|timestamp|timestamp_ntz|boolean|binary"
)


@dataclass(frozen=True)
class Clustered:
    """A build's rows as its write lays them out, and the settings the write runs under."""

    select: exp.Select
    settings: tuple[Setting, ...] = ()


def cluster_columns(
    plan: ViewPlan, cluster_by: object, ranged: Mapping[str, str], types: Mapping[str, str]
) -> tuple[str, ...]:
    """The model's `cluster_by` as output column names; each must be one the refresh narrows by
    (`ranged`, the view class's), or the sort would cost the build and buy nothing. `types`: the
    view's column types, for the message."""
    columns = output_columns(plan, cluster_by, "cluster_by")
    unranged = [c for c in columns if c not in ranged]
    if unranged:
        named = ", ".join(f"{c!r} ({types.get(c, 'unknown type')})" for c in unranged)
        narrows = f"by {', '.join(ranged)}" if ranged else "by none of its columns"
        raise ConfigError(
            f"cluster_by {named} cannot narrow this view's refresh: a refresh reads only the files of "
            f"its changes' range in a column of integral, decimal, string, date or timestamp type of a "
            f"view without GROUP BY, and this view's refresh narrows {narrows}; drop them from cluster_by"
        )
    return columns


def stored_types(plan: ViewPlan, output_types: Mapping[str, str]) -> dict[str, str]:
    """The types of the columns a build groups its rows by: the view's, and its row identities
    (64-bit hashes)."""
    rids = {h.name: "bigint" for h in plan.hidden if h.role is Role.ROW_IDENTITY}
    return {**output_types, **rids}


def clustered(select: exp.Select, columns: Sequence[str], types: Mapping[str, str]) -> Clustered:
    """The build's rows sorted by `columns` (NULLs first), so each file written holds a range of them.

    A build that groups its rows (a join's stored multiplicity) takes them range-partitioned by
    `columns` before grouping (`_ranged_before_grouping`): a range partitioning clusters the
    grouping keys too, so the grouping needs no shuffle of its own, and the files are the same
    ranges as under ORDER BY (the CTAS of a 10M-row LEFT JOIN: 23.6 to 24.4 s -> 18.1 to 20.3 s).
    When each key's equal values can be made equal bytes (`types`: the select's column types), it
    sorts each range by the key, `columns` first, and groups the sorted rows as they stream by
    (`SORTED_GROUPING`; the filter's CTAS at 100M rows: 57-73 s -> 33-34 s)."""
    if not columns:
        return Clustered(select)
    order = [exp.Ordered(this=col(c), nulls_first=True) for c in columns]
    grouped = _ranged_before_grouping(select, columns)
    if grouped is None:
        return Clustered(select.order_by(*order, copy=True), (FILES,))
    keys = grouped.args["group"].expressions
    plain = all(_is_column(k, k.name) for k in keys)
    sorted_rows = _sorted_by_key(grouped.args["from_"].this.this, [k.name for k in keys], types) if plain else None
    if sorted_rows is None:
        return Clustered(grouped.sort_by(*order, copy=False), (FILES,))
    grouped.args["from_"].this.set("this", sorted_rows)
    return Clustered(grouped.sort_by(*order, copy=False), (FILES, *SORTED_GROUPING))


def _sorted_by_key(ranged: exp.Select, keys: Sequence[str], types: Mapping[str, str]) -> exp.Select | None:
    """`ranged` (the range-partitioned rows: `SELECT * FROM (derived)`) sorted by `keys`, each
    FLOAT or DOUBLE key as the hash aggregate groups it (`_normal`); None when a key's equal
    values can differ in bytes otherwise (`BYTE_EQUAL`), or the derived table's columns are not
    named."""
    key_types = {k: types.get(k, "").strip().lower() for k in keys}
    floating = {k: t for k, t in key_types.items() if t in FLOATING}
    if not all(t in FLOATING or BYTE_EQUAL.fullmatch(t) for t in key_types.values()):
        return None
    if floating:
        names = ranged.args["from_"].this.this.named_selects
        if not set(floating) <= set(names) or "*" in names:
            return None
        ranged.set("expressions", [_normal(n, floating[n]) if n in floating else col(n) for n in names])
    return ranged.sort_by(*(exp.Ordered(this=col(k), nulls_first=True) for k in keys), copy=False)


def _normal(name: str, type_: str) -> exp.Expr:
    """A FLOAT or DOUBLE column as Spark's hash aggregate normalizes a key before grouping: every
    NaN as the one NaN, -0.0 as 0.0. Spark sorts them as equal; the sort aggregate would tell
    them apart."""
    value, typed = col(name), exp.DataType.build(type_)
    return exp.Case(
        ifs=[
            exp.If(this=func("isnan", value), true=exp.cast(lit("NaN"), typed)),
            exp.If(this=exp.EQ(this=value.copy(), expression=exp.cast(lit(0), typed)), true=exp.cast(lit(0), typed)),
        ],
        default=value.copy(),
    ).as_(ident(name))


def _ranged_before_grouping(select: exp.Select, columns: Sequence[str]) -> exp.Select | None:
    """`select` with its one derived table range-partitioned by `columns`, grouped by its keys
    with `columns` first, when it groups that table's rows and projects each of `columns` as the
    derived table's column of that name; else None."""
    source = select.args.get("from_")
    derived = source.this if source is not None else None
    group = select.args.get("group")
    if not group or select.args.get("joins") or not isinstance(derived, exp.Subquery):
        return None
    projected = {e.alias_or_name: e.unalias() for e in select.expressions}
    for c in columns:
        column = projected.get(c)
        if not isinstance(column, exp.Column) or column.table or column.name != c:
            return None
    hint = exp.Hint(expressions=[exp.Anonymous(this="REPARTITION_BY_RANGE", expressions=[col(c) for c in columns])])
    ranged = exp.select(exp.Star()).from_(derived.copy())
    ranged.set("hint", hint)
    grouped = select.from_(ranged.subquery(derived.alias_or_name), copy=True)
    first = [k for c in columns for k in group.expressions if _is_column(k, c)]
    rest = [k for k in group.expressions if not any(k is f for f in first)]
    return grouped.group_by(*(k.copy() for k in [*first, *rest]), append=False)


def _is_column(key: exp.Expr, name: str) -> bool:
    return isinstance(key, exp.Column) and not key.table and key.name == name
