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
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.classes import by_key
from dbt_ivm.classes.joins import narrowing, repeated_rows
from dbt_ivm.classes.relations import Narrowing, snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Write, WritePath
from dbt_ivm.classes.union_leaf import leaf_relations, leaf_terms
from dbt_ivm.ir import COUNT_COLUMN, HIDDEN_PREFIX, Source, TableName, ViewPlan, Windows, partition_column
from dbt_ivm.render import cache_as, col, empty_commit, ident, sql, temp_table


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
    if plan.union is not None:  # the leaf's branches at the versions, in the placeholder's place
        rels = leaf_relations(plan, versions)
    else:
        rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    select = _with_keys(substitute(_windows(plan).select, rels), plan)
    if touched is not None and _keys(plan):
        select.append("joins", by_key.semi_join(touched, _windows(plan).partition_by, _keys(plan)))
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
    query.set("distinct", None)  # the change rows, each with its multiplicity, not the view's rows
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
        lines.append(
            "    apply: the recomputed rows minus the stored rows of those partitions, one MERGE on every stored "
            "column (count += delta, delete at 0); rows that did not change are not rewritten"
        )
        return lines

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the refresh finds a partition's rows by its keys, not by value ranges


RULES = WindowRules()
