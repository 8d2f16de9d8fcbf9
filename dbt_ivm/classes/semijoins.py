"""Semi-join views, maintained by key: `[NOT] EXISTS` and `x [NOT] IN` subqueries in the WHERE
(see `analyze.subqueries`).

Stored row: the model's columns, the value of each key expression every test correlates on
(`Subqueries.partition_by`, `__ivm_p_<i>`) and a multiplicity (`__ivm_count`); `ref()` repeats
each row `count` times.

A row's result depends on the row and on the subqueries' rows of its key only, so a refresh
recomputes whole keys, as window views recompute partitions: those of the rows a change adds to
or removes from the outer query's FROM and WHERE (without the tests), and those the subqueries'
changed rows correlate on. A subquery row with a NULL in an `=` correlation matches no row and
touches nothing. A three-valued IN (`x NOT IN (SELECT y …)`, or IN under OR, NOT, CASE) keyed by
its value: a row with `x = k` is kept iff the subquery's values hold no NULL and not `k`, a NULL
`x` iff they are empty; so a changed `y` touches the key `y`, any change touches the NULL key,
and a changed NULL `y` touches every key. Each touched key is recomputed from the model's own
query at the pinned versions, its stored rows subtracted, one MERGE applies the difference
(`by_key`, shared with window views).
With no key shared by every test the view is one key: every change recomputes all of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt_ivm.analyze.subqueries import inner_key, inner_value
from dbt_ivm.classes import by_key
from dbt_ivm.classes.joins import repeated_rows
from dbt_ivm.classes.relations import snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Write, WritePath
from dbt_ivm.ir import (
    COUNT_COLUMN,
    HIDDEN_PREFIX,
    Comparison,
    Source,
    Subqueries,
    SubqueryTest,
    TableName,
    ViewPlan,
    partition_column,
)
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, sql, temp_table

EVERYTHING = f"{HIDDEN_PREFIX}all"  # a touched row that stands for every key
Versions = Mapping[str, int]
Staged = Mapping[int, str]


def _subqueries(plan: ViewPlan) -> Subqueries:
    assert plan.subqueries is not None, "not a semi-join view"
    return plan.subqueries


def _keys(plan: ViewPlan) -> list[str]:
    return [partition_column(i) for i in range(len(_subqueries(plan).partition_by))]


def stored_columns(plan: ViewPlan) -> list[str]:
    """The model's columns and the keys: what identifies a stored row."""
    return [o.name for o in plan.outputs] + _keys(plan)


def _rows(plan: ViewPlan, versions: Mapping[str, int], touched: str | None = None) -> exp.Select:
    """The model's rows at `versions` with their keys; `touched`: only the keys that table holds
    (a key's rows are tested against the subqueries' rows of that key only)."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    keys = _subqueries(plan).partition_by
    select = substitute(plan.query, rels)
    select = select.select(*[k.copy().as_(ident(c)) for k, c in zip(keys, _keys(plan), strict=True)], copy=False)
    if touched is not None and keys:
        select.append("joins", by_key.semi_join(touched, keys, _keys(plan)))
    return select


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """The storage at the pinned versions: each distinct row with its keys and count."""
    return by_key.counted(_rows(plan, versions), stored_columns(plan), exp.Count(this=exp.Star()), COUNT_COLUMN)


def _row_columns(sources: Sequence[Source]) -> list[exp.Expr]:
    """Each occurrence's identity (`__ivm_r_<i>`) and columns: a term's rows netted per source row."""
    return by_key.row_columns(sources, lambda s: f"{HIDDEN_PREFIX}r_{s.index}")


def _touched_rows(plan: ViewPlan, values: list[exp.Expr], net: exp.Select, where: list[exp.Expr]) -> exp.Select:
    """`SELECT DISTINCT values AS __ivm_p_i…, FALSE AS __ivm_all FROM net WHERE …`; with no key,
    one row that stands for every key."""
    named: list[exp.Expr] = [v.as_(ident(c)) for v, c in zip(values, _keys(plan), strict=True)]
    named.append((exp.false() if _keys(plan) else exp.true()).as_(ident(EVERYTHING)))
    select = exp.select(*named).distinct().from_(net.subquery(ident(f"{HIDDEN_PREFIX}n")))
    return select.where(*where) if where else select


def _outer_touched(plan: ViewPlan, old: Versions, new: Versions, staged: Staged) -> exp.Select | None:
    """The keys of the rows a change adds to or removes from the outer query without its tests."""
    subs = _subqueries(plan)
    inner = {g for t in subs.tests for g in t.sources}
    outer = tuple(s for s in plan.sources if s.index not in inner)
    sub_plan = dataclasses.replace(plan, sources=outer, query=subs.outer)
    keys = [k.copy().as_(ident(c)) for k, c in zip(subs.partition_by, _keys(plan), strict=True)]
    row = _row_columns(outer)
    query = subs.outer.copy()
    query.set("expressions", [*keys, *row])
    net = by_key.net_rows(sub_plan, query, [k.alias for k in keys] + [r.alias for r in row], old, new, staged)
    return None if net is None else _touched_rows(plan, [col(c) for c in _keys(plan)], net, [])


def _test_touched(
    plan: ViewPlan, test: SubqueryTest, old: Versions, new: Versions, staged: Staged
) -> exp.Select | None:
    """The keys the changed rows of `test`'s subquery correlate on."""
    local = tuple(dataclasses.replace(plan.sources[g], index=i) for i, g in enumerate(test.sources))
    where = test.select.args.get("where")
    sub_plan = dataclasses.replace(
        plan, sources=local, tree=test.tree, query=test.select, where=where.this if where else None
    )
    row = _row_columns(local)
    names = [inner_key(j) for j in range(max(len(test.pairs), 1))] + [r.alias for r in row]
    query = test.select.copy().select(*row, copy=False)
    local_staged = {i: staged[g] for i, g in enumerate(test.sources) if g in staged}
    net = by_key.net_rows(sub_plan, query, names, old, new, local_staged)
    if net is None:
        return None
    partition = _subqueries(plan).partition_by
    if partition and test.pairs[0].comparison is Comparison.NULL_AWARE and len(test.pairs) == 1:
        return _null_aware_touched(plan, net)
    values: list[exp.Expr] = [col(inner_key(inner_value(test, p))) for p in partition]
    strict: list[exp.Expr] = [
        exp.Not(this=exp.Is(this=col(inner_key(j)), expression=exp.Null()))
        for j, p in enumerate(test.pairs)
        if p.comparison is Comparison.EQUAL
    ]
    return _touched_rows(plan, values, net, strict)


def _null_aware_touched(plan: ViewPlan, net: exp.Select) -> exp.Select:
    """`x [NOT] IN (SELECT y …)` keyed by x: each changed `y`, the NULL key, and every key when a
    changed `y` is NULL (the set's NULL makes every other value's test NULL, or no longer)."""
    value = col(inner_key(0))
    values = exp.select(
        value.as_(ident(_keys(plan)[0])),
        exp.Is(this=value.copy(), expression=exp.Null()).as_(ident(EVERYTHING)),
    )
    values = values.distinct().from_(net.subquery(ident(f"{HIDDEN_PREFIX}n")))
    null_key = exp.select(exp.Null().as_(ident(_keys(plan)[0])), exp.false().as_(ident(EVERYTHING)))
    null_key = null_key.distinct().from_(net.subquery(ident(f"{HIDDEN_PREFIX}n")))
    return exp.select(exp.Star()).from_(union_all([values, null_key]).subquery(ident(f"{HIDDEN_PREFIX}u")))


def touched_select(
    plan: ViewPlan, old: Mapping[str, int], new: Mapping[str, int], staged: Mapping[int, str]
) -> exp.Select | None:
    """The distinct keys a change touches (`__ivm_p_<i>`, and `__ivm_all`: every key), from the
    outer query's change terms and each subquery's, netted per source row. None when no source
    moved."""
    parts = [_outer_touched(plan, old, new, staged)]
    parts += [_test_touched(plan, t, old, new, staged) for t in _subqueries(plan).tests]
    found = [p for p in parts if p is not None]
    if not found:
        return None
    return exp.select(exp.Star()).distinct().from_(union_all(found).subquery(ident(f"{HIDDEN_PREFIX}k")))


def delta_select(plan: ViewPlan, backing: TableName, new: Mapping[str, int], touched: str | None) -> exp.Select:
    """The touched keys' rows recomputed at `new` (+count) and as stored (-count), summed per
    stored row: the rows whose multiplicity changes, by how much. `touched` None: every key."""
    return by_key.delta_select(_rows(plan, new, touched), stored_columns(plan), _keys(plan), backing, touched)


def merge_statement(plan: ViewPlan, backing: TableName, delta: str) -> exp.Merge:
    """Apply the changed multiplicities (`by_key.merge_statement`)."""
    return by_key.merge_statement(stored_columns(plan), backing, delta, "keys")


def view_select(plan: ViewPlan, backing: TableName) -> exp.Select:
    """What `ref()` returns: the stored rows, each repeated `count` times."""
    return repeated_rows([o.name for o in plan.outputs], backing)


class SemiJoinRules:
    """Semi-join views: touched keys recomputed whole, applied by one MERGE."""

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
        """Cache the touched keys, then the difference of their rows, then one MERGE."""
        plan = refresh.plan
        touched = touched_select(plan, refresh.old, refresh.new, refresh.staged)
        assert touched is not None
        keys = refresh.temp("keys")
        refresh.run(cache_as(keys, touched))
        every = exp.If(this=col(EVERYTHING), true=lit(1), false=lit(0))
        counted = exp.select(
            exp.Count(this=exp.Star()).as_("n"), func("coalesce", exp.Max(this=every), lit(0)).as_("every")
        ).from_(temp_table(keys))
        found = refresh.query(sql(counted))[0]
        count, everything = int(found["n"]), int(found["every"]) == 1
        if count == 0:
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, "no key touched")
        detail = "the whole view recomputed" if everything else f"{count} key{'s' * (count != 1)} recomputed"
        delta = delta_select(plan, refresh.backing, refresh.new, None if everything else keys)
        return by_key.apply_difference(refresh, delta, stored_columns(plan), "keys", detail)

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        return explain_steps(plan)

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the refresh finds a key's rows by the key, not by value ranges


def explain_steps(plan: ViewPlan) -> list[str]:
    subs = _subqueries(plan)
    keys = ", ".join(p.sql(dialect="spark") for p in subs.partition_by)
    inner = {g: t for t in subs.tests for g in t.sources}
    lines = []
    for table in plan.tables:
        lines.append(f"  change to {table}:")
        for s in (s for s in plan.sources if s.table.key == table.key):
            if not keys:
                scope = "the whole view: its tests share no correlation key, so the view is one key"
            elif s.index not in inner:
                scope = f"the keys ({keys}) of the rows it adds or removes, before and after"
            else:
                test = inner[s.index].predicate.sql(dialect="spark")
                scope = f"the keys its changed rows correlate on in {test}"
                if inner[s.index].pairs[0].comparison is Comparison.NULL_AWARE and len(inner[s.index].pairs) == 1:
                    scope += " (three-valued: also the NULL key, and every key when a changed value is NULL)"
            lines.append(f"    {s.alias}: recomputes {scope}, from the sources at the pinned versions")
    lines.append(
        "    apply: the recomputed rows minus the stored rows of those keys, one MERGE on every stored column "
        "(count += delta, delete at 0); rows that did not change are not rewritten"
    )
    return lines


RULES = SemiJoinRules()
