"""Window views, maintained by partition: ROW_NUMBER, RANK, LAG/LEAD, FIRST_VALUE, aggregates
OVER frames … over one source or joins (see `analyze.windows`).

Stored row: the columns of the SELECT that computes the windows (`Windows.select`), the value of
each PARTITION BY expression its windows share (`__ivm_p_<i>`) and a multiplicity
(`__ivm_count`); only the rows the outer WHERE keeps (`… WHERE rn = 1`: one row per key, not
every version). `ref()` repeats each row `count` times and applies the model's query over them.

A window's value depends on its whole partition, so a refresh recomputes whole partitions: those
the change touches, the partition keys of the rows the change adds to or removes from the
windows' FROM and WHERE (the telescoping change terms of `changes.delta_terms`, netted per row:
a row whose copies cancel touches nothing). Each is recomputed from the sources at the pinned
versions, its stored rows are subtracted, and one MERGE applies the difference: rows that did
not change are not rewritten. A view whose windows share no PARTITION BY expression is one
partition: every change recomputes all of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt_ivm.classes.changes import delta_terms
from dbt_ivm.classes.joins import count_clauses, narrowing, repeated_rows
from dbt_ivm.classes.relations import Narrowing, copies, snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Write, WritePath
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    RID_COLUMN,
    TableName,
    ViewPlan,
    Windows,
    partition_column,
)
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, sql, temp_table

TOUCHED = f"{HIDDEN_PREFIX}t"  # the alias of the touched partitions' keys


def _windows(plan: ViewPlan) -> Windows:
    assert plan.windows is not None, "not a window view"
    return plan.windows


def _keys(plan: ViewPlan) -> list[str]:
    return [partition_column(i) for i in range(len(_windows(plan).partition_by))]


def stored_columns(plan: ViewPlan) -> list[str]:
    """The window SELECT's columns and the partition keys: what identifies a stored row."""
    return [e.alias_or_name for e in _windows(plan).select.expressions] + _keys(plan)


def _with_keys(select: exp.Select, plan: ViewPlan) -> exp.Select:
    keys = [p.copy().as_(ident(k)) for p, k in zip(_windows(plan).partition_by, _keys(plan), strict=True)]
    return select.select(*keys, copy=False)


def _counted(rows: exp.Query, plan: ViewPlan, measure: exp.Expr, name: str) -> exp.Select:
    """One row per distinct stored row of `rows`, with `measure` as `name`."""
    cols = [col(c) for c in stored_columns(plan)]
    return (
        exp.select(*cols, measure.as_(ident(name)))
        .from_(rows.subquery(ident(f"{HIDDEN_PREFIX}v")))
        .group_by(*[c.copy() for c in cols])
    )


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


def _rows(plan: ViewPlan, versions: Mapping[str, int], touched: str | None = None) -> exp.Select:
    """The window SELECT's rows at `versions`, with their partition keys, those the outer WHERE
    keeps (`stored_filter`); `touched`: only the partitions whose keys that table holds (a
    partition's windows read only its own rows)."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    select = _with_keys(substitute(_windows(plan).select, rels), plan)
    if touched is not None and _keys(plan):
        select.append("joins", _semi_join(touched, list(_windows(plan).partition_by), plan))
    kept = stored_filter(plan)
    if kept is None:
        return select
    derived = plan.query.args["from_"].this  # the outer query reads the window SELECT by this alias
    return (
        exp.select(*[col(c) for c in stored_columns(plan)])
        .from_(select.subquery(ident(derived.alias_or_name)))
        .where(kept.copy())
    )


def _semi_join(touched: str, keys: Sequence[exp.Expr], plan: ViewPlan) -> exp.Join:
    """`LEFT SEMI JOIN touched ON key_i <=> touched.__ivm_p_i …`: NULL keys match NULL keys."""
    on = exp.and_(
        *[exp.NullSafeEQ(this=k.copy(), expression=col(c, TOUCHED)) for k, c in zip(keys, _keys(plan), strict=True)]
    )
    return exp.Join(this=temp_table(touched).as_(TOUCHED), side="LEFT", kind="SEMI", on=on)


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """The storage at the pinned versions: each distinct row with its partition keys and count."""
    return _counted(_rows(plan, versions), plan, exp.Count(this=exp.Star()), COUNT_COLUMN)


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
    row: list[exp.Expr] = []
    for s in plan.sources:
        row.append(col(RID_COLUMN, s.alias).as_(ident(s.rid)))
        row += [
            _groupable(col(name, s.alias), t).as_(ident(f"{HIDDEN_PREFIX}c_{s.index}_{j}"))
            for j, (name, t) in enumerate(s.columns)
        ]
    query = windows.select.copy()
    query.set("expressions", [*values, *row])
    terms = [term for _, term in delta_terms(plan, query, old, new, staged, narrow=narrow)]
    if not terms:
        return None
    names = [v.alias for v in values] + [r.alias for r in row]
    total = exp.Sum(this=col(DELTA_COLUMN))
    net = (
        exp.select(*[col(n) for n in names])
        .from_(union_all(terms).subquery(ident(f"{HIDDEN_PREFIX}c")))
        .group_by(*[col(n) for n in names])
        .having(exp.NEQ(this=total, expression=lit(0)))
    )
    keys: list[exp.Expr] = [col(k) for k in _keys(plan)] or [exp.true().as_(ident(f"{HIDDEN_PREFIX}all"))]
    return exp.select(*keys).distinct().from_(net.subquery(ident(f"{HIDDEN_PREFIX}n")))


def _groupable(value: exp.Expr, spark_type: str) -> exp.Expr:
    """A source column as a grouping key: a map as its JSON text (maps cannot be grouped)."""
    return func("to_json", value) if spark_type.lower().startswith("map") else value


def delta_select(plan: ViewPlan, backing: TableName, new: Mapping[str, int], touched: str) -> exp.Select:
    """The touched partitions' rows recomputed at `new` (+count) and as stored (-count), summed
    per stored row: the rows whose multiplicity changes, by how much."""
    recomputed = _counted(_rows(plan, new, touched), plan, exp.Count(this=exp.Star()), DELTA_COLUMN)
    stored = exp.select(*[col(c) for c in stored_columns(plan)], exp.Neg(this=col(COUNT_COLUMN)).as_(DELTA_COLUMN))
    stored = stored.from_(backing.to_table().as_(f"{HIDDEN_PREFIX}s"))
    if _keys(plan):
        keys = [col(k, f"{HIDDEN_PREFIX}s") for k in _keys(plan)]
        stored.append("joins", _semi_join(touched, keys, plan))
    total = exp.Sum(this=col(DELTA_COLUMN))
    summed = _counted(union_all([recomputed, stored]), plan, total, DELTA_COLUMN)
    return summed.having(exp.NEQ(this=total.copy(), expression=lit(0)))


def merge_statement(plan: ViewPlan, backing: TableName, delta: str) -> exp.Merge:
    """Apply the changed multiplicities, matching every stored column NULL-safe: delete at 0,
    update, insert; a count that would go negative is corrupt state, loudly."""
    t, s = "t", "s"
    corrupt = (
        f"fast_mv {backing}: the recomputed partitions remove rows the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )
    cols = stored_columns(plan)
    whens = count_clauses(cols, corrupt, t, s)
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    on = exp.and_(*[exp.NullSafeEQ(this=col(c, t), expression=col(c, s)) for c in cols])
    return exp.Merge(this=target, using=temp_table(delta).as_(s), on=on, whens=exp.Whens(expressions=whens))


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

    def build_select(self, plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        return view_select(plan, backing)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the touched partitions' keys, then the difference of their rows, then one MERGE."""
        plan = refresh.plan
        touched = touched_select(plan, refresh.old, refresh.new, refresh.staged, narrowing(refresh))
        assert touched is not None
        parts = refresh.temp("parts")
        refresh.run(cache_as(parts, touched))
        count = int(
            refresh.query(sql(exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(parts))))[0]["n"]
        )
        detail = f"{count} partition{'s' * (count != 1)} recomputed" if _keys(plan) else "the one partition recomputed"
        if count == 0:
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, "no partition touched")
        delta = refresh.temp("delta")
        refresh.run(cache_as(delta, delta_select(plan, refresh.backing, refresh.new, parts)))
        inserted, deleted = copies()
        stats = exp.select(
            exp.Count(this=exp.Star()).as_("n"),
            func("coalesce", exp.Sum(this=inserted), lit(0)).as_("inserted"),
            func("coalesce", exp.Sum(this=deleted), lit(0)).as_("deleted"),
        ).from_(temp_table(delta))
        row = refresh.query(sql(stats))[0]
        if int(row["n"]) == 0:
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, detail)
        merge = merge_statement(plan, refresh.backing, delta)
        return Write(WritePath.MERGE, merge, int(row["inserted"]), int(row["deleted"]), detail)

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
        lines.append(
            "    apply: the recomputed rows minus the stored rows of those partitions, one MERGE on every stored "
            "column (count += delta, delete at 0); rows that did not change are not rewritten"
        )
        return lines

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the refresh finds a partition's rows by its keys, not by value ranges


RULES = WindowRules()
