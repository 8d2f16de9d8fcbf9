"""Randomized differential tests: every refresh compared with a full recompute.

The in-suite sample is small and seeded; `--stress` runs the long version:
    .venv/bin/pytest tests/test_randomized.py --stress -s
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from sqlglot import exp

from dbt_ivm import render
from dbt_ivm.aggregates import Extreme
from dbt_ivm.classes import aggregate, changes, joins, outer_joins, outer_terms, terms, windows
from tests.harness import (
    AGGREGATES,
    CALCULATED,
    CHAINS,
    COERCED,
    JOINS,
    KEYED,
    LIMITS,
    MERGED,
    OR,
    OS,
    OUTER,
    SETOPS,
    SINGLE,
    SUBQUERIES,
    UNIONS,
    USING,
    WINDOWS,
    WT,
    A,
    AnsiHarness,
    B,
    Family,
    Harness,
    T,
    View,
    sources,
)

pytestmark = pytest.mark.spark

# The in-suite sample: a fixed-seed prefix of each family's stress run, sized to the suite's time
# budget (the outer family's one round still takes every flip and compensation path). Not in it
# (`--stress` runs them): `single` (the joins' rules, one source), `keyed` (its
# append paths are `test_engine_spark`'s appends under a unique key and above the stored keys),
# `coerced` (`test_keys_and_tolerance`'s cast join key), `using` (the same views with the rows that
# tell the readings apart, `test_engine_spark`), `merged` (the merges are analysis, held to Spark
# by `test_normalize_equivalence`; the merged views refresh as joins and outer joins), `chains`
# (its sample's round refreshed 1 of 11 views; chains refresh in `integration_tests/test_chains.py`,
# the TPC-DI project and the setops sample's `o_chain`).
SAMPLE = {"joins": 1, "aggregates": 1, "outer": 1, "windows": 1}
SAMPLE |= {"subqueries": 1, "setops": 1, "calculated": 1, "unions": 1}
# seed 7 but where its first round misses a kind of change: the windows' round 0 inserts only
SAMPLE_SEEDS = {"windows": 25}  # inserts, updates and deletes in w
# Views left out of a family's sample: each takes a path another view of the sample takes.
SAMPLE_SKIP = {
    "joins": {"j_three", "j_self", "j_comma"},  # j_five's terms, j_self3's self-join, j_two's equi-join
    "aggregates": {"a_key_not_shown"},  # a group key is stored whether shown or not: a_all's path
    "subqueries": {"q_in"},  # q_exists's positive correlation-key test
    # the calculated SELECT is merged into the aggregate: a_having's, a_join's, o_agg_full's refresh
    "calculated": {"c_case", "c_join", "c_chain", "c_left"},
    # u_self's tables do not change in the sample's round; u_cte_where is `test_setops_spark`'s `u`;
    # u_two_unions distributes a join over the feeds as u_join does
    "unions": {"u_self", "u_cte_where", "u_join"},
}
# x4, x9, x3, x13, x15, x5, x15, x14 views: 240 + 1035 + 450 + 1040 + 1125 + 500 + 525 + 630 checks
STRESS = {
    "chains": 45,
    "single": 60,
    "joins": 115,
    "keyed": 150,
    "aggregates": 80,
    "outer": 75,
    "coerced": 60,
    "using": 60,
    "windows": 35,
    "merged": 100,
    "subqueries": 40,  # x14 views: 560 checks
    "setops": 50,
    "calculated": 40,
    "unions": 60,  # x21 views: 1260 checks
}
# A family of SAMPLE_ALL views or more runs every other view in the sample (with the family's
# views those read), for the suite's time; `--stress` and `--rounds` run every view.
SAMPLE_ALL = 13
FAMILIES = [SINGLE, JOINS, KEYED, AGGREGATES, OUTER, COERCED, USING, MERGED, WINDOWS, CHAINS]
FAMILIES += [SUBQUERIES, SETOPS, CALCULATED, UNIONS]


def _run(spark, spark_db, family: Family, rounds: int, seed: int, minutes: float | None = None) -> None:
    start = time.time()
    harness = Harness(spark, spark_db, family, seed)
    report = harness.run(rounds, deadline=start + minutes * 60 if minutes else None, progress=minutes is not None)
    elapsed = time.time() - start
    print(f"\n{report.summary()} in {elapsed:.0f} s (seed {seed})\n{report.checked()}")
    harness.drop()
    assert not report.mismatches, "\n".join(
        f"round {m.round} view {m.view} changed {m.changed}: {m.diff[:5]}" for m in report.mismatches[:5]
    )
    assert report.refreshes > 0
    if family is KEYED:
        assert report.appends > 0, "no refresh took the append path"
    if family is OUTER:
        assert report.flips > 0, "the unique-key flip never ran"
        assert report.compensations > 0 and report.counted > 0, "the general or the counted compensation never ran"
        assert report.adoptions > 0, "no new row's only match went in the same round"


def sampled(family: Family) -> Family:
    """`family` without its SAMPLE_SKIP views, with every other view if it has SAMPLE_ALL or more,
    and the family's views those read."""
    skip = SAMPLE_SKIP.get(family.name, set())
    by_name = {v.name: v for v in family.views}
    assert skip <= by_name.keys(), skip - by_name.keys()
    kept: set[str] = set()
    views = family.views[::2] if len(family.views) >= SAMPLE_ALL else family.views
    todo = [v.name for v in views if v.name not in skip]
    while todo:
        name = todo.pop()
        if name not in kept:
            kept.add(name)
            todo.extend(sources(by_name[name]) & by_name.keys())
    return dataclasses.replace(family, views=tuple(v for v in family.views if v.name in kept))


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.name in SAMPLE], ids=lambda f: f.name)
def test_randomized_sample(spark, spark_db, family, request):
    rounds = request.config.getoption("--rounds")
    _run(
        spark,
        spark_db,
        family if rounds else sampled(family),
        rounds or SAMPLE[family.name],
        request.config.getoption("--seed") or SAMPLE_SEEDS.get(family.name, 7),
    )


def test_randomized_sums_near_their_limits_under_both_ansi_settings(spark, spark_db, request):
    """DECIMAL(38, 0) and BIGINT sums that pass their type's limit and come back (`harness.LIMITS`)."""
    for ansi in ("false", "true"):
        seed = request.config.getoption("--seed") or 7
        harness = AnsiHarness(spark, spark_db, LIMITS, seed, ansi=ansi)
        report = harness.run(request.config.getoption("--rounds") or 3)
        print(f"\nANSI {ansi}: {report.summary()}, {harness.overflows} checks where the model overflowed")
        harness.drop()
        assert not report.mismatches, [(m.round, m.view, m.diff[:3]) for m in report.mismatches[:5]]
        assert report.refreshes > 0
        assert ansi == "false" or harness.overflows > 0, "no sum passed its type's limit"


@pytest.mark.stress
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_randomized_stress(spark, spark_db, family, request):
    rounds = request.config.getoption("--rounds") or STRESS[family.name]
    _run(
        spark,
        spark_db,
        family,
        rounds,
        request.config.getoption("--seed") or 20261122,
        request.config.getoption("--minutes") or 24 * 60,
    )


# -- the harness must catch a broken refresh ---------------------------------------------
# Each test's seed is one of several probed that breaks in the first rounds; its round count only
# bounds the run, which stops at the first mismatch.


def _mismatches(spark, spark_db, family: Family, rounds: int, seed: int) -> int:
    harness = Harness(spark, spark_db, family, seed)
    try:
        harness.setup()
        return _until_mismatch(harness, rounds)
    finally:
        harness.drop()


def _until_mismatch(harness: Harness, rounds: int) -> int:
    """Rounds until one finds a mismatch, at most `rounds`: the mismatches found."""
    for i in range(rounds):
        harness.round(i)
        if harness.report.mismatches:
            break
    return len(harness.report.mismatches)


def _drop_deletes(monkeypatch) -> None:
    """Break the refresh: the change feeds' delete rows left out."""
    original = changes.change_select

    def without_deletes(source, start, end):
        select = original(source, start, end)
        feed = next(s for s in select.find_all(exp.Select) if s.args.get("group") is None)
        feed.where(exp.NEQ(this=render.col("_change_type"), expression=render.lit("delete")), copy=False)
        return select

    monkeypatch.setattr(changes, "change_select", without_deletes)


def test_harness_catches_a_consistency_test_that_disagrees(spark, spark_db, monkeypatch):
    """`agree` holds the consistency test's query to the harness's own comparison: blind on a
    view that differs (the verdict of its last comparison), or finding rows where nothing differs
    (a view built and never compared, read again). On the way, the harness catches a refresh
    whose change feeds lost their delete rows."""
    family = Family("broken_agree", (T,), (View("v", "SELECT * FROM {db}.t"),))
    harness = Harness(spark, spark_db, family, 3)
    try:
        harness.setup()
        monkeypatch.setattr(Harness, "consistency_sql", lambda self, view: "SELECT 1 AS x")
        assert harness.agree(family.views[0]), "a query that always finds rows agreed on an exact view"
        monkeypatch.setattr(Harness, "consistency_sql", lambda self, view: "SELECT 1 AS x WHERE FALSE")
        assert not harness.agree(family.views[0])
        _drop_deletes(monkeypatch)
        assert _until_mismatch(harness, 12) > 0
        assert harness.agree(family.views[0]), "a blind query agreed on a wrong view"
    finally:
        harness.drop()


def test_harness_catches_wrong_state_choice(spark, spark_db, monkeypatch):
    """Old versions of the other sources in every term: wrong when several sources changed."""
    monkeypatch.setattr(changes, "term_version", lambda other, changed, old, new: old)
    family = Family("broken_state", (A, B), (View("j", "SELECT a.k, a.v, b.w FROM {db}.a JOIN {db}.b ON a.k = b.k"),))
    assert _mismatches(spark, spark_db, family, 15, seed=3) > 0


def test_harness_catches_value_ranges_that_leave_out_nulls(spark, spark_db, monkeypatch):
    """The MERGE's value ranges without `OR IS NULL`: a change to a row with a NULL never finds it."""
    original = joins.value_ranges

    def without_nulls(columns, stats, table):
        return original(columns, {k: (False if k.startswith("nulls_") else v) for k, v in stats.items()}, table)

    monkeypatch.setattr(joins, "value_ranges", without_nulls)
    family = Family("broken_ranges", (T,), (View("v", "SELECT k, v FROM {db}.t"),))
    assert _breaks(spark, spark_db, family, 12, seed=3)


def test_harness_catches_a_kept_lost_extreme(spark, spark_db, monkeypatch):
    """No group recomputed after a delete: a removed MIN or MAX stays in the view."""
    original = aggregate.lost_groups
    monkeypatch.setattr(aggregate, "lost_groups", lambda *args: original(*args).where(exp.false()))
    view = View("m", "SELECT v, max(x) AS hi, min(k) AS lo FROM {db}.t GROUP BY v", aggregated=True)
    assert _mismatches(spark, spark_db, Family("broken_max", (T,), (view,)), 12, seed=4) > 0


def test_harness_catches_a_miscounted_extreme(spark, spark_db, monkeypatch):
    """The rows at a MIN or MAX counted one too many: a group keeps an extreme whose last row is gone."""
    original = Extreme.new_holders
    monkeypatch.setattr(
        Extreme, "new_holders", lambda *args: exp.Add(this=original(*args), expression=exp.Literal.number(1))
    )
    view = View("m", "SELECT v, max(x) AS hi, min(k) AS lo FROM {db}.t GROUP BY v", aggregated=True)
    assert _mismatches(spark, spark_db, Family("miscounted_max", (T,), (view,)), 12, seed=4) > 0


# An outer join's padded rows: what must be NULL-safe, and the compensation itself. One LEFT
# JOIN has padded rows enough to break on each; FULL joins are in the OUTER family's runs. The
# padded side changes every round (`odds`): each seed below breaks in its first two rounds.
def _left_join(name: str, on: str) -> Family:
    view = View("l", f"SELECT r.k, r.v, s.w FROM {{db}}.r r LEFT JOIN {{db}}.s s ON {on}")
    return Family(name, (OR, OS), (view,), odds=(("r", 0.3), ("s", 1.0)), restores=True)


LEFT_JOIN = _left_join("broken_outer", "r.k = s.k")


def _breaks(spark, spark_db, family: Family, rounds: int, seed: int) -> bool:
    """A mismatch, or a refresh that finds the stored state inconsistent and fails (never a wrong view)."""
    try:
        return _mismatches(spark, spark_db, family, rounds, seed) > 0
    except Exception as e:  # the MERGE's guard: a change removes rows the view does not hold
        if "inconsistent" not in str(e):
            raise
        return True


def test_harness_catches_identities_matched_not_null_safe(spark, spark_db, monkeypatch):
    """Padded rows have NULL identities: matched with `=`, their deletion never finds them."""

    def not_null_safe(plan, left, right):
        rids = [exp.EQ(this=render.col(s.rid, left), expression=render.col(s.rid, right)) for s in plan.sources]
        outs = [
            exp.NullSafeEQ(this=render.col(o.name, left), expression=render.col(o.name, right)) for o in plan.outputs
        ]
        return exp.and_(*rids, *outs)

    monkeypatch.setattr(joins, "key_match", not_null_safe)
    assert _breaks(spark, spark_db, LEFT_JOIN, 8, seed=7)


def test_harness_catches_an_identity_filter_without_padded_rows(spark, spark_db, monkeypatch):
    """The inner-join filter (identities of the change rows) misses a padded row a change removes."""
    monkeypatch.setattr(outer_joins.OuterJoinRules, "changed_identities", joins.JoinRules.changed_identities)
    assert _breaks(spark, spark_db, LEFT_JOIN, 8, seed=5)


def test_harness_catches_a_new_groups_sum_over_no_value_inserted_as_0(spark, spark_db, monkeypatch):
    """The MERGE inserts a new group's SUM as the terms left it (0028886's bug): a new customer whose
    only order, an orphan until then, is deleted in the same round holds the terms' 0, not NULL."""
    original = aggregate.merge_statement

    def raw_sums(*args):
        merge = original(*args)  # in the insert clause, IF(s.nn = 0, NULL, s.sum) back to s.sum
        merge.find(exp.Insert).transform(
            lambda e: e.args["false"] if isinstance(e, exp.If) and isinstance(e.args["true"], exp.Null) else e,
            copy=False,
        )
        return merge

    monkeypatch.setattr(aggregate, "merge_statement", raw_sums)
    view = next(v for v in OUTER.views if v.name == "o_agg_left")
    family = Family("broken_sum", (OR, OS), (view,), adopts=1.0)
    assert _mismatches(spark, spark_db, family, 8, seed=6) > 0


def test_harness_catches_missing_ns_compensation(spark, spark_db, monkeypatch):
    monkeypatch.setattr(outer_terms._Term, "_compensation", lambda self, node, changed, other, *rest: [])
    monkeypatch.setattr(terms, "decide_flips", lambda refresh, narrow, *_: (frozenset(), ""))  # no flip instead
    assert _breaks(spark, spark_db, LEFT_JOIN, 8, seed=5)


# The counted compensation (`outer_terms._Term._counted`) on a LEFT JOIN whose ON also holds a
# condition on the padded side alone.
FILTERED_LEFT_JOIN = _left_join("broken_counted", "r.k = s.k AND s.w = 'a'")


def test_harness_catches_a_counted_compensation_without_its_conditions(spark, spark_db, monkeypatch):
    """Counting every row of s with a row's key, not those that meet `s.w = 'a'`: an r row whose
    only matches fail it keeps or loses its padded row wrongly."""
    original = outer_terms._Term._counted
    monkeypatch.setattr(
        outer_terms._Term,
        "_counted",
        lambda self, node, x, change, narrow, keys, own: original(self, node, x, change, narrow, keys, []),
    )
    monkeypatch.setattr(terms, "decide_flips", lambda refresh, narrow, *_: (frozenset(), ""))  # no flip instead
    assert _breaks(spark, spark_db, FILTERED_LEFT_JOIN, 8, seed=9)


def test_harness_catches_a_counted_compensation_at_the_wrong_version(spark, spark_db, monkeypatch):
    """Counting s's rows after the change and adding the change's own again: a padded row's first
    match seems to come twice, and its last one never to go."""
    original = outer_terms._Term._counted

    def after(self, *args):
        self.versions, before = self.after, self.versions
        try:
            return original(self, *args)
        finally:
            self.versions = before

    monkeypatch.setattr(outer_terms._Term, "_counted", after)
    monkeypatch.setattr(terms, "decide_flips", lambda refresh, narrow, *_: (frozenset(), ""))  # no flip instead
    assert _breaks(spark, spark_db, LEFT_JOIN, 8, seed=1)


def test_harness_catches_outer_join_terms_narrowed_past_their_change_rows(spark, spark_db, monkeypatch):
    """Over an outer join, each side of a term (and the changed side's compensation reads)
    narrowed to the change set's smallest key only: matches and padded rows of the other change
    rows are lost or made up (an inner join's terms narrow by the same `joins.key_ranges`)."""
    original = joins.key_ranges

    def smallest_only(staged, keys, rows):  # the first piece's smallest key (`keys.key_pieces`)
        return original(staged, keys, [{k: r[k.replace("hi_", "lo_")] for k in r} for r in rows if r["p"] == 0])

    monkeypatch.setattr(joins, "key_ranges", smallest_only)
    assert _breaks(spark, spark_db, LEFT_JOIN, 8, seed=9)


def test_harness_catches_partitions_left_by_their_rows(spark, spark_db, monkeypatch):
    """A window view's touched partitions taken from the rows a change adds only: the partition a
    row leaves (deleted, or moved to another key by an update) keeps its stale rows."""
    original = windows.touched_select

    def added_only(*args, **kwargs):
        select = original(*args, **kwargs)
        net = select.find(exp.Having)
        net.set("this", exp.GT(this=exp.Sum(this=render.col("__ivm_d")), expression=render.lit(0)))
        return select

    monkeypatch.setattr(windows, "touched_select", added_only)
    sql = "SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY ts, id) AS rn FROM {db}.w"
    family = Family("broken_windows", (WT,), (View("wv", sql),))
    assert _mismatches(spark, spark_db, family, 12, seed=3) > 0
