"""Aggregate views: GROUP BY (or none: one global row), SELECT DISTINCT, over one source or joins.

The rows grouped are the model's FROM, joins and WHERE, over one source, inner joins, or LEFT,
RIGHT and FULL outer joins at any nesting: the change terms are those of the join tree
(`changes.delta_terms`; over outer joins `outer_terms`, whose compensation adds and removes the
padded rows, with the unique-key flip where `decide_flips` allows it), one row per copy with its
sign, so a padded row counts in its group like any other and its NULL arguments count nothing.

Stored row: one per group, its GROUP BY values (`__ivm_g_<i>`), its row count (`__ivm_count`) and
each aggregate's state, as its rule keeps it (`aggregates`: COUNT the non-NULL count, SUM
and AVG that count and the sum, MIN and MAX the extreme, every other aggregate its value).
`ref()` computes the model's columns from the state (`aggregate_view`: AVG = sum / count, as Spark
divides) and applies HAVING, so groups that fail it keep their state.

A refresh sums the change terms per group (`delta_select`: signed counts, sums added and
removed, the smallest and largest value each side added and removed), then in one MERGE adds
the deltas, deletes the groups whose count reaches 0 and inserts new ones (Oracle's aggregate
refresh). The groups no delta can maintain are recomputed whole from the sources at the pinned
versions, in the same commit (`lost_groups`): those that lose every row holding their MIN or MAX
(not every group a delete touched, as Oracle does: a MIN or MAX also stores how many rows hold
it, `Aggregate.holders`, counted in the same pass as the rest by GROUPING SETS, see
`groups.grouped_by_values`), those whose DOUBLE sum lost a NaN or an infinity, those whose
BIGINT or DECIMAL sum overflowed, and every touched group when the view has an aggregate without
a rule (COUNT(DISTINCT), STDDEV, percentiles …; its MIN and MAX count nothing then) or a DECIMAL
sum Spark would round when adding. Without those, sources that only appended recompute nothing
and read no stored group outside the MERGE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from dbt_ivm.aggregates import (
    Signs,
    SumChecks,
    extreme,
    if_,
    non_finite,
    overflow,
    removed_holders,
    removed_name,
    rule,
    state,
    stored_overflow,
    summed,
    zero_if_null,
)
from dbt_ivm.classes.aggregate_view import average_types, check_exact, view_select
from dbt_ivm.classes.changes import delta_terms
from dbt_ivm.classes.groups import (
    argument_name,
    at_extreme,
    count_columns,
    counted_arguments,
    grouped,
    grouped_by_values,
    grouping,
    key_names,
    match_keys,
    of_groups,
    slot,
    ungrouped,
)
from dbt_ivm.classes.joins import narrowed_flips
from dbt_ivm.classes.recompute import Recompute, delta_stats, lost_groups, recompute_rules
from dbt_ivm.classes.relations import Narrowing, snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Stage, Write, WritePath, stager
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.classes.union_leaf import leaf_relations, leaf_terms, over_leaf
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    Aggregate,
    TableName,
    ViewPlan,
)
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, raise_error, sql, temp_table
from dbt_ivm.verbatim import DIALECT

RECOMPUTED_FLAG = f"{HIDDEN_PREFIX}r"


def _recomputed(name: str) -> str:
    """The recomputed value of state column `name` (`__ivm_a_1` -> `__ivm_r_a_1`)."""
    return f"{HIDDEN_PREFIX}r_{name[len(HIDDEN_PREFIX) :]}"


def _state_columns(plan: ViewPlan) -> list[str]:
    return [COUNT_COLUMN, *(h.name for a in plan.aggregates for h in state(a))]


def _state(agg: Aggregate) -> list[exp.Expr]:
    """The stored state of `agg`, as aggregates over the view's rows (build)."""
    return rule(agg).build(agg)


def _whole_state(plan: ViewPlan) -> list[exp.Expr]:
    """The stored columns after the keys: the group's count and every aggregate's state."""
    return [exp.Count(this=exp.Star()).as_(ident(COUNT_COLUMN)), *(e for agg in plan.aggregates for e in _state(agg))]


def _snapshots(plan: ViewPlan, versions: Mapping[str, int]) -> dict[str, exp.Expr]:
    if plan.union is not None:  # the leaf's branches at the versions, in the placeholder's place
        return leaf_relations(plan, versions)
    return {s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False) for s in plan.sources}


def _state_select(
    plan: ViewPlan, name: Callable[[str], str] = str, flag: bool = False, where: exp.Expr | None = None
) -> exp.Select:
    """One row per group of the model's rows (those `where` keeps): keys, count and each
    aggregate's state, each column named `name(column)`, first the recompute flag if `flag`.
    A counted MIN or MAX also counts the rows at its extreme, in the same pass (`grouped_by_values`)."""
    state = _whole_state(plan)
    for e in state:
        e.set("alias", ident(name(e.alias)))
    flags = [exp.true().as_(ident(RECOMPUTED_FLAG))] if flag else []
    query = grouped(plan, [*flags, *state])
    if where is not None:
        query = query.where(where, copy=False)
    values = counted_arguments(plan)
    if not values:
        return query
    counts = {name(c) for c in count_columns(plan)}
    by_values = grouped_by_values(query, [grouping(g) for g in plan.group_by], values)
    select = of_groups(plan, by_values, [str(e.alias) for e in state], counts)
    if flag:  # a constant: the one global row over no rows is recomputed too
        select = select.select(exp.true().as_(ident(RECOMPUTED_FLAG)), copy=False)
    for agg in (a for a in plan.aggregates if a.counted):
        _, holders = at_extreme(agg, slot(plan, agg), col(name(COUNT_COLUMN)))
        select = select.select(holders.as_(ident(name(agg.holders))), copy=False)
    return select


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """One row per group at the pinned versions: keys, count, each aggregate's state."""
    return substitute(_state_select(plan), _snapshots(plan, versions))


def _rows(plan: ViewPlan) -> exp.Select:
    """The view's rows before grouping: group keys and the arguments of the aggregates with a rule."""
    keys = [grouping(g).as_(ident(k)) for g, k in zip(plan.group_by, key_names(plan), strict=True)]
    args = [
        summed(a, a.argument.copy()).as_(ident(argument_name(a))) for a in plan.aggregates if a.argument is not None
    ]
    return ungrouped(plan).select(*keys, *args, copy=False)


def delta_select(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    float_sums: frozenset[int] = frozenset(),
    flips: frozenset[int] = frozenset(),
    stage: Stage | None = None,
    narrow: Narrowing | None = None,
    checked_sums: frozenset[int] = frozenset(),
) -> exp.Select | None:
    """Per touched group: the count's delta, each aggregate's state delta, and for MIN/MAX the
    extreme of the values added (`__ivm_a_<k>`) and of those removed (`__ivm_del_<k>`).

    Rows come one per copy with `__ivm_d` = +1 or -1 (see `changes.signed_rows`). A sum's delta is
    the sum added less the sum removed, each a SUM of the arguments (no product `x * d`, which
    widens a DECIMAL, and no `-x`, which overflows an INT's smallest value). For SUM and AVG over
    floating point (`float_sums`), `__ivm_nf_<k>` counts removed NaN and infinite values: a sum
    cannot subtract them (NaN - NaN is NaN), so those groups are recomputed. For SUM and AVG kept
    as BIGINT or DECIMAL (`checked_sums`) the sums and their difference are `try_` arithmetic, and
    `__ivm_o_<k>` is 1 where one overflowed (under either ANSI setting: no error, no wrap, no
    NULL taken for nothing): those groups are recomputed.
    A view without GROUP BY gives exactly one row, also when no row changed.
    """
    if plan.union is not None:  # the rows over the leaf's change
        terms = leaf_terms(plan, _rows(plan), old, new, staged, stage)
    else:
        rows = delta_terms(
            plan, _rows(plan), old, new, staged, rids=False, signed=True, flips=flips, stage=stage, narrow=narrow
        )
        terms = [term for _, term in rows]
    if not terms:
        return None
    d = col(DELTA_COLUMN)
    signs = Signs(d, exp.GT(this=d.copy(), expression=lit(0)), exp.LT(this=d.copy(), expression=lit(0)))
    measures: list[exp.Expr] = [zero_if_null(exp.Sum(this=d.copy())).as_(ident(COUNT_COLUMN))]
    for agg in plan.aggregates:
        if agg.argument is not None:
            checks = SumChecks(agg.index in float_sums, agg.index in checked_sums)
            measures += rule(agg).delta(agg, col(argument_name(agg)), signs, checks)
    keys = [col(k) for k in key_names(plan)]
    select = exp.select(*keys, *measures).from_(union_all(terms).subquery(ident(f"{HIDDEN_PREFIX}t")))
    select = select.group_by(*[k.copy() for k in keys]) if keys else select
    if not any(a.counted for a in plan.aggregates):
        return select
    counts = count_columns(plan) | {non_finite(a) for a in plan.aggregates if a.index in float_sums}
    counts |= {overflow(a) for a in plan.aggregates if a.index in checked_sums}
    return _counted_deltas(plan, select, [str(m.alias) for m in measures], counts)


def _counted_deltas(plan: ViewPlan, select: exp.Select, carried: list[str], counts: set[str]) -> exp.Select:
    """The group deltas `select` (its columns `carried`) with each counted MIN or MAX's extreme
    added and removed, and how many rows at each, from the net change of each value of a counted
    argument: a value whose copies the terms add and remove alike has changed nothing (a join's
    terms can), the others were added or removed."""
    extremes = [a for a in plan.aggregates if a.counted]
    firsts = {slot(plan, a): a for a in reversed(extremes)}
    values = [col(argument_name(firsts[j])) for j in range(len(firsts))]
    keys = [col(k) for k in key_names(plan)]
    select = of_groups(plan, grouped_by_values(select, keys, values), carried, counts)
    net = col(COUNT_COLUMN)
    for agg in extremes:
        j = slot(plan, agg)
        added_extreme, added_holders = at_extreme(agg, j, net.copy(), exp.GT(this=net.copy(), expression=lit(0)))
        removed_extreme, removed_count = at_extreme(agg, j, net.copy(), exp.LT(this=net.copy(), expression=lit(0)))
        select = select.select(
            added_extreme.as_(ident(agg.value)),
            added_holders.as_(ident(agg.holders)),
            removed_extreme.as_(ident(removed_name(agg))),
            exp.Neg(this=removed_count).as_(ident(removed_holders(agg))),
            copy=False,
        )
    return select


def recompute_select(plan: ViewPlan, versions: Mapping[str, int], groups: str) -> exp.Select:
    """The whole stored state of the groups in `groups`, from the sources at the pinned versions
    (a semi-join on the keys, NULL-safe), each column renamed `_recomputed`."""
    wanted: exp.Expr | None = None
    if plan.group_by:
        lookup = f"{HIDDEN_PREFIX}f"
        same = exp.and_(
            *[
                exp.NullSafeEQ(this=col(k, lookup), expression=grouping(g))
                for k, g in zip(key_names(plan), plan.group_by, strict=True)
            ]
        )
        wanted = exp.Exists(this=exp.select(lit(1)).from_(temp_table(groups).as_(ident(lookup))).where(same))
    return substitute(_state_select(plan, _recomputed, flag=True, where=wanted), _snapshots(plan, versions))


def merge_source(plan: ViewPlan, delta: str, recomputed: str | None, alias: str) -> exp.Expr:
    """The MERGE's rows: the group deltas, with the recomputed state where there is some."""
    if recomputed is None:
        return temp_table(delta).as_(alias)
    extra = [col(_recomputed(c), "r") for c in _state_columns(plan)]
    flag = func("coalesce", col(RECOMPUTED_FLAG, "r"), exp.false()).as_(ident(RECOMPUTED_FLAG))
    select = (
        exp.select(exp.Column(this=exp.Star(), table=ident("d")), *extra, flag)
        .from_(temp_table(delta).as_("d"))
        .join(temp_table(recomputed).as_("r"), on=match_keys(plan, "d", "r"), join_type="left")
    )
    return select.subquery(ident(alias))


def _merged_state(
    plan: ViewPlan, backing: TableName, recomputed: str | None, rules: Recompute | None, count: exp.Expr
) -> tuple[dict[str, exp.Expr], dict[str, exp.Expr]]:
    """Each stored column's value after the MERGE, for a stored group (stored `t`, delta `s`)
    and for a new one: by the aggregates' rules, or the recomputed state where there is one."""
    t, s = "t", "s"
    corrupt = (
        f"fast_mv {backing}: the change set removes rows a group does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )

    def checked(value: exp.Expr, floor: int) -> exp.Expr:
        ok = exp.GTE(this=value.copy(), expression=lit(floor))
        return if_(ok, value.copy(), raise_error(corrupt))

    sets: dict[str, exp.Expr] = {COUNT_COLUMN: checked(count, 0 if not plan.group_by else 1)}
    inserts: dict[str, exp.Expr] = {COUNT_COLUMN: checked(col(COUNT_COLUMN, s), 1)}
    for agg in plan.aggregates:
        assert recomputed is not None or not rule(agg).per_group  # every touched group is recomputed
        for name, (update, insert) in rule(agg).merge(agg, t, s, _recomputed).items():
            sets[name], inserts[name] = update, insert
        if rules is not None and agg.index in rules.checked_sums:
            overflowed = exp.GT(this=col(overflow(agg), s), expression=lit(0))
            stored = stored_overflow(agg, t) if agg.index in rules.decimal_sums else exp.false()
            lost = f"fast_mv {backing}: {agg.call.sql(dialect=DIALECT)} overflowed and its group was not recomputed"
            sets[agg.value] = if_(exp.or_(overflowed, stored), func("raise_error", lit(lost)), sets[agg.value])
            inserts[agg.value] = if_(overflowed.copy(), func("raise_error", lit(lost)), inserts[agg.value])
    if recomputed is not None:
        flag = col(RECOMPUTED_FLAG, s)
        for values in (sets, inserts):
            for name in _state_columns(plan):
                if name != COUNT_COLUMN or values is inserts:
                    values[name] = if_(flag.copy(), col(_recomputed(name), s), values[name])
    return sets, inserts


def merge_statement(
    plan: ViewPlan, backing: TableName, delta: str, recomputed: str | None, rules: Recompute | None = None
) -> exp.Merge:
    """Add each group's deltas; delete a group whose count reaches 0 (not the global row); insert
    new ones (a group absent before and after, whose rows a join's terms added and removed, is
    left out). A recomputed group (`recomputed`, from `recompute_select`) takes its whole
    recomputed state. A count that would go negative is corrupt state, loudly.

    A BIGINT or DECIMAL sum adds with Spark's `+`, as Spark's SUM adds: an overflow is an error
    under ANSI; without it a BIGINT wraps (as SUM does: the wrapped sums add up to SUM's wrapped
    value) and a DECIMAL is NULL, as SUM is, and `lost_groups` recomputes that group at its next
    change. A group that is not recomputed while its stored or delta sum overflowed (`rules`)
    fails the MERGE: a sum is never added to a NULL that stands for an overflow.
    """
    t, s = "t", "s"
    count = exp.Add(this=col(COUNT_COLUMN, t), expression=col(COUNT_COLUMN, s))
    sets, inserts = _merged_state(plan, backing, recomputed, rules, count)
    whens = []
    if plan.group_by:
        emptied = exp.EQ(this=count.copy(), expression=lit(0))
        whens.append(exp.When(matched=True, source=False, condition=emptied, then=exp.var("DELETE")))
    whens.append(
        exp.When(
            matched=True,
            source=False,
            then=exp.Update(expressions=[exp.EQ(this=col(c), expression=v) for c, v in sets.items()]),
        )
    )
    keys = {k: col(k, s) for k in key_names(plan)}
    whens.append(
        exp.When(
            matched=False,
            source=False,
            condition=exp.NEQ(this=col(COUNT_COLUMN, s), expression=lit(0)),
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c in [*keys, *inserts]]),
                expression=exp.Tuple(expressions=[*keys.values(), *inserts.values()]),
            ),
        )
    )
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    return exp.Merge(
        this=target,
        using=merge_source(plan, delta, recomputed, s),
        on=match_keys(plan, t, s),
        whens=exp.Whens(expressions=whens),
    )


def state_types(plan: ViewPlan) -> exp.Select:
    """A query whose described types are the stored state's (see `recompute_rules`)."""
    return over_leaf(plan, grouped(plan, _whole_state(plan)))


def stored_state_types(refresh: Refresh) -> Mapping[str, str]:
    """The stored state's types: the storage's columns as the inspection described them, where it
    did and they hold every state column (the build created the storage from `build_select`, whose
    state columns are `state_types`' own aggregates, each carried through `of_groups` by MAX; a
    storage of another definition, settings, hidden columns or schema is not refreshed); else
    `state_types` described (one more statement)."""
    stored = refresh.storage_types
    if stored is not None and all(c in stored for c in _state_columns(refresh.plan)):
        return stored
    return refresh.describe(state_types(refresh.plan))


class AggregateRules:
    INSERTS = False  # the group deltas always MERGE

    def stages_changes(self, plan: ViewPlan) -> bool:
        """Only joins gain from staging: a cached change set has a size, so the joins broadcast it.
        Over one source the group deltas read the feed once, in the statement that caches them."""
        return len(plan.sources) > 1

    def build_select(
        self, plan: ViewPlan, versions: Mapping[str, int], types: Mapping[str, str] | None = None
    ) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        probe = average_types(plan)
        described = describe(probe) if probe is not None else {}
        check_exact(plan, described)
        avg_types = {a.index: described[argument_name(a)] for a in plan.aggregates if rule(a).averages}
        return view_select(plan, backing, avg_types)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the group deltas; count the groups to recompute (reads those groups of the view)
        and, when there are any, cache them and recompute their state from the sources at the
        pinned versions; one MERGE."""
        plan = refresh.plan
        rules = recompute_rules(plan, stored_state_types(refresh))
        narrow, flips, flipped = narrowed_flips(refresh)
        delta = delta_select(
            plan,
            refresh.old,
            refresh.new,
            refresh.staged,
            rules.float_sums,
            flips,
            stager(refresh),
            narrow,
            rules.checked_sums,
        )
        assert delta is not None
        name = refresh.temp("delta")
        refresh.run(cache_as(name, delta))
        recomputed, groups, removing, overflowed, touched = None, 0, 0, 0, ""
        extremes = any(rule(a).removes_extreme for a in plan.aggregates)
        if rules.every_group or extremes or rules.float_sums or rules.checked_sums:  # else the MERGE is all
            stats = refresh.query(sql(delta_stats(plan, name, rules, refresh.backing)))[0]
            if int(stats["n"]) == 0:
                return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0)
            removing, touched = int(stats.get("removing") or 0), f"{stats['n']} groups touched, "
            overflowed = int(stats.get("overflowed") or 0)
        if rules.every_group or removing or overflowed:
            # counted first, uncached: with counted extremes most refreshes lose no group
            lost = lost_groups(plan, refresh.backing, name, rules)
            counted = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(lost.subquery(ident(f"{HIDDEN_PREFIX}l")))
            groups = int(refresh.query(sql(counted))[0]["n"])
            if groups:
                cached, recomputed = refresh.temp("lost"), refresh.temp("recomputed")
                refresh.run(cache_as(cached, lost))
                refresh.run(cache_as(recomputed, recompute_select(plan, refresh.new, cached)))
        detail = f"{touched}{groups} recomputed from the sources" + (f"; {flipped}" if flipped else "")
        return Write(WritePath.MERGE, merge_statement(plan, refresh.backing, name, recomputed, rules), detail=detail)

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the MERGE reaches the stored groups by key; a view of groups stays small

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        lines = []
        for table in plan.tables:
            lines.append(f"  change to {table}: net change feed, one row per copy, joined as in the view")
            for s in (s for s in plan.sources if s.table.key == table.key):
                lines += [f"    {s.alias}: {step}" for step in terms_for(plan).climb_steps(s.index)]
        lines.append("    per group: " + ("the one global row" if not plan.group_by else "keys matched NULL-safe"))
        for agg in plan.aggregates:
            text = rule(agg).explain
            if (counted := extreme(agg)) is not None and agg.counted:
                text = (
                    f"{text.split(';')[0]}, and the count of the rows at the {counted.word} (+ added, - removed); "
                    f"recomputed only for the groups that lose every row at their {counted.word}"
                )
            lines.append(f"    {agg.call.sql(dialect=DIALECT)}: {text}")
        lines.append(
            "    recomputed groups (from the sources at the pinned versions) take their whole state from the "
            "recompute; SUM/AVG over DOUBLE also recompute a group that lost a NaN or infinity, BIGINT and DECIMAL "
            "sums a group whose change overflowed them (try_sum) or whose stored DECIMAL sum overflowed (NULL over "
            "non-NULL values), and DECIMAL sums of precision 38 and scale above 6 recompute every touched group "
            "(Spark rounds their additions)"
        )
        lines.append(
            "    apply: one MERGE of the group deltas (count 0: delete the group"
            + ("" if plan.group_by else ", except the global row")
            + "; new groups inserted)"
            + ("" if any(rule(a).per_group for a in plan.aggregates) else "; only appends: no recompute")
        )
        return lines


RULES = AggregateRules()
