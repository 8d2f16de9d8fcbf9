"""A UNION ALL leaf at refresh time (`ir.UnionLeaf`, `analyze.union_leaf`): what an aggregate's
query, or a window view's windows, read in the placeholder's place.

- At pinned versions (a build, a recompute): `leaf_relations`, the UNION ALL of the branches, each
  over its sources `VERSION AS OF` their pinned versions; the UNION ALL widens the branches' types
  as the model's does.
- As a change: `leaf_terms`, the aggregate's query over the leaf's change, which is the UNION ALL
  of every branch's change terms (`changes.delta_terms`, the terms a set operation's branch takes:
  one row per copy, `__ivm_d` +1 or -1). The leaf is a sum of its branches, and each branch is
  multilinear in its own occurrences, so the leaf's change is the sum of each branch's own
  telescoping sum, exact when several sources moved at once (a source read by two branches is
  two occurrences, one in each). Where only some branches change, a typed empty read of the whole
  leaf joins the UNION ALL (`WHERE FALSE`): the change has the leaf's widened types, not those of
  the branches that changed.
- As it is now (no versions): `over_leaf`, for the queries a build only describes.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.classes.changes import delta_terms
from dbt_ivm.classes.relations import substitute, union_all
from dbt_ivm.classes.rules import Stage
from dbt_ivm.classes.setops import branch_plan, branch_rows, branch_staged, projected
from dbt_ivm.ir import DELTA_COLUMN, HIDDEN_PREFIX, UnionLeaf, ViewPlan
from dbt_ivm.render import col, ident, lit


def _leaf(plan: ViewPlan) -> UnionLeaf:
    assert plan.union is not None, "no UNION ALL leaf"
    return plan.union


def _positional(plan: ViewPlan) -> list[str]:
    return [f"{HIDDEN_PREFIX}u{i}" for i in range(len(_leaf(plan).columns))]


def _named(plan: ViewPlan, rows: exp.Query, *extra: str) -> exp.Select:
    """`rows` (the branches' UNION ALL, under positional names) under the union's column names.

    The branches name their columns `__ivm_u<i>` and this select renames them: with the union's
    own names, Spark 4.1's optimizer (`RemoveRedundantAliases`) fails on a table read at one
    version by two branches under a grouping by sets ("the plan … became unresolved")."""
    columns = [col(p).as_(ident(n)) for p, n in zip(_positional(plan), _leaf(plan).columns, strict=True)]
    return exp.select(*columns, *[col(e) for e in extra]).from_(rows.subquery(ident(f"{HIDDEN_PREFIX}lu")))


def _rows(plan: ViewPlan, versions: Mapping[str, int] | None) -> exp.Select:
    """The leaf's rows: each branch under the union's column names, its sources at `versions`
    (None: as they are)."""
    branches = [branch_rows(plan, branch, _positional(plan), versions) for branch in _leaf(plan).branches]
    return _named(plan, union_all(branches))


def leaf_relations(plan: ViewPlan, versions: Mapping[str, int] | None) -> dict[str, exp.Expr]:
    """The relation that stands for the placeholder (by its alias), the leaf at `versions`."""
    leaf = _leaf(plan)
    return {leaf.alias: _rows(plan, versions).subquery(ident(leaf.alias))}


def over_leaf(plan: ViewPlan, query: exp.Select) -> exp.Select:
    """`query` (over the plan's placeholder) reading the leaf's sources as they are: a query to describe."""
    return substitute(query, leaf_relations(plan, None)) if plan.union is not None else query


def _change(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str],
    stage: Stage | None,
) -> exp.Query | None:
    """The leaf's change, one row per copy with `__ivm_d` +1 or -1; None when no branch moved."""
    leaf = _leaf(plan)
    names = _positional(plan)
    terms: list[exp.Select] = []
    for branch in leaf.branches:
        sub = branch_plan(plan, branch)
        local = branch_staged(branch, staged)
        query = projected(sub.query, names, {})
        terms += [t for _, t in delta_terms(sub, query, old, new, local, rids=False, signed=True, stage=stage)]
    if not terms:
        return None
    typed = exp.select(*[col(n) for n in leaf.columns], lit(0).as_(ident(DELTA_COLUMN)))
    typed = typed.from_(_rows(plan, new).subquery(ident(leaf.alias))).where(exp.false())
    return _named(plan, union_all([*terms, typed]), DELTA_COLUMN)


def leaf_terms(
    plan: ViewPlan,
    query: exp.Select,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    stage: Stage | None = None,
) -> list[exp.Select]:
    """`query` (over the placeholder) over the leaf's change, selecting its `__ivm_d`: the one
    term of the view's change (none when no branch moved)."""
    change = _change(plan, old, new, staged or {}, stage)
    if change is None:
        return []
    alias = _leaf(plan).alias
    term = substitute(query, {alias: change.subquery(ident(alias))})
    return [term.select(col(DELTA_COLUMN, alias).as_(ident(DELTA_COLUMN)), copy=False)]
