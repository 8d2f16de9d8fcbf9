"""Views without aggregation: one source, or inner joins of several (N-way, self, non-equi).

Stored row: the view's columns, each source occurrence's row identity (`__ivm_rid_<i>`, a hash
of the columns the view reads) and a multiplicity (`__ivm_count`); `ref()` repeats each row
`count` times. A refresh sums the telescoping change terms per identity tuple and applies
them in one MERGE (count += delta, delete at 0), or one INSERT when every changed identity is
new; with a declared unique key, sources that only appended take the append path (one INSERT
straight from the change feeds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from dbt_ivm.classes.change_stats import (
    above_stored,
    delta_stats,
    key_not_null,
    raised_highs,
    ranged_columns,
    read_highs,
    tracked_columns,
    value_ranges,
)
from dbt_ivm.classes.changes import delta_terms
from dbt_ivm.classes.flips import repeats_check, repeats_in, with_repeats
from dbt_ivm.classes.identities import changed_identities, existing_identities, identity_filter, read_identities
from dbt_ivm.classes.keys import key_ranges, key_stats
from dbt_ivm.classes.relations import Narrowing, snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import NULL_KEY_FALLBACK, Describe, Refresh, Stage, Write, WritePath, stager
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.errors import StateError
from dbt_ivm.ir import COUNT_COLUMN, DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Side, TableName, ViewPlan
from dbt_ivm.render import cache_as, col, empty_commit, ident, lit, raise_error, sql, temp_table


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
    return repeated_rows([o.name for o in plan.outputs], backing)


def repeated_rows(columns: Sequence[str], backing: TableName) -> exp.Select:
    """`columns` of the stored rows, each row repeated `count` times."""
    n = ident(f"{HIDDEN_PREFIX}n")
    lateral = exp.Lateral(
        this=exp.Explode(this=exp.GenerateSeries(start=lit(1), end=col(COUNT_COLUMN))),
        view=True,
        alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[n]),
    )
    select = exp.select(*[col(c) for c in columns]).from_(backing.to_table())
    select.set("laterals", [lateral])
    return select


def narrowing(refresh: Refresh) -> Narrowing:
    """The filters `key_ranges` gives this refresh's terms, from one query over its staged change sets."""
    keys = terms_for(refresh.plan).join_keys()
    stats = key_stats(refresh.staged, keys)
    if stats is None:
        return {}
    return key_ranges(refresh.staged, keys, refresh.query(sql(stats)))


def narrowed_flips(refresh: Refresh) -> tuple[Narrowing, frozenset[int], str]:
    """This refresh's filters (`narrowing`) and the occurrences that take the unique-key flip,
    with its log detail (`Terms.flips`). Whether a change set repeats a flip key
    (`flips.repeats_check`) is asked in the filters' query (`flips.with_repeats`): one round trip."""
    terms = terms_for(refresh.plan)
    keys = terms.join_keys()
    stats, check = key_stats(refresh.staged, keys), repeats_check(refresh)
    narrow: Narrowing = {}
    answered = None
    if stats is not None:
        rows = refresh.query(sql(stats if check is None else with_repeats(stats, check)))
        narrow = key_ranges(refresh.staged, keys, rows)
        answered = None if check is None else repeats_in(rows)
    flips, detail = terms.flips(refresh, narrow, answered)
    return narrow, flips, detail


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
    corrupt = (
        f"fast_mv {backing}: the change set removes rows the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )
    whens = count_clauses(_stored_columns(plan), corrupt, t, s)
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


def count_clauses(columns: Sequence[str], corrupt: str, t: str, s: str) -> list[exp.When]:
    """A MERGE's clauses that add the change set `s`'s `__ivm_d` to the stored rows `t`'s count:
    delete at 0, else update; insert `columns` with the delta when no row matches. A count that
    would not be positive fails the MERGE with `corrupt`."""
    new_count = exp.Add(this=col(COUNT_COLUMN, t), expression=col(DELTA_COLUMN, s))

    def positive_or_fail(value: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.GT(this=value.copy(), expression=lit(0)), true=value.copy(), false=raise_error(corrupt))

    return [
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
                this=exp.Tuple(expressions=[col(c) for c in [*columns, COUNT_COLUMN]]),
                expression=exp.Tuple(
                    expressions=[col(c, s) for c in columns] + [positive_or_fail(col(DELTA_COLUMN, s))]
                ),
            ),
        ),
    ]


class IdentityRules:
    """Views stored per identity tuple with a multiplicity: joins and outer joins (`outer_joins`)."""

    INSERTS = True

    def stages_changes(self, plan: ViewPlan) -> bool:
        return True  # read by the change set, its statistics, the identity filter and the probe

    def build_select(
        self, plan: ViewPlan, versions: Mapping[str, int], types: Mapping[str, str] | None = None
    ) -> exp.Select:
        return build_select(plan, versions)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        return view_select(plan, backing)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the net change per identity tuple once, then one MERGE, INSERT, or nothing."""
        plan = refresh.plan
        narrow, flips, detail = narrowed_flips(refresh)
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
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, detail, highs=refresh.highs)
        tracked, highs = tracked_columns(ranged), refresh.highs
        if min_d > 0 and not refresh.unique_key and highs is None and tracked:
            highs = read_highs(refresh, tracked)  # once: the watermark carries them from now on
        raised = raised_highs(highs, tracked, stats)
        if min_d > 0 and (
            (refresh.unique_key and keyed == n)  # a NULL key makes no row new: probe for it
            or above_stored(highs, tracked, stats)
            or self.all_new(refresh, name, value_ranges(ranged, stats, "t"))
        ):
            return Write(
                WritePath.INSERT, insert_statement(plan, refresh.backing, name), inserted, 0, detail, highs=raised
            )
        identities = self.changed_identities(refresh, name)
        merge = merge_statement(plan, refresh.backing, name, identities, ranged, stats)
        return Write(WritePath.MERGE, merge, inserted, deleted, detail, check_repeats=True, highs=raised)

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return ranged_columns(plan, types)

    def changed_identities(self, refresh: Refresh, delta: str) -> dict[int, list[int]] | None:
        """Each changed occurrence's change-row identities, or None when too many to write out."""
        return read_identities(refresh, changed_identities(refresh.staged))

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


class JoinRules(IdentityRules):
    """One source, or inner joins: monotone, so sources that only appended take the append path."""

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


RULES = JoinRules()
