"""Set-operation views: UNION [ALL], INTERSECT [ALL] and EXCEPT [ALL] of SELECTs the engine
maintains (`ir.SetOperations`).

Each branch is analyzed as a model of its own (with the model's CTEs): one source, inner or outer
joins, optionally SELECT DISTINCT. The view stores, per distinct output row, its copies in each
branch (`__ivm_c<i>`); every set operation is a function of those counts (`classes.setops`), so
one design maintains them all, nested as sqlglot parses them (INTERSECT binds tighter).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from sqlglot import exp

from dbt_ivm import verbatim
from dbt_ivm.analyze.parsing import refuse, snippet
from dbt_ivm.ir import (
    Branch,
    HiddenColumn,
    OutputColumn,
    Role,
    SetKind,
    SetNode,
    SetOperation,
    SetOperations,
    ViewClass,
    ViewPlan,
    branch_column,
)

KINDS = {exp.Union: SetKind.UNION, exp.Intersect: SetKind.INTERSECT, exp.Except: SetKind.EXCEPT}
BRANCH_CLASSES = (ViewClass.SINGLE_SOURCE, ViewClass.INNER_JOIN, ViewClass.OUTER_JOIN)
SEPARATE_MODEL = (
    "make the {0} its own fast_mv model and select from it{1} (fast_mv models can read each other), or use "
    "materialized='table'"
)

# what a branch of a class the counts cannot carry is named by (else "aggregate")
CONSTRUCTS = {
    ViewClass.WINDOW: "window",
    ViewClass.SEMI_JOIN: "subquery",
    ViewClass.SET_OPERATION: "query over a UNION ALL subquery",
}

BranchPlanner = Callable[[exp.Select], ViewPlan]


def is_set_operation(tree: exp.Expr) -> bool:
    return isinstance(tree, exp.SetOperation)


def set_operation_name(node: exp.SetOperation) -> str:
    """`UNION`, `INTERSECT ALL` …, as the model wrote it."""
    kind = KINDS.get(type(node))
    return (kind.value if kind else "set operation") + ("" if node.args.get("distinct") else " ALL")


def set_plan(tree: exp.SetOperation, plan_branch: BranchPlanner) -> ViewPlan:
    """The plan of a top-level set operation; `plan_branch` analyzes one branch (a SELECT with the
    model's CTEs) as a model of its own."""
    shape, branches = analyzed_branches(tree, tree.args.get("with_"), plan_branch)
    node = _nodes(shape, iter(branches))
    first = branches[0].plan
    sources = tuple(dataclasses.replace(s, index=b.offset + s.index) for b in branches for s in b.plan.sources)
    query = normalized_query(shape, branches)
    verbatim.check_round_trip(query)
    return ViewPlan(
        view_class=ViewClass.SET_OPERATION,
        query=first.query,
        sources=sources,
        tree=first.tree,
        where=None,
        outputs=tuple(OutputColumn(o.name, exp.column(o.name, quoted=True)) for o in first.outputs),
        hidden=tuple(HiddenColumn(branch_column(b.index), Role.BRANCH_COUNT, f"branch {b.index}") for b in branches),
        functions=first.functions,
        set_operation=SetOperations(query, node),
    )


def analyzed_branches(tree: exp.Expr, with_: exp.With | None, plan_branch: BranchPlanner) -> tuple[Shape, list[Branch]]:
    """The set operation's shape and its branches, each analyzed as a model of its own (with the
    CTEs `with_`), its sources numbered after the branches' before it (`Branch.offset`)."""
    selects: list[exp.Select] = []
    shape = _shape(tree, selects)
    branches: list[Branch] = []
    offset = 0
    for index, select in enumerate(selects):
        branch = _branch(index, select, with_, offset, plan_branch)
        branches.append(branch)
        offset += len(branch.plan.sources)
    _check_widths(branches, selects)
    return shape, branches


def normalized_query(shape: Shape, branches: list[Branch]) -> exp.Query:
    """The normalized set operation: each branch's normalized SELECT (DISTINCT put back)."""
    return _query(shape, iter(branches))


# The shape of the set operation as parsed: a branch's position, or (kind, distinct, left, right).
Shape = int | tuple[SetKind, bool, "Shape", "Shape"]


def _shape(node: exp.Expr, selects: list[exp.Select]) -> Shape:
    """The set operation's tree, its SELECTs appended to `selects` left to right."""
    while isinstance(node, exp.Subquery) and not node.alias:
        _plain(node)
        node = node.this
    if isinstance(node, exp.SetOperation):
        _plain(node)
        kind = KINDS.get(type(node))
        if kind is None:
            raise refuse(f"set operation {snippet(node)}", node, "use UNION, INTERSECT or EXCEPT")
        left = _shape(node.this, selects)
        return (kind, bool(node.args.get("distinct")), left, _shape(node.expression, selects))
    if not isinstance(node, exp.Select):
        raise refuse(
            f"a branch of a set operation that is not a SELECT ({snippet(node)})", node, "write it as a SELECT"
        )
    selects.append(node)
    return len(selects) - 1


ROW_ORDER = {
    "order": "ORDER BY",
    "sort": "SORT BY",
    "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY",
    "limit": "LIMIT",
    "offset": "OFFSET",
}
PLAIN = frozenset({"this", "expression", "distinct", "with_"})


def _plain(node: exp.Expr) -> None:
    """A set operation (or the parentheses around one) with nothing but its operands: no row
    order or limit, no BY NAME or CORRESPONDING (which pair columns by name)."""
    for arg, value in node.args.items():
        if arg in PLAIN or value is None or value is False or value == []:
            continue
        if arg in ROW_ORDER:
            raise refuse(f"{ROW_ORDER[arg]} on a set operation", value, "drop it: a view has no row order")
        raise refuse(
            f"a set operation with {arg.upper().replace('_', ' ')} ({snippet(node)})",
            node,
            "write a plain UNION, INTERSECT or EXCEPT, with the branches' columns in the same order",
        )


def _branch(index: int, select: exp.Select, with_: exp.With | None, offset: int, plan_branch: BranchPlanner) -> Branch:
    """One branch analyzed as a model of its own: its class must be one the counts can carry."""
    select = select.copy()
    distinct = select.args.get("distinct")
    if distinct is not None:
        if distinct.args.get("on"):
            raise refuse("DISTINCT ON", distinct, "use GROUP BY")
        select.set("distinct", None)
    if with_ is not None:
        select.set("with_", with_.copy())
    plan = plan_branch(select)
    if plan.view_class not in BRANCH_CLASSES:  # an aggregate (GROUP BY, aggregates, HAVING) or windows
        construct = CONSTRUCTS.get(plan.view_class, "aggregate")
        raise refuse(
            f"a{'n' * (construct == 'aggregate')} {construct} branch of a set operation ({snippet(select)})",
            select,
            SEPARATE_MODEL.format(construct, " in the set operation"),
        )
    return Branch(index, plan, offset, distinct is not None)


def _check_widths(branches: list[Branch], selects: list[exp.Select]) -> None:
    width = len(branches[0].plan.outputs)
    for branch, select in zip(branches, selects, strict=True):
        if len(branch.plan.outputs) != width:
            raise refuse(
                f"set operation branches with {width} and {len(branch.plan.outputs)} columns",
                select,
                "give every branch the same number of columns",
            )


def _nodes(shape: Shape, branches: Iterator[Branch]) -> SetNode:
    if isinstance(shape, int):
        return next(branches)
    kind, distinct, left, right = shape
    return SetOperation(kind, distinct, _nodes(left, branches), _nodes(right, branches))


def _query(shape: Shape, branches: Iterator[Branch]) -> exp.Query:
    """The normalized set operation: each branch's normalized SELECT (DISTINCT put back)."""
    if isinstance(shape, int):
        branch = next(branches)
        select = branch.plan.query.copy()
        if branch.distinct:
            select.set("distinct", exp.Distinct())
        return select
    kind, distinct, left, right = shape
    builder = {SetKind.UNION: exp.union, SetKind.INTERSECT: exp.intersect, SetKind.EXCEPT: exp.except_}[kind]
    return builder(_wrapped(left, branches), _wrapped(right, branches), distinct=distinct)


def _wrapped(shape: Shape, branches: Iterator[Branch]) -> exp.Query:
    query = _query(shape, branches)
    return query.subquery() if isinstance(query, exp.SetOperation) else query
