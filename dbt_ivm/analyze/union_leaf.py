"""An aggregate or a window over a UNION ALL subquery (or CTE): the UNION ALL as a derived leaf
(`ir.UnionLeaf`).

`select feed, d, count(*), max(amt) from (select 'a' as feed, d, amt from db.a union all select
'b', d, amt from db.b) u group by feed, d`: each branch is analyzed as a model of its own (one
source, inner or outer joins, as a set operation's branch, `analyze.setops`), and the aggregate as
a model over one table, a placeholder (`ir.UNION_PLACEHOLDER`) with the union's columns. The plan
is the aggregate's, its sources the branches' (numbered as a set operation numbers them), and
`classes.union_leaf` reads the leaf in the placeholder's place: its rows at the pinned versions
for a build or a recompute, the UNION ALL of its branches' change terms for a refresh. A window
view's windows read the leaf the same way, also from the derived table a keep-the-latest reads
(`SELECT * FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn FROM (<UNION ALL>) u) d WHERE rn = 1`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from dbt_ivm import verbatim
from dbt_ivm.analyze.parsing import DIALECT, Schema, nested_schema, refuse, snippet
from dbt_ivm.analyze.setops import SEPARATE_MODEL, analyzed_branches, normalized_query
from dbt_ivm.analyze.shape import window_hidden_columns
from dbt_ivm.ir import UNION_PLACEHOLDER, Branch, UnionLeaf, ViewClass, ViewPlan

ModelPlanner = Callable[[exp.Select, Schema], ViewPlan]
PLACEHOLDER_DB = "__ivm_leaf"
LEAF_CLASSES = (ViewClass.AGGREGATE, ViewClass.WINDOW)  # the classes that read a union as a leaf


class Found(NamedTuple):
    """A UNION ALL the query `select` reads as its one FROM item (or that the windows' derived
    table it reads as its one FROM item reads as its own): its body, its alias, its CTE (if one),
    and the FROM item (`select`'s, or the derived table's) that reads it."""

    select: exp.Select
    union: exp.Union
    alias: str
    cte: exp.CTE | None
    item: exp.Expr


def unwrapped(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Subquery) and not node.alias:
        node = node.this
    return node


def all_union_all(node: exp.Expr) -> bool:
    return all(isinstance(n, exp.Union) and not n.args.get("distinct") for n in node.find_all(exp.SetOperation))


def union_read(select: exp.Select, item: exp.Expr) -> tuple[exp.Union, str, exp.CTE | None] | None:
    """The UNION ALL subquery, or CTE, that the FROM or JOIN item `item` of `select` reads: its
    body, its alias, the CTE; None for anything else."""
    cte = None
    if isinstance(item, exp.Subquery) and item.alias:
        if item.args["alias"].columns:
            return None
        body = unwrapped(item.this)
    elif isinstance(item, exp.Table) and not item.db:
        cte = _cte_named(select, item)
        if cte is None or cte.args["alias"].columns:
            return None
        body = unwrapped(cte.this)
    else:
        return None
    if not isinstance(body, exp.Union) or not all_union_all(body):
        return None
    return body, item.alias_or_name, cte


def _cte_named(select: exp.Select, table: exp.Table) -> exp.CTE | None:
    """The CTE of `select` that the table reference `table` (no database) names, if one."""
    with_ = select.args.get("with_")
    name = table.name.lower()
    return next((c for c in (with_.expressions if with_ else []) if c.alias_or_name.lower() == name), None)


def reads_of(select: exp.Select, cte: exp.CTE) -> int:
    """How many times `select` reads the CTE `cte`."""
    name = cte.alias_or_name.lower()
    return sum(1 for t in select.find_all(exp.Table) if not t.db and t.name.lower() == name)


def find(select: exp.Expr) -> Found | None:
    """The UNION ALL subquery, or CTE read once, that `select` reads as its only FROM item; or the
    one that the derived table `select` reads so (a subquery, or a CTE read once) reads as its
    only FROM item, where that derived table computes windows (`SELECT * FROM (SELECT …,
    ROW_NUMBER() OVER (…) AS rn FROM (<UNION ALL>) u) d WHERE rn = 1`). None for anything else (a
    set operation elsewhere is refused by `analyze.refusals`)."""
    if not reads_one(select):
        return None
    assert isinstance(select, exp.Select)
    item = select.args["from_"].this
    read = union_read(select, item)
    if read is None:
        body = derived_body(select, item)
        if body is None or not reads_one(body) or body.find(exp.Window) is None:
            return None
        item = body.args["from_"].this
        read = union_read(select, item)  # a CTE is the model's
        if read is None:
            return None
    if read[2] is not None and reads_of(select, read[2]) != 1:
        return None
    return Found(select, *read, item)


def reads_one(select: exp.Expr) -> bool:
    return isinstance(select, exp.Select) and not select.args.get("joins") and select.args.get("from_") is not None


def derived_body(select: exp.Select, item: exp.Expr) -> exp.Expr | None:
    """The query the FROM item `item` of `select` reads: a subquery's (Spark needs no alias), or a
    CTE's read once."""
    if isinstance(item, exp.Subquery):
        return unwrapped(item.this)
    if isinstance(item, exp.Table) and not item.db:
        cte = _cte_named(select, item)
        if cte is not None and reads_of(select, cte) == 1:
            return unwrapped(cte.this)
    return None


def _path(node: exp.Expr, root: exp.Expr) -> list[tuple[str, int | None]]:
    """The args (key, index in a list) from `root` down to `node`."""
    path = []
    while node is not root:
        assert node.parent is not None and node.arg_key is not None, "not under the root"
        path.append((node.arg_key, node.index))
        node = node.parent
    return path[::-1]


def _at(root: exp.Expr, path: list[tuple[str, int | None]]) -> exp.Expr:
    node = root
    for key, index in path:
        node = node.args[key] if index is None else node.args[key][index]
    return node


def refuse_distinct_branches(branches: list[Branch], union: exp.Union, hint: str) -> None:
    """A SELECT DISTINCT branch of the UNION ALL `union` is refused (each branch must keep its rows)."""
    for branch in branches:
        if branch.distinct:
            raise refuse(
                f"SELECT DISTINCT in a branch of a UNION ALL subquery ({snippet(branch.plan.query)})", union, hint
            )


def without_cte(with_: exp.With | None, *ctes: exp.CTE | None) -> exp.With | None:
    """A copy of `with_` without `ctes`."""
    if with_ is None:
        return None
    kept = [c.copy() for c in with_.expressions if not any(c is cte for cte in ctes)]
    return exp.With(expressions=kept) if kept else None


def placeholder(schema: Schema, alias: str) -> tuple[exp.Table, str]:
    """The table the aggregate reads the leaf by, named as deep as the sources are, and its schema key."""
    depth = len(next(iter(schema)).split(".")) if schema else 2
    parts = [*[PLACEHOLDER_DB, PLACEHOLDER_DB][: depth - 1], UNION_PLACEHOLDER]
    quoted = [exp.to_identifier(p, quoted=True) for p in parts]
    table = exp.Table(
        this=quoted[-1],
        db=quoted[-2] if depth > 1 else None,
        catalog=quoted[-3] if depth > 2 else None,
        alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
    )
    return table, ".".join(parts)


def leaf_types(branches: list[Branch], schema: Schema) -> list[str]:
    """The union's column types as sqlglot infers them from the branches (the first known; "string"
    where none is): the aggregate's analysis reads them (AVG's exact sum, checked against Spark's
    types at build, `aggregate_view.check_exact`)."""
    inferred = []
    for branch in branches:
        try:
            parsed = sqlglot.parse_one(branch.plan.query.sql(dialect=DIALECT), read="spark")
            typed = annotate_types(parsed, schema=nested_schema(schema), dialect="spark")
        except Exception:  # sqlglot's Spark dialect cannot read it: nothing inferred
            continue
        inferred.append([e.type.sql(dialect="spark").lower() if e.type else "unknown" for e in typed.expressions])
    if not inferred:
        return ["string"] * len(branches[0].plan.outputs)
    columns = zip(*inferred, strict=True)
    return [next((t for t in ts if t not in ("unknown", "null")), "string") for ts in columns]


def _selects(node: exp.Expr) -> list[exp.Select]:
    node = unwrapped(node)
    if isinstance(node, exp.Union):
        return _selects(node.this) + _selects(node.expression)
    return [node] if isinstance(node, exp.Select) else []


def named_as_first(union: exp.Union) -> exp.Union:
    """A copy of `union` whose later branches name their columns as the first branch does (Spark
    names the union's columns after the first branch's: `select 'a' as feed … union all select 'b' …`)."""
    union = union.copy()
    first, *others = _selects(union)
    names = [e.alias_or_name for e in first.expressions]
    if not all(names) or any(isinstance(e, exp.Star) or e.is_star for e in first.expressions):
        return union
    for select in others:
        if len(select.expressions) == len(names) and not any(e.is_star for e in select.expressions):
            named = [e.unalias().as_(n, quoted=True) for e, n in zip(select.expressions, names, strict=True)]
            select.set("expressions", named)
    return union


def leaf_plan(found: Found, schema: Schema, plan_model: ModelPlanner) -> ViewPlan:
    """The plan of an aggregate or a window over the UNION ALL `found`: the aggregate's (window's),
    with the leaf."""
    select = found.select
    windows_cte = found.item.find_ancestor(exp.CTE)  # a CTE of windows that reads the union, if one
    read = without_cte(select.args.get("with_"), found.cte, windows_cte)  # what a branch may read
    shape, branches = analyzed_branches(named_as_first(found.union), read, lambda branch: plan_model(branch, schema))
    refuse_distinct_branches(branches, found.union, SEPARATE_MODEL.format("SELECT DISTINCT", " in the UNION ALL"))
    names = tuple(o.name for o in branches[0].plan.outputs)
    table, key = placeholder(schema, found.alias)
    outer = select.copy()  # the placeholder in the union's place, the union's CTE dropped
    _at(outer, _path(found.item, select)).replace(table)
    cte = _at(outer, _path(found.cte, select)) if found.cte is not None else None
    assert cte is None or isinstance(cte, exp.CTE)
    outer.set("with_", without_cte(outer.args.get("with_"), cte))
    plan = plan_model(outer, {**schema, key: dict(zip(names, leaf_types(branches, schema), strict=True))})
    if plan.view_class not in LEAF_CLASSES:
        raise refuse(
            f"a query over a UNION ALL subquery that is not an aggregate or a window ({plan.view_class.value})",
            found.union,
            SEPARATE_MODEL.format("UNION ALL", "")
            + "; an aggregate (GROUP BY or aggregates), a window, or a SELECT with no window or subquery, over one "
            "UNION ALL subquery is maintained",
        )
    sources = tuple(dataclasses.replace(s, index=b.offset + s.index) for b in branches for s in b.plan.sources)
    query = normalized_query(shape, branches)
    verbatim.check_round_trip(query)
    view_class = plan.view_class
    if view_class is ViewClass.AGGREGATE and len(sources) > 1:
        view_class = ViewClass.AGGREGATE_JOIN
    leaf = UnionLeaf(plan.sources[0].alias, names, query, tuple(branches))
    if plan.windows is not None and plan.windows.first:  # a leaf's partitions are recomputed whole
        windows = dataclasses.replace(plan.windows, first=())
        plan = dataclasses.replace(plan, windows=windows, hidden=window_hidden_columns(windows.partition_by))
    return dataclasses.replace(plan, view_class=view_class, sources=sources, union=leaf)
