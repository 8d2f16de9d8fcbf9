"""Window views, maintained by partition: ROW_NUMBER, RANK, LAG/LEAD, FIRST_VALUE, aggregates
OVER frames … over one source, joins, or a UNION ALL leaf (see `analyze.windows`,
`analyze.union_leaf`).

Stored row: the columns of the SELECT that computes the windows (`Windows.select`), the value of
each PARTITION BY expression its windows share (`__ivm_p_<i>`) and a multiplicity
(`__ivm_count`); only the rows the outer WHERE keeps (`… WHERE rn = 1`: one row per key, not
every version). `ref()` repeats each row `count` times and applies the model's query over them.
A SELECT DISTINCT window SELECT stays DISTINCT in the build and the recompute (each row counted
once): the analysis accepts it only where equal rows share a partition.

A window's value depends on its whole partition, so a refresh recomputes whole partitions: those
the change touches, the partition keys of the rows the change adds to or removes from the
windows' FROM and WHERE (the telescoping change terms of `changes.delta_terms`, netted per row:
a row whose copies cancel touches nothing; over a UNION ALL leaf, the keys of the leaf's change
rows, `classes.union_leaf`, each source's feed netted already). Each is recomputed from the
sources at the pinned versions, its stored rows are subtracted, and one MERGE applies the
difference: rows that did not change are not rewritten (`by_key`, shared with semi-join views).
A view whose windows share no PARTITION BY expression is one partition: every change recomputes
all of it.

A keep-the-first (`… WHERE rn = 1` over `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) AS rn`,
its only window: `Windows.first`) stores each kept row's ORDER BY values too (`__ivm_o_<i>`),
and recomputes from the sources only the partitions whose kept row a change may remove: those
where a removed row has the kept row's ORDER BY values (`first_parts`). In any other touched
partition the kept row is still there and is the first of the rows left, so the first row after
the change is the first of the kept row and the added rows, by the model's own ORDER BY
(`first_rows`): no source is read for it. Ties are as the model's: ROW_NUMBER picks among equal
ORDER BY values as Spark does.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.classes import by_key
from dbt_ivm.classes.joins import narrowing, repeated_rows
from dbt_ivm.classes.relations import Narrowing, snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Write, WritePath
from dbt_ivm.classes.union_leaf import leaf_relations, leaf_terms
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    Source,
    TableName,
    ViewPlan,
    Windows,
    order_column,
    partition_column,
)
from dbt_ivm.render import cache_as, col, empty_commit, ident, lit, sql, temp_table

RECOMPUTE = f"{HIDDEN_PREFIX}r"  # a touched partition of a keep-the-first whose kept row may be removed


def _windows(plan: ViewPlan) -> Windows:
    assert plan.windows is not None, "not a window view"
    return plan.windows


def _keys(plan: ViewPlan) -> list[str]:
    return [partition_column(i) for i in range(len(_windows(plan).partition_by))]


def _orders(plan: ViewPlan) -> list[str]:
    return [order_column(i) for i in range(len(_windows(plan).first))]


def stored_columns(plan: ViewPlan) -> list[str]:
    """The window SELECT's columns, the partition keys and a keep-the-first's ORDER BY values:
    what identifies a stored row."""
    return [e.alias_or_name for e in _windows(plan).select.expressions] + _keys(plan) + _orders(plan)


def _key_values(plan: ViewPlan) -> list[exp.Expr]:
    """Each partition key's and ORDER BY value's expression over the window SELECT's FROM, named."""
    windows = _windows(plan)
    keys = [p.copy().as_(ident(k)) for p, k in zip(windows.partition_by, _keys(plan), strict=True)]
    return keys + [o.this.copy().as_(ident(k)) for o, k in zip(windows.first, _orders(plan), strict=True)]


def _with_keys(select: exp.Select, plan: ViewPlan) -> exp.Select:
    return select.select(*_key_values(plan), copy=False)


def stored_filter(plan: ViewPlan) -> exp.Expr | None:
    """The outer query's WHERE over the windows' rows (`… WHERE rn = 1`), when the storage can
    hold only the rows it keeps: a row's window values depend on its partition only, and a
    refresh recomputes whole partitions, so the filter is exact per row. None: no outer query,
    no WHERE, or one with a subquery (then evaluated where `ref()` reads)."""
    if any(e.find(exp.Window) for e in plan.query.expressions):  # the windows are the model's own
        return None
    where = plan.query.args.get("where")
    if where is None or where.find(exp.Select, exp.Subquery, exp.Exists) is not None:
        return None
    kept: exp.Expr = where.this
    return kept


def _rows(
    plan: ViewPlan, versions: Mapping[str, int], touched: str | None = None, only: exp.Expr | None = None
) -> exp.Select:
    """The window SELECT's rows at `versions`, with their partition keys, those the outer WHERE
    keeps (`stored_filter`); `touched`: only the partitions whose keys that table holds (a
    partition's windows read only its own rows), `only`: of those, where it holds."""
    if plan.union is not None:  # the leaf's branches at the versions, in the placeholder's place
        rels = leaf_relations(plan, versions)
    else:
        rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    select = _with_keys(substitute(_windows(plan).select, rels), plan)
    if touched is not None and _keys(plan):
        select.append("joins", by_key.semi_join(touched, _windows(plan).partition_by, _keys(plan), only))
    kept = stored_filter(plan)
    if kept is None:
        return select
    derived = plan.query.args["from_"].this  # the outer query reads the window SELECT by this alias
    return (
        exp.select(*[col(c) for c in stored_columns(plan)])
        .from_(select.subquery(ident(derived.alias_or_name)))
        .where(kept.copy())
    )


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """The storage at the pinned versions: each distinct row with its partition keys and count."""
    return by_key.counted(_rows(plan, versions), stored_columns(plan), exp.Count(this=exp.Star()), COUNT_COLUMN)


def touched_select(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    narrow: Narrowing | None = None,
) -> exp.Select | None:
    """The distinct partition keys of the rows a change adds to or removes from the windows' FROM
    and WHERE: the change terms' rows, netted per row (each occurrence's identity and columns),
    those whose copies do not cancel. With no PARTITION BY, one row when anything changed.
    `narrow`: see `joins.narrowing`. None when no source moved."""
    windows = _windows(plan)
    values = [p.copy().as_(ident(k)) for p, k in zip(windows.partition_by, _keys(plan), strict=True)]
    query = windows.select.copy()
    for arg in ("distinct", "group", "having"):  # the FROM's change rows, each with its multiplicity
        query.set(arg, None)
    net: exp.Select | None
    if plan.union is not None:  # the leaf's change rows, already netted per source (`changes.change_select`)
        query.set("expressions", values)
        terms = leaf_terms(plan, query, old, new, staged)
        change = union_all(terms).subquery(ident(f"{HIDDEN_PREFIX}lc")) if terms else None
        found: list[exp.Expr] = [col(v.alias) for v in values] or [exp.true()]
        net = exp.select(*found).from_(change) if change else None
    else:
        row = by_key.row_columns(plan.sources, _rid)
        query.set("expressions", [*values, *row])
        names = [v.alias for v in values] + [r.alias for r in row]
        net = by_key.net_rows(plan, query, names, old, new, staged, narrow)
    if net is None:
        return None
    keys: list[exp.Expr] = [col(k) for k in _keys(plan)] or [exp.true().as_(ident(f"{HIDDEN_PREFIX}all"))]
    return exp.select(*keys).distinct().from_(net.subquery(ident(f"{HIDDEN_PREFIX}n")))


def _rid(source: Source) -> str:
    return source.rid


def delta_select(plan: ViewPlan, backing: TableName, new: Mapping[str, int], touched: str) -> exp.Select:
    """The touched partitions' rows recomputed at `new` (+count) and as stored (-count), summed
    per stored row: the rows whose multiplicity changes, by how much (`by_key.delta_select`)."""
    return by_key.delta_select(_rows(plan, new, touched), stored_columns(plan), _keys(plan), backing, touched)


def kept_first(plan: ViewPlan) -> bool:
    """A keep-the-first whose touched partitions the kept rows may settle (`first_parts`): one
    that does not read a UNION ALL leaf, whose change rows come from `leaf_terms` instead."""
    return bool(_windows(plan).first) and bool(_keys(plan)) and plan.union is None


def first_changes(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    narrow: Narrowing | None = None,
) -> exp.Select | None:
    """A keep-the-first's change rows as stored rows would hold them (`rn` 1: a row the change
    adds would be kept if it were first), netted per source row, with their net count
    (`DELTA_COLUMN`: positive added, negative removed). None when no source moved."""
    windows = _windows(plan)
    query = windows.select.copy()
    columns = [lit(1).as_(ident(e.alias)) if e.find(exp.Window) else e.copy() for e in windows.select.expressions]
    row = by_key.row_columns(plan.sources, _rid)
    query.set("expressions", [*columns, *_key_values(plan), *row])
    names = stored_columns(plan) + [r.alias for r in row]
    net = by_key.net_rows(plan, query, names, old, new, staged, narrow, with_count=True)
    if net is None:
        return None
    return exp.select(*[col(c) for c in stored_columns(plan)], col(DELTA_COLUMN)).from_(
        net.subquery(ident(f"{HIDDEN_PREFIX}n"))
    )


def first_parts(plan: ViewPlan, changes: exp.Select, backing: TableName) -> exp.Select:
    """The partitions a keep-the-first's change touches, each with `RECOMPUTE` 1 where a removed
    row has the kept row's ORDER BY values (the kept row may be gone: recompute the partition),
    or where there is no kept row (nothing to compare with), else 0."""
    c, s = f"{HIDDEN_PREFIX}c", f"{HIDDEN_PREFIX}s"
    keys = _keys(plan)
    same = exp.and_(*[exp.NullSafeEQ(this=col(o, c), expression=col(o, s)) for o in _orders(plan)])
    removed = exp.LT(this=col(DELTA_COLUMN, c), expression=lit(0))
    unkept = exp.Is(this=col(COUNT_COLUMN, s), expression=exp.Null())
    flag = exp.If(this=exp.and_(removed, exp.or_(unkept, exp.paren(same))), true=lit(1), false=lit(0))
    on = exp.and_(*[exp.NullSafeEQ(this=col(k, c), expression=col(k, s)) for k in keys])
    return (
        exp.select(*[col(k, c).as_(ident(k)) for k in keys], exp.Max(this=flag).as_(ident(RECOMPUTE)))
        .from_(changes.subquery(ident(c)))
        .join(backing.to_table().as_(s), on=on, join_type="left")
        .group_by(*[col(k, c) for k in keys])
    )


def first_rows(plan: ViewPlan, changes: exp.Select, backing: TableName, parts: str) -> exp.Select:
    """The first row of each touched partition that `RECOMPUTE` leaves to the kept rows: the first,
    by the model's ORDER BY over the stored ORDER BY values, of its kept row and the rows the
    change adds."""
    columns = stored_columns(plan)
    keys = _keys(plan)
    settled = exp.EQ(this=col(RECOMPUTE, by_key.TOUCHED), expression=lit(0))
    s, c = f"{HIDDEN_PREFIX}s", f"{HIDDEN_PREFIX}c"
    kept = exp.select(*[col(n, s) for n in columns]).from_(backing.to_table().as_(s))
    kept.append("joins", by_key.semi_join(parts, [col(k, s) for k in keys], keys, settled))
    added = exp.select(*[col(n, c) for n in columns]).from_(changes.subquery(ident(c)))
    added.append("joins", by_key.semi_join(parts, [col(k, c) for k in keys], keys, settled.copy()))
    added = added.where(exp.GT(this=col(DELTA_COLUMN, c), expression=lit(0)))
    order = [
        exp.Ordered(this=col(name), desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first"))
        for o, name in zip(_windows(plan).first, _orders(plan), strict=True)
    ]
    first = f"{HIDDEN_PREFIX}first"
    window = exp.Window(this=exp.RowNumber(), partition_by=[col(k) for k in keys], order=exp.Order(expressions=order))
    ranked = exp.select(*[col(n) for n in columns], window.as_(ident(first))).from_(
        union_all([kept, added]).subquery(ident(f"{HIDDEN_PREFIX}k"))
    )
    return (
        exp.select(*[col(n) for n in columns])
        .from_(ranked.subquery(ident(f"{HIDDEN_PREFIX}f")))
        .where(exp.EQ(this=col(first), expression=lit(1)))
    )


def first_delta(
    plan: ViewPlan, backing: TableName, new: Mapping[str, int], parts: str, changes: exp.Select, recompute: bool
) -> exp.Select:
    """A keep-the-first's touched partitions: the first rows of those the kept rows settle
    (`first_rows`), and, `recompute`, the others' rows recomputed from the sources at `new`
    (+count); their stored rows (-count); summed per stored row (`by_key.delta_select`)."""
    first = first_rows(plan, changes, backing, parts)
    again = exp.EQ(this=col(RECOMPUTE, by_key.TOUCHED), expression=lit(1))
    rows = union_all([_rows(plan, new, parts, again), first]) if recompute else first
    return by_key.delta_select(rows, stored_columns(plan), _keys(plan), backing, parts)


def merge_statement(plan: ViewPlan, backing: TableName, delta: str) -> exp.Merge:
    """Apply the changed multiplicities (`by_key.merge_statement`)."""
    return by_key.merge_statement(stored_columns(plan), backing, delta, "partitions")


def view_select(plan: ViewPlan, backing: TableName) -> exp.Select:
    """What `ref()` returns: the stored rows, each repeated `count` times, read by the model's
    query over the windows' SELECT (its projection and WHERE) when it has one."""
    rows = repeated_rows([e.alias_or_name for e in _windows(plan).select.expressions], backing)
    if any(e.find(exp.Window) for e in plan.query.expressions):  # the windows are the model's own
        return rows
    query = plan.query.copy()
    derived = query.args["from_"].this
    derived.set("this", rows)
    return query


class WindowRules:
    """Window views: touched partitions recomputed whole, applied by one MERGE."""

    INSERTS = False

    def stages_changes(self, plan: ViewPlan) -> bool:
        return True  # the change terms read them

    def build_select(
        self, plan: ViewPlan, versions: Mapping[str, int], types: Mapping[str, str] | None = None
    ) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        return view_select(plan, backing)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the touched partitions' keys, then the difference of their rows, then one MERGE."""
        plan = refresh.plan
        if kept_first(plan):
            return _apply_first(refresh)
        narrow = narrowing(refresh) if plan.union is None else None
        touched = touched_select(plan, refresh.old, refresh.new, refresh.staged, narrow)
        assert touched is not None
        parts = refresh.temp("parts")
        refresh.run(cache_as(parts, touched))
        count = int(
            refresh.query(sql(exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(parts))))[0]["n"]
        )
        detail = f"{count} partition{'s' * (count != 1)} recomputed" if _keys(plan) else "the one partition recomputed"
        if count == 0:
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, "no partition touched")
        delta = delta_select(plan, refresh.backing, refresh.new, parts)
        return by_key.apply_difference(refresh, delta, stored_columns(plan), "partitions", detail)

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        windows = _windows(plan)
        if windows.partition_by:
            keys = ", ".join(p.sql(dialect="spark") for p in windows.partition_by)
            scope = f"the partitions (PARTITION BY {keys}) of the rows it adds or removes, before and after"
        else:
            scope = "the whole view: its windows share no PARTITION BY, so the view is one partition"
        lines = []
        for table in plan.tables:
            lines.append(f"  change to {table}:")
            lines.append(f"    recomputes {scope}, from the sources at the pinned versions")
        if kept_first(plan):
            lines.append(
                "    keep-the-first: only the partitions where a removed row has the kept row's ORDER BY values; "
                "each other touched partition keeps the first of its kept row and the rows the change adds, by "
                "the ORDER BY (no source read)"
            )
        lines.append(
            "    apply: the recomputed rows minus the stored rows of those partitions, one MERGE on every stored "
            "column (count += delta, delete at 0); rows that did not change are not rewritten"
        )
        return lines

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the refresh finds a partition's rows by its keys, not by value ranges


def _apply_first(refresh: Refresh) -> Write:
    """A keep-the-first's refresh: cache the touched partitions (which to recompute), then the
    difference of their rows, then one MERGE; no source read where no kept row may be removed."""
    plan = refresh.plan
    changes = first_changes(plan, refresh.old, refresh.new, refresh.staged, narrowing(refresh))
    assert changes is not None
    parts = refresh.temp("parts")
    refresh.run(cache_as(parts, first_parts(plan, changes, refresh.backing)))
    counts = exp.select(exp.Count(this=exp.Star()).as_("n"), exp.Sum(this=col(RECOMPUTE)).as_("r"))
    row = refresh.query(sql(counts.from_(temp_table(parts))))[0]
    touched, again = int(row["n"]), int(row["r"] or 0)
    detail = (
        f"{again} partition{'s' * (again != 1)} recomputed, {touched - again} settled by their kept row"
        f"{'s' * (touched - again != 1)}"
    )
    if touched == 0:
        return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, "no partition touched")
    delta = first_delta(plan, refresh.backing, refresh.new, parts, changes, again > 0)
    return by_key.apply_difference(refresh, delta, stored_columns(plan), "partitions", detail)


RULES = WindowRules()
