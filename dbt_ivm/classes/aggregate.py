"""Aggregate views: GROUP BY (or none: one global row), SELECT DISTINCT, over one source or inner joins.

Stored row: one per group, its GROUP BY values (`__ivm_g_<i>`), its row count (`__ivm_count`) and
each aggregate's state (`Aggregate.state`): COUNT keeps the non-NULL count, SUM and AVG that
count and the sum, MIN and MAX the extreme, every other aggregate its value. `ref()` computes
the model's columns from the state (AVG = sum / count, as Spark divides) and applies HAVING,
so groups that fail it keep their state.

A refresh sums the change terms per group (`delta_select`: signed counts and sums, the smallest
and largest value each side added and removed), then in one MERGE adds the deltas, deletes the
groups whose count reaches 0 and inserts new ones (Oracle's aggregate refresh, seed 001). Two
kinds of group are recomputed from the sources at the pinned versions, in the same commit:
groups whose stored MIN or MAX was among the removed values (not every group a delete touched,
as Oracle does), and, for a view with an aggregate that has no rule (COUNT(DISTINCT), STDDEV,
percentiles …), every group the change touches. Sources that only appended never recompute.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.classes import Describe, Refresh, Write
from dbt_ivm.classes.changes import delta_terms, snapshot_relation, substitute, union_all
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    Aggregate,
    AggregateFunction,
    TableName,
    ViewPlan,
    group_column,
)
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, raise_error, sql, temp_table
from dbt_ivm.verbatim import DIALECT

F = AggregateFunction
EXTREMES = (F.MIN, F.MAX)
RECOMPUTED_FLAG = f"{HIDDEN_PREFIX}r"


def _argument(agg: Aggregate) -> str:
    return f"{HIDDEN_PREFIX}x_{agg.index}"


def _removed(agg: Aggregate) -> str:
    """The change set's extreme of the removed values (MIN: the smallest, MAX: the largest)."""
    return f"{HIDDEN_PREFIX}del_{agg.index}"


def _recomputed(agg: Aggregate) -> str:
    return f"{HIDDEN_PREFIX}r_{agg.index}"


def _keys(plan: ViewPlan) -> list[str]:
    return [group_column(i) for i in range(len(plan.group_by))]


def _needs_recompute(plan: ViewPlan) -> list[Aggregate]:
    """Aggregates whose value a delete can invalidate: MIN, MAX and those without a rule."""
    return [a for a in plan.aggregates if a.function in (*EXTREMES, F.RECOMPUTED)]


def _ungrouped(plan: ViewPlan) -> exp.Select:
    """The model's FROM, joins and WHERE, without its projections, grouping, HAVING or DISTINCT."""
    query = plan.query.copy()
    for arg in ("group", "having", "distinct"):
        query.set(arg, None)
    query.set("expressions", [])
    return query


def _grouped(plan: ViewPlan, projections: list[exp.Expr]) -> exp.Select:
    query = _ungrouped(plan)
    keys = [g.copy().as_(ident(k)) for g, k in zip(plan.group_by, _keys(plan), strict=True)]
    query = query.select(*keys, *projections, copy=False)
    if plan.group_by:
        query.set("group", exp.Group(expressions=[g.copy() for g in plan.group_by]))
    return query


def _state(agg: Aggregate) -> list[exp.Expr]:
    """The stored state of `agg`, as aggregates over the view's rows (build)."""
    arg = agg.argument.copy() if agg.argument is not None else None
    count = exp.Count(this=arg.copy()) if arg is not None else None
    if agg.function is F.COUNT:
        return [count.as_(ident(agg.non_null))] if count else []
    if agg.function in (F.SUM, F.AVG):
        assert count is not None and arg is not None
        return [count.as_(ident(agg.non_null)), exp.Sum(this=arg).as_(ident(agg.value))]
    if agg.function in EXTREMES or agg.function is F.RECOMPUTED:
        return [agg.call.copy().as_(ident(agg.value))]
    return []  # COUNT(*): the group's count


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """One row per group at the pinned versions: keys, count, each aggregate's state."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    state = [exp.Count(this=exp.Star()).as_(ident(COUNT_COLUMN))]
    state += [e for agg in plan.aggregates for e in _state(agg)]
    return substitute(_grouped(plan, state), rels)


def _rows(plan: ViewPlan) -> exp.Select:
    """The view's rows before grouping: group keys and the arguments of the aggregates with a rule."""
    keys = [g.copy().as_(ident(k)) for g, k in zip(plan.group_by, _keys(plan), strict=True)]
    args = [a.argument.copy().as_(ident(_argument(a))) for a in plan.aggregates if a.argument is not None]
    return _ungrouped(plan).select(*keys, *args, copy=False)


def _if(condition: exp.Expr, true: exp.Expr, false: exp.Expr) -> exp.If:
    return exp.If(this=condition, true=true, false=false)


def _zero_if_null(e: exp.Expr) -> exp.Expr:
    return func("coalesce", e, lit(0))


def delta_select(
    plan: ViewPlan, old: Mapping[str, int], new: Mapping[str, int], staged: Mapping[int, str] | None = None
) -> exp.Select | None:
    """Per touched group: the count's delta, each aggregate's state delta, and for MIN/MAX the
    extreme of the values added (`__ivm_a_<k>`) and of those removed (`__ivm_del_<k>`).

    Rows come one per copy with `__ivm_d` = +1 or -1 (see `changes.signed_rows`), so a sum's delta
    is `sum(IF(d > 0, x, -x))`: exact for DECIMAL and intervals, no product that widens a type.
    A view without GROUP BY gives exactly one row, also when no row changed.
    """
    terms = [
        term.select(col(DELTA_COLUMN, changed.alias).as_(ident(DELTA_COLUMN)))
        for changed, term in delta_terms(plan, _rows(plan), old, new, staged, rids=False, signed=True)
    ]
    if not terms:
        return None
    d = col(DELTA_COLUMN)
    added, removed = exp.GT(this=d.copy(), expression=lit(0)), exp.LT(this=d.copy(), expression=lit(0))
    measures: list[exp.Expr] = [_zero_if_null(exp.Sum(this=d.copy())).as_(ident(COUNT_COLUMN))]
    for agg in plan.aggregates:
        if agg.argument is None:
            continue
        x = col(_argument(agg))
        if agg.function in (F.COUNT, F.SUM, F.AVG):
            counted = _if(exp.Is(this=x.copy(), expression=exp.Null()), lit(0), d.copy())
            measures.append(_zero_if_null(exp.Sum(this=counted)).as_(ident(agg.non_null)))
        if agg.function in (F.SUM, F.AVG):
            measures.append(exp.Sum(this=_if(added.copy(), x.copy(), exp.Neg(this=x.copy()))).as_(ident(agg.value)))
        if agg.function in EXTREMES:
            pick = exp.Min if agg.function is F.MIN else exp.Max
            measures.append(pick(this=_if(added.copy(), x.copy(), exp.Null())).as_(ident(agg.value)))
            measures.append(pick(this=_if(removed.copy(), x.copy(), exp.Null())).as_(ident(_removed(agg))))
    keys = [col(k) for k in _keys(plan)]
    select = exp.select(*keys, *measures).from_(union_all(terms).subquery(ident(f"{HIDDEN_PREFIX}t")))
    return select.group_by(*[k.copy() for k in keys]) if keys else select


def _match(plan: ViewPlan, left: str, right: str) -> exp.Expr:
    """Group keys equal, NULL-safe (a NULL key is a group); TRUE for the one global row."""
    if not plan.group_by:
        return exp.true()
    return exp.and_(*[exp.NullSafeEQ(this=col(k, left), expression=col(k, right)) for k in _keys(plan)])


def lost_extremes(plan: ViewPlan, backing: TableName, delta: str) -> exp.Select:
    """The touched groups to recompute: every one if an aggregate has no rule, else those whose
    stored MIN or MAX is among the values the change removed (an equal value removed counts: the
    copies left are unknown). Groups whose removed values all lie inside the extreme keep it."""
    keys = [col(k, "s") for k in _keys(plan)]
    select = exp.select(*keys) if keys else exp.select(lit(1).as_("one"))
    if any(a.function is F.RECOMPUTED for a in plan.aggregates):
        return select.from_(temp_table(delta).as_("s"))
    lost = []
    for agg in plan.aggregates:
        if agg.function in EXTREMES:
            beyond = exp.LTE if agg.function is F.MIN else exp.GTE
            lost.append(beyond(this=col(_removed(agg), "s"), expression=col(agg.value, "t")))
    stored = backing.to_table()
    stored.set("alias", exp.TableAlias(this=ident("t")))
    return (
        select.from_(temp_table(delta).as_("s"))
        .join(stored, on=_match(plan, "s", "t"), join_type="inner")
        .where(exp.or_(*lost) if lost else exp.false())
    )


def recompute_select(plan: ViewPlan, versions: Mapping[str, int], groups: str) -> exp.Select:
    """The value of MIN, MAX and every aggregate without a rule for the groups in `groups`,
    from the sources at the pinned versions (a semi-join on the keys, NULL-safe)."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}
    values = [a.call.copy().as_(ident(_recomputed(a))) for a in _needs_recompute(plan)]
    query = substitute(_grouped(plan, [exp.true().as_(ident(RECOMPUTED_FLAG)), *values]), rels)
    if plan.group_by:
        wanted = exp.and_(
            *[
                exp.NullSafeEQ(this=col(k, "f"), expression=g.copy())
                for k, g in zip(_keys(plan), plan.group_by, strict=True)
            ]
        )
        lookup = exp.select(lit(1)).from_(temp_table(groups).as_("f")).where(wanted)
        query = query.where(exp.Exists(this=lookup), copy=False)
    return query


def merge_source(plan: ViewPlan, delta: str, recomputed: str | None, alias: str) -> exp.Expr:
    """The MERGE's rows: the group deltas, with the recomputed values where there are some."""
    if recomputed is None:
        return temp_table(delta).as_(alias)
    extra = [col(_recomputed(a), "r") for a in _needs_recompute(plan)]
    flag = func("coalesce", col(RECOMPUTED_FLAG, "r"), exp.false()).as_(ident(RECOMPUTED_FLAG))
    select = (
        exp.select(exp.Column(this=exp.Star(), table=ident("d")), *extra, flag)
        .from_(temp_table(delta).as_("d"))
        .join(temp_table(recomputed).as_("r"), on=_match(plan, "d", "r"), join_type="left")
    )
    return select.subquery(ident(alias))


def merge_statement(plan: ViewPlan, backing: TableName, delta: str, recomputed: str | None) -> exp.Merge:
    """Add each group's deltas; delete a group whose count reaches 0 (not the global row); insert new ones.

    `recomputed` (from `recompute_select`) replaces MIN/MAX where the extreme was lost and the
    value of aggregates without a rule. A count that would go negative is corrupt state, loudly.
    """
    t, s = "t", "s"
    corrupt = (
        f"fast_mv {backing}: the change set removes rows a group does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )

    def checked(value: exp.Expr, floor: int) -> exp.Expr:
        ok = exp.GTE(this=value.copy(), expression=lit(floor))
        return _if(ok, value.copy(), raise_error(corrupt))

    count = exp.Add(this=col(COUNT_COLUMN, t), expression=col(COUNT_COLUMN, s))
    sets: list[tuple[str, exp.Expr]] = [(COUNT_COLUMN, checked(count, 0 if not plan.group_by else 1))]
    inserts: list[tuple[str, exp.Expr]] = [(k, col(k, s)) for k in _keys(plan)]
    inserts.append((COUNT_COLUMN, checked(col(COUNT_COLUMN, s), 1)))
    flag = col(RECOMPUTED_FLAG, s)
    for agg in plan.aggregates:
        nn = exp.Add(this=col(agg.non_null, t), expression=col(agg.non_null, s))
        if agg.function in (F.COUNT, F.SUM, F.AVG):
            sets.append((agg.non_null, nn))
            inserts.append((agg.non_null, col(agg.non_null, s)))
        if agg.function in (F.SUM, F.AVG):
            old, change = col(agg.value, t), col(agg.value, s)
            total = func("coalesce", exp.Add(this=old, expression=change), old.copy(), change.copy())
            none_left = exp.EQ(this=nn.copy(), expression=lit(0))
            sets.append((agg.value, _if(none_left, exp.Null(), total)))
            inserts.append((agg.value, change.copy()))
        if agg.function in EXTREMES:
            combine = "least" if agg.function is F.MIN else "greatest"
            merged = func(combine, col(agg.value, t), col(agg.value, s))
            if recomputed is not None:
                merged = _if(flag.copy(), col(_recomputed(agg), s), merged)
            sets.append((agg.value, merged))
            inserts.append((agg.value, col(agg.value, s)))
        if agg.function is F.RECOMPUTED:
            assert recomputed is not None  # every touched group is recomputed
            sets.append((agg.value, col(_recomputed(agg), s)))
            inserts.append((agg.value, col(_recomputed(agg), s)))
    whens = []
    if plan.group_by:
        emptied = exp.EQ(this=count.copy(), expression=lit(0))
        whens.append(exp.When(matched=True, source=False, condition=emptied, then=exp.var("DELETE")))
    whens.append(
        exp.When(
            matched=True,
            source=False,
            then=exp.Update(expressions=[exp.EQ(this=col(c), expression=v) for c, v in sets]),
        )
    )
    whens.append(
        exp.When(
            matched=False,
            source=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c, _ in inserts]),
                expression=exp.Tuple(expressions=[v for _, v in inserts]),
            ),
        )
    )
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    return exp.Merge(
        this=target,
        using=merge_source(plan, delta, recomputed, s),
        on=_match(plan, t, s),
        whens=exp.Whens(expressions=whens),
    )


def delta_stats(plan: ViewPlan, delta: str) -> exp.Select:
    """Groups touched, and how many lost MIN/MAX values (a removed value of an extreme aggregate)."""
    removed = [exp.Not(this=exp.Is(this=col(_removed(a)), expression=exp.Null())) for a in plan.aggregates]
    removed = [r for r, a in zip(removed, plan.aggregates, strict=True) if a.function in EXTREMES]
    stats = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(delta))
    if removed:
        stats = stats.select(func("count_if", exp.or_(*removed)).as_("removing"))
    return stats


# --- the user's rows -------------------------------------------------------------------------


def _average(agg: Aggregate, avg_type: str) -> exp.Expr:
    """AVG from its sum and count, divided as Spark's Average divides for the argument's type."""
    total, n = col(agg.value), col(agg.non_null)
    if avg_type.lower().startswith("decimal"):
        quotient: exp.Expr = exp.Div(this=total, expression=exp.Cast(this=n, to=exp.DataType.build("decimal(20,0)")))
        quotient = exp.Cast(this=quotient, to=exp.DataType.build(avg_type, dialect=DIALECT))
    elif avg_type.lower() == "double":
        double = exp.DataType.build("double")
        quotient = exp.Div(this=exp.Cast(this=total, to=double), expression=exp.Cast(this=n, to=double.copy()))
    else:  # an interval divided by the count
        quotient = exp.Div(this=total, expression=n)
    return _if(exp.EQ(this=n.copy(), expression=lit(0)), exp.Null(), quotient)


def _final(agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
    if agg.function is F.COUNT_STAR:
        return col(COUNT_COLUMN)
    if agg.function is F.COUNT:
        return col(agg.non_null)
    if agg.function is F.AVG:
        return _average(agg, avg_types[agg.index])
    return col(agg.value)


def _from_state(expr: exp.Expr, plan: ViewPlan, avg_types: Mapping[int, str]) -> exp.Expr:
    """`expr` (an output or HAVING) over the stored state: group keys and aggregate calls replaced."""
    keys = {g.sql(dialect=DIALECT): k for g, k in zip(plan.group_by, _keys(plan), strict=True)}
    calls = {a.call.sql(dialect=DIALECT): a for a in plan.aggregates}

    def replace(node: exp.Expr) -> exp.Expr:
        text = node.sql(dialect=DIALECT)
        if text in keys:
            return col(keys[text])
        if text in calls:
            return _final(calls[text], avg_types)
        node = node.copy()
        for name, child in list(node.args.items()):
            if isinstance(child, exp.Expr):
                node.set(name, replace(child))
            elif isinstance(child, list):
                node.set(name, [replace(c) if isinstance(c, exp.Expr) else c for c in child])
        return node

    return replace(expr)


def average_types(plan: ViewPlan) -> exp.Select | None:
    """A query whose described types are Spark's AVG result types of the view's AVG arguments."""
    avgs = [a for a in plan.aggregates if a.function is F.AVG]
    if not avgs:
        return None
    assert all(a.argument is not None for a in avgs)
    return _ungrouped(plan).select(
        *[exp.Avg(this=a.argument.copy()).as_(ident(_argument(a))) for a in avgs if a.argument is not None],
        copy=False,
    )


def view_select(
    plan: ViewPlan, backing: TableName, types: Mapping[str, str], avg_types: Mapping[int, str]
) -> exp.Select:
    """The model's columns from the stored state, cast to the types the model's SELECT gives; HAVING
    filters here, so a group that fails it keeps its state for the next refresh."""
    outputs = [
        exp.Cast(
            this=_from_state(o.expression, plan, avg_types), to=exp.DataType.build(types[o.name], dialect=DIALECT)
        ).as_(ident(o.name))
        for o in plan.outputs
    ]
    select = exp.select(*outputs).from_(backing.to_table())
    if plan.having is not None:
        select = select.where(_from_state(plan.having, plan, avg_types))
    return select


class AggregateRules:
    MONOTONE = False

    def build_select(self, plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        types = describe(plan.query)
        probe = average_types(plan)
        described = describe(probe) if probe is not None else {}
        avg_types = {a.index: described[_argument(a)] for a in plan.aggregates if a.function is F.AVG}
        return view_select(plan, backing, types, avg_types)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the group deltas; find the groups to recompute (reads those groups of the view);
        recompute them from the sources at the pinned versions; one MERGE."""
        plan = refresh.plan
        delta = delta_select(plan, refresh.old, refresh.new, refresh.staged)
        assert delta is not None
        name = refresh.temp("delta")
        refresh.run(cache_as(name, delta))
        stats = refresh.query(sql(delta_stats(plan, name)))[0]
        if int(stats["n"]) == 0:
            return Write("empty", empty_commit(refresh.backing), 0, 0)
        recomputed = None
        groups = 0
        rule_less = any(a.function is F.RECOMPUTED for a in plan.aggregates)
        if rule_less or int(stats.get("removing") or 0) > 0:
            lost = refresh.temp("lost")
            refresh.run(cache_as(lost, lost_extremes(plan, refresh.backing, name)))
            counted = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(lost))
            groups = int(refresh.query(sql(counted))[0]["n"])
            if groups:
                recomputed = refresh.temp("recomputed")
                refresh.run(cache_as(recomputed, recompute_select(plan, refresh.new, lost)))
        detail = f"{stats['n']} groups touched, {groups} recomputed from the sources"
        return Write("merge", merge_statement(plan, refresh.backing, name, recomputed), detail=detail)

    def append_statement(self, *args: object, **kwargs: object) -> exp.Insert:
        raise NotImplementedError("an aggregate view is not monotone: it has no append path")

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        rules = {
            F.COUNT_STAR: "count += delta",
            F.COUNT: "non-NULL count += delta",
            F.SUM: "sum += signed sum, non-NULL count += delta (NULL at 0)",
            F.AVG: "sum and non-NULL count += deltas; avg = sum / count when read",
            F.MIN: "least(stored, smallest added); recomputed for the groups whose minimum was removed",
            F.MAX: "greatest(stored, largest added); recomputed for the groups whose maximum was removed",
            F.RECOMPUTED: "no rule: recomputed from the sources for every group the change touches",
        }
        lines = [f"  change to {t}: net change feed, one row per copy, joined as in the view" for t in plan.tables]
        lines.append("    per group: " + ("the one global row" if not plan.group_by else "keys matched NULL-safe"))
        for agg in plan.aggregates:
            lines.append(f"    {agg.call.sql(dialect=DIALECT)}: {rules[agg.function]}")
        lines.append(
            "    apply: one MERGE of the group deltas (count 0: delete the group"
            + ("" if plan.group_by else ", except the global row")
            + "; new groups inserted); only appends: no recompute, no read of the view"
        )
        return lines


RULES = AggregateRules()
