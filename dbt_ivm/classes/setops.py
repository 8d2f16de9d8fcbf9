"""Set-operation views: UNION [ALL], INTERSECT [ALL] and EXCEPT [ALL] of single-source, join and
outer-join SELECTs (see `analyze.setops`).

Stored row: one per distinct output row (its columns compared NULL-safe, as a set operation
compares rows), with its copies in each branch (`__ivm_c<i>`). Every set operation is a function
of those counts (`multiplicity`): UNION ALL adds them, UNION is 1 while any is positive, INTERSECT
ALL takes the least, EXCEPT ALL the difference above 0, …; `ref()` repeats each row that many
times. A refresh computes each branch's change with the change terms its own class uses
(`changes.delta_terms`), nets them per output row into a change of each branch's count, and one
MERGE adds them (delete when every count is 0). The columns take the model's types: Spark widens
the branches' types to a common one, and each branch's values are cast to it.

Spark groups and compares -0.0 as 0.0 (also inside arrays and structs). A UNION ALL of plain
branches keeps each row as its branch gives it, so there a floating-point column is grouped and
matched by its text, which tells the two apart, and its value carried as it is (`_textual`); every
other set operation compares rows as Spark does, so its rows keep Spark's equality.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from sqlglot import exp

from dbt_ivm.classes.changes import delta_terms, normalized_when_grouped
from dbt_ivm.classes.relations import snapshot_relation, substitute, union_all
from dbt_ivm.classes.rules import Describe, Refresh, Write, WritePath
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    Branch,
    SetKind,
    SetNode,
    SetOperations,
    TableName,
    ViewPlan,
    branch_column,
)
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, raise_error, sql, temp_table


def _setops(plan: ViewPlan) -> SetOperations:
    assert plan.set_operation is not None, "not a set-operation view"
    return plan.set_operation


def _names(plan: ViewPlan) -> list[str]:
    return [o.name for o in plan.outputs]


def _counts(plan: ViewPlan) -> list[str]:
    return [branch_column(b.index) for b in _setops(plan).branches]


def _keeps_every_row(node: SetNode) -> bool:
    """UNION ALL of branches without DISTINCT: no row is compared with another."""
    if isinstance(node, Branch):
        return not node.distinct
    return (
        node.kind is SetKind.UNION
        and not node.distinct
        and _keeps_every_row(node.left)
        and _keeps_every_row(node.right)
    )


def _textual(plan: ViewPlan, types: Mapping[str, str] | None) -> frozenset[str]:
    """The output columns a stored row is told apart by as text (`types`: the model's column
    types): those of a floating-point type, where the view keeps every row (`_keeps_every_row`)."""
    if not types or not _keeps_every_row(_setops(plan).tree):
        return frozenset()
    return frozenset(n for n in _names(plan) if normalized_when_grouped(types.get(n, "")))


def _identity(column: exp.Expr, name: str, textual: frozenset[str]) -> exp.Expr:
    """What tells stored rows apart in `column` (`name`): its text for a `textual` one."""
    return exp.Cast(this=column, to=exp.DataType.build("string")) if name in textual else column


def branch_plan(plan: ViewPlan, branch: Branch) -> ViewPlan:
    """The branch's own plan with the view's sources (an upstream read through its storage),
    numbered from 0 as the branch's terms number them."""
    count = len(branch.plan.sources)
    sources = tuple(
        dataclasses.replace(s, index=s.index - branch.offset) for s in plan.sources[branch.offset :][:count]
    )
    return dataclasses.replace(branch.plan, sources=sources)


def projected(select: exp.Select, names: list[str], types: Mapping[str, str]) -> exp.Select:
    """The branch's SELECT with the view's column names (the first branch's), each value cast to
    the model's type where it is known (Spark widens the branches to it)."""
    select = select.copy()
    columns = []
    for e, name in zip(select.expressions, names, strict=True):
        value = e.unalias().copy()
        if name in types:
            value = exp.Cast(this=value, to=exp.DataType.build(types[name], dialect="spark"))
        columns.append(value.as_(ident(name)))
    select.set("expressions", columns)
    return select


def _tagged(rows: exp.Query, plan: ViewPlan, branch: int, copies: exp.Expr) -> exp.Select:
    """`rows`' columns, `copies` as branch `branch`'s count, 0 as every other branch's."""
    counts = [
        (copies.copy() if b.index == branch else lit(0)).as_(ident(c))
        for b, c in zip(_setops(plan).branches, _counts(plan), strict=True)
    ]
    return exp.select(*[col(n) for n in _names(plan)], *counts).from_(rows.subquery(ident(f"{HIDDEN_PREFIX}b")))


def _summed(rows: exp.Query, plan: ViewPlan, textual: frozenset[str] = frozenset()) -> exp.Select:
    """One row per distinct output row of `rows`, each branch's count summed; a `textual` column
    grouped by its text, its value carried (`any_value`: one text, one value)."""
    names = [col(n) for n in _names(plan)]
    values = [func("any_value", c).as_(ident(c.name)) if c.name in textual else c for c in names]
    sums = [exp.Sum(this=col(c)).as_(ident(c)) for c in _counts(plan)]
    keys = [_identity(n.copy(), n.name, textual) for n in names]
    return exp.select(*values, *sums).from_(rows.subquery(ident(f"{HIDDEN_PREFIX}u"))).group_by(*keys)


def branch_rows(plan: ViewPlan, branch: Branch, names: list[str], versions: Mapping[str, int] | None) -> exp.Select:
    """The branch's SELECT under `names` (`projected`, no casts), its sources at `versions` (None: as they are)."""
    sub = branch_plan(plan, branch)
    rels = {
        s.alias: snapshot_relation(s, versions[s.table.key], with_rid=False)
        for s in sub.sources
        if versions is not None
    }
    return substitute(projected(sub.query, names, {}), rels)


def branch_staged(branch: Branch, staged: Mapping[int, str]) -> dict[int, str]:
    """The cached change sets of the branch's own sources, by their index in the branch."""
    count = len(branch.plan.sources)
    return {i - branch.offset: name for i, name in staged.items() if 0 <= i - branch.offset < count}


def build_select(
    plan: ViewPlan, versions: Mapping[str, int] | None, types: Mapping[str, str] | None = None
) -> exp.Select:
    """The storage at the pinned versions (None: the tables as they are, for their types): each
    distinct output row with its copies per branch (`types`: the model's column types, `_textual`).
    The branches' types are widened by the UNION ALL that combines them, as the model's set
    operation widens them."""
    tagged = []
    for branch in _setops(plan).branches:
        tagged.append(_tagged(branch_rows(plan, branch, _names(plan), versions), plan, branch.index, lit(1)))
    return _summed(union_all(tagged), plan, _textual(plan, types))


def delta_select(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str],
    types: Mapping[str, str],
) -> exp.Select | None:
    """The change of each branch's count per output row: each branch's change terms, netted; rows
    whose counts all net to 0 left out. None when no source moved."""
    tagged = []
    for branch in _setops(plan).branches:
        sub = branch_plan(plan, branch)
        query = projected(sub.query, _names(plan), types)
        for _, term in delta_terms(sub, query, old, new, branch_staged(branch, staged), rids=False):
            tagged.append(_tagged(term, plan, branch.index, col(DELTA_COLUMN)))
    if not tagged:
        return None
    summed = _summed(union_all(tagged), plan, _textual(plan, types))
    changed = [exp.NEQ(this=exp.Sum(this=col(c)), expression=lit(0)) for c in _counts(plan)]
    return summed.having(exp.or_(*changed))


def multiplicity(node: SetNode, count: Callable[[int], exp.Expr]) -> exp.Expr:
    """A row's copies in the view, from its copies in each branch (`count(i)`, never negative)."""
    if isinstance(node, Branch):
        copies = count(node.index)
        return _one_if(exp.GT(this=copies, expression=lit(0))) if node.distinct else copies
    left, right = multiplicity(node.left, count), multiplicity(node.right, count)
    if node.kind is SetKind.UNION:
        total = exp.Add(this=_grouped(left), expression=_grouped(right))
        return _one_if(exp.GT(this=total, expression=lit(0))) if node.distinct else total
    if node.kind is SetKind.INTERSECT:
        if node.distinct:
            return _one_if(exp.and_(exp.GT(this=left, expression=lit(0)), exp.GT(this=right, expression=lit(0))))
        return func("least", left, right)
    if node.distinct:
        return _one_if(exp.and_(exp.GT(this=left, expression=lit(0)), exp.EQ(this=right, expression=lit(0))))
    return func("greatest", exp.Sub(this=_grouped(left), expression=_grouped(right)), lit(0))


def _grouped(operand: exp.Expr) -> exp.Expr:
    """An operand of + or -, parenthesized when it is itself one."""
    return exp.paren(operand, copy=False) if isinstance(operand, exp.Binary) else operand


def _one_if(condition: exp.Expr) -> exp.Expr:
    return exp.If(this=condition, true=lit(1), false=lit(0))


def view_select(plan: ViewPlan, backing: TableName, types: Mapping[str, str] | None = None) -> exp.Select:
    """What `ref()` returns: each stored row repeated by its multiplicity, in the model's types."""
    copies = multiplicity(_setops(plan).tree, lambda i: col(branch_column(i)))
    # `*`: a downstream fast_mv reads this select over the storage's change feed, `_change_type` too
    kept = (
        exp.select(exp.Star(), copies.as_(ident(COUNT_COLUMN)))
        .from_(backing.to_table())
        .where(exp.GT(this=copies.copy(), expression=lit(0)))
    )
    n = ident(f"{HIDDEN_PREFIX}n")
    lateral = exp.Lateral(
        this=exp.Explode(this=exp.GenerateSeries(start=lit(1), end=col(COUNT_COLUMN))),
        view=True,
        alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[n]),
    )
    columns: list[exp.Expr] = []
    for name in _names(plan):
        typed = (types or {}).get(name)
        value: exp.Expr = col(name)
        columns.append(
            exp.Cast(this=value, to=exp.DataType.build(typed, dialect="spark")).as_(ident(name)) if typed else value
        )
    select = exp.select(*columns).from_(kept.subquery(ident(f"{HIDDEN_PREFIX}r")))
    select.set("laterals", [lateral])
    return select


def merge_statement(
    plan: ViewPlan, backing: TableName, delta: str, types: Mapping[str, str] | None = None
) -> exp.Merge:
    """Add each branch's count change, matching every output column NULL-safe (a `_textual` one by
    its text): delete a row when every count reaches 0, else update; insert a new row. A count that
    would go negative is corrupt state, loudly."""
    t, s = "t", "s"
    corrupt = (
        f"fast_mv {backing}: a change removes copies of a row that a branch of the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )
    names, counts = _names(plan), _counts(plan)

    def checked(value: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.GTE(this=value.copy(), expression=lit(0)), true=value.copy(), false=raise_error(corrupt))

    added = {c: exp.Add(this=col(c, t), expression=col(c, s)) for c in counts}
    whens = [
        exp.When(
            matched=True,
            source=False,
            condition=exp.and_(*[exp.EQ(this=v.copy(), expression=lit(0)) for v in added.values()]),
            then=exp.var("DELETE"),
        ),
        exp.When(
            matched=True,
            source=False,
            then=exp.Update(expressions=[exp.EQ(this=col(c), expression=checked(v)) for c, v in added.items()]),
        ),
        exp.When(
            matched=False,
            source=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c in [*names, *counts]]),
                expression=exp.Tuple(expressions=[col(n, s) for n in names] + [checked(col(c, s)) for c in counts]),
            ),
        ),
    ]
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    textual = _textual(plan, types)
    on = exp.and_(
        *[
            exp.NullSafeEQ(this=_identity(col(n, t), n, textual), expression=_identity(col(n, s), n, textual))
            for n in names
        ]
    )
    return exp.Merge(this=target, using=temp_table(delta).as_(s), on=on, whens=exp.Whens(expressions=whens))


class SetOperationRules:
    """Set operations: per-branch counts, changed by each branch's terms, applied by one MERGE."""

    INSERTS = False

    def stages_changes(self, plan: ViewPlan) -> bool:
        return True  # every branch's terms read them

    def build_select(
        self, plan: ViewPlan, versions: Mapping[str, int], types: Mapping[str, str] | None = None
    ) -> exp.Select:
        return build_select(plan, versions, types)

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        model = describe(exp.select("*").from_(plan.model_query.subquery(ident(f"{HIDDEN_PREFIX}m"))))
        stored = describe(build_select(plan, None))
        differing = {n: t for n, t in model.items() if stored.get(n) != t}
        return view_select(plan, backing, differing)

    def apply(self, refresh: Refresh) -> Write:
        """Cache the counts' changes, then one MERGE."""
        plan = refresh.plan
        delta = delta_select(plan, refresh.old, refresh.new, refresh.staged, refresh.output_types)
        assert delta is not None
        name = refresh.temp("delta")
        refresh.run(cache_as(name, delta))
        rows = int(refresh.query(sql(exp.select(exp.Count(this=exp.Star()).as_("n")).from_(temp_table(name))))[0]["n"])
        if rows == 0:
            return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, "the branches' changes cancel")
        merge = merge_statement(plan, refresh.backing, name, refresh.output_types)
        return Write(WritePath.MERGE, merge, detail=f"{rows} rows' counts changed")

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        lines = []
        for branch in _setops(plan).branches:
            tables = ", ".join(str(t) for t in branch.plan.tables)
            lines.append(f"  change to {tables} (branch {branch.index}, {branch.plan.view_class.value}):")
            lines.append(
                f"    the branch's change terms, netted per output row into the change of {branch_column(branch.index)}"
            )
        lines.append(
            "    apply: one MERGE on every output column (NULL-safe): counts += their changes, delete when all "
            "are 0; the view repeats each row by "
            + multiplicity(_setops(plan).tree, lambda i: col(branch_column(i))).sql(dialect="spark")
        )
        return lines

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        return {}  # the MERGE reads every stored row


RULES = SetOperationRules()
