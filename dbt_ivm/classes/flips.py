"""Oracle's unique-key flip over outer joins: where a change's values of the columns ON equates
are unique in its source before and after it (checked each refresh, `decide_flips`), a padded
row flips with its one match, and the compensation reads neither the source nor the preserved rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from dbt_ivm.classes.jointree import outer_parent, own_ranges
from dbt_ivm.classes.keys import key_equalities
from dbt_ivm.classes.relations import Narrowing, copies, snapshot_relation, union_all
from dbt_ivm.classes.rules import Refresh
from dbt_ivm.ir import HIDDEN_PREFIX, ViewPlan
from dbt_ivm.render import col, func, ident, lit, sql

REPEATS = f"{HIDDEN_PREFIX}repeats"  # `with_repeats`' column


def flip_keys(plan: ViewPlan) -> dict[int, tuple[str, ...]]:
    """{occurrence: its columns ON equates with the other side}, for each source that is the
    null-supplied side (or a FULL side) of an outer join, whose other side is preserved.

    When a change's values of these columns are unique in the source before and after it, a
    preserved row matches at most one of its rows, so its padded row flips with the match: the
    unique-key algorithm (Oracle's), without reading the source for the compensation.

    Only equalities of plain columns of one type count (`keys.key_equalities`): uniqueness is
    judged on the stored values, and it is the values the join compares only where Spark casts
    neither side. `a.id = p.code` with `code` a STRING compares `'1'` and `'01'` as the same
    number: two rows with distinct stored codes both match account 1.
    """
    out: dict[int, tuple[str, ...]] = {}
    for source in plan.sources:
        node = outer_parent(plan.tree, source.index)
        if node is None:
            continue
        keys: list[str] = []
        for (a, a_column), (b, b_column), _ in key_equalities(plan, node.on):
            for (mine, column), other in (((a, a_column), b), ((b, b_column), a)):
                if mine.index == source.index and other.index != source.index and column not in keys:
                    keys.append(column)
        if keys:
            out[source.index] = tuple(keys)
    return out


def _occurrences_with_rows(parts: Sequence[tuple[int, exp.Select]]) -> exp.Select:
    """Rows (i), one for each occurrence i whose query returns a row (each stops at its first)."""
    found = [exp.select(lit(i).as_("i")).from_(q.subquery(ident(f"{HIDDEN_PREFIX}k"))).limit(1) for i, q in parts]
    return exp.select(col("i")).distinct().from_(union_all(found).subquery(ident(f"{HIDDEN_PREFIX}dups")))


def duplicate_keys(
    plan: ViewPlan,
    keys: Mapping[int, tuple[str, ...]],
    versions: list[tuple[int, int, str]],
    narrow: Narrowing | None = None,
) -> exp.Select:
    """Occurrences whose change rows' key values (`staged`, non-NULL) repeat in the source at a
    version: rows (i) for each (occurrence i, version, staged change set) where some do. The
    source is read only within the change set's ranges of those keys that `narrow` has (its
    filters on the occurrence itself, `outer_join_keys`): a row that repeats a change row's key
    values lies in them."""
    parts = []
    for index, version, staged in versions:
        source = plan.sources[index]
        change = f"{HIDDEN_PREFIX}s"
        match = exp.and_(*[exp.EQ(this=col(k, source.alias), expression=col(k, change)) for k in keys[index]])
        where = own_ranges((narrow or {}).get(index, {}), source.alias, keys[index])
        dups = (
            exp.select(*[col(k, source.alias) for k in keys[index]])
            .from_(snapshot_relation(source, version, with_rid=False, where=where))
            .join(
                exp.Table(this=ident(staged), alias=exp.TableAlias(this=ident(change))), on=match, join_type="left semi"
            )
            .group_by(*[col(k, source.alias) for k in keys[index]])
            .having(exp.GT(this=exp.Count(this=exp.Star()), expression=lit(1)))
        )
        parts.append((index, dups))
    return _occurrences_with_rows(parts)


def repeated_in_change(plan: ViewPlan, keys: Mapping[int, tuple[str, ...]], staged: Mapping[int, str]) -> exp.Select:
    """Occurrences whose change itself repeats key values (`staged`, non-NULL): rows (i) for each
    i where the rows it inserts, or those it deletes, hold some key values more than once. Those
    values then repeat in the source after the change, or before it: the change set alone shows
    it, without reading the source (new orders with several lines each)."""
    parts = []
    for index, staged_rows in sorted(staged.items()):
        key = [col(k) for k in keys[index]]
        repeats = (
            exp.select(*key)
            .from_(exp.Table(this=ident(staged_rows)))
            .where(exp.and_(*[exp.not_(exp.Is(this=k.copy(), expression=exp.Null())) for k in key]))
            .group_by(*[k.copy() for k in key])
            .having(exp.or_(*[exp.GT(this=exp.Sum(this=c), expression=lit(1)) for c in copies()]))
        )
        parts.append((index, repeats))
    return _occurrences_with_rows(parts)


def repeats_check(refresh: Refresh) -> exp.Select | None:
    """`repeated_in_change` over this refresh's flip candidates (the staged occurrences with
    `flip_keys`); None where there is none."""
    keys = flip_keys(refresh.plan)
    candidates = {i: refresh.staged[i] for i in keys if i in refresh.staged}
    return repeated_in_change(refresh.plan, keys, candidates) if candidates else None


def with_repeats(query: exp.Query, check: exp.Select) -> exp.Select:
    """`query`'s rows, each with `check`'s answer (`_occurrences_with_rows`) as 'i,j,…' in column
    `REPEATS`: two questions over the staged change sets in one round trip (`repeats_in`)."""
    listed = func("concat_ws", lit(","), func("collect_list", exp.cast(col("i"), "string")))
    answer = exp.select(listed).from_(check.subquery(ident(f"{HIDDEN_PREFIX}r"))).subquery()
    return exp.select(exp.Star(), answer.as_(ident(REPEATS))).from_(query.subquery(ident(f"{HIDDEN_PREFIX}q")))


def repeats_in(rows: Sequence[Mapping[str, Any]]) -> frozenset[int] | None:
    """The occurrences `with_repeats` answered, from any of its rows; None without a row."""
    if not rows:
        return None
    return frozenset(int(i) for i in str(rows[0].get(REPEATS) or "").split(",") if i)


def decide_flips(
    refresh: Refresh, narrow: Narrowing, answered: frozenset[int] | None = None
) -> tuple[frozenset[int], str]:
    """The changed occurrences that take the unique-key flip in this refresh, and a log detail:
    those whose change rows' key values are unique in the source at both versions. The change
    sets are asked first (`repeats_check`, unless `answered` already); the sources, narrowed by
    `narrow`, only for the occurrences whose change repeats no key values (`duplicate_keys`)."""
    plan = refresh.plan
    keys = flip_keys(plan)
    candidates = [i for i in keys if i in refresh.staged]
    check = repeats_check(refresh)
    if check is None:
        return frozenset(), ""
    repeated = set(answered) if answered is not None else {int(row["i"]) for row in refresh.query(sql(check))}
    versions = [
        (i, version, refresh.staged[i])
        for i in candidates
        if i not in repeated
        for version in (refresh.old[plan.sources[i].table.key], refresh.new[plan.sources[i].table.key])
    ]
    if versions:
        repeated |= {int(row["i"]) for row in refresh.query(sql(duplicate_keys(plan, keys, versions, narrow)))}
    flips = frozenset(i for i in candidates if i not in repeated)
    said = [f"{plan.sources[i].alias} ({', '.join(keys[i])}) unique: padded rows flipped" for i in sorted(flips)]
    said += [f"{plan.sources[i].alias} ({', '.join(keys[i])}) repeats: general compensation" for i in sorted(repeated)]
    return flips, "; ".join(said)
