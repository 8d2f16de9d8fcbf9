"""An aggregate or a window over a join with a UNION ALL subquery (or CTE): the join distributed
over the union's branches (`union_join`) and read as one derived leaf (`union_leaf`).

`select c.name, count(*) as n from (select id, dim_id from db.a union all select id, dim_id from
db.b) f join db.c c on f.dim_id = c.cid group by c.name`: the aggregate reads the rows of the join,
and the join over `B1 ⊎ B2` is `(B1 ⋈ C) ⊎ (B2 ⋈ C)`. The engine's plan is the aggregate over one
derived table whose body is that UNION ALL, each branch the join (its ON and WHERE) over one branch
of the union, selecting every column the aggregate reads under a name of its own (`f_dim_id`,
`c_name`): an aggregate (a window view) over a UNION ALL leaf, each branch a join model, its change
the UNION ALL of the branches' change terms (`classes.union_leaf`). Only the engine's plan is
rewritten: `fast_mv_consistent` runs the model's SQL.

Types: the aggregate reads each column through the UNION ALL of the joins, which Spark widens from
the same branch types, in the same order, as it widens the model's union. A column the join
compares (in ON or WHERE) must have the union's type in every branch, as in a distributed join:
`UnionLeaf.distributed`, checked before a build (`union_join.check_types`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from sqlglot import exp

from dbt_ivm.analyze.functions import is_aggregate
from dbt_ivm.analyze.normalization import normalize
from dbt_ivm.analyze.parsing import Schema, refuse
from dbt_ivm.analyze.setops import analyzed_branches, normalized_query
from dbt_ivm.analyze.union_join import OWN_MODEL, Joined, compared_columns, derived_branches, find
from dbt_ivm.analyze.union_leaf import (
    ModelPlanner,
    derived_body,
    leaf_plan,
    leaf_types,
    named_as_first,
    placeholder,
    reads_one,
    refuse_distinct_branches,
    unwrapped,
    without_cte,
)
from dbt_ivm.analyze.union_leaf import find as find_leaf
from dbt_ivm.ir import UNION_PLACEHOLDER, DistributedUnion, ViewPlan


def aggregates_or_windows(select: exp.Select) -> bool:
    """`select` groups, aggregates or computes windows over the rows of its FROM and JOIN items,
    with no subquery outside those items (in its SELECT list, WHERE or an ON: a query the
    distributed join refuses by name)."""
    outer = _without_rows(select)
    conditions = [select.args.get("where"), *(j.args.get("on") for j in select.args.get("joins") or [])]
    for part in [outer, *(c for c in conditions if c is not None)]:
        if any(isinstance(n, exp.Query) for n in part.walk() if n is not outer):
            return False
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(isinstance(n, exp.Window) or is_aggregate(n) for n in outer.walk())


def _without_rows(select: exp.Select) -> exp.Select:
    """A copy of `select` without the clauses that make its rows (FROM, JOIN, WHERE) and its CTEs."""
    outer = select.copy()
    for key in ("with_", "from_", "joins", "where"):
        outer.set(key, None)
    return outer


Check = Callable[[exp.Select], None]  # the raw tree's refusals (`refusals.check_constructs`, …)


def leaf_join_plan(joined: tuple[Joined, ...], schema: Schema, plan_model: ModelPlanner, check: Check) -> ViewPlan:
    """The plan of the aggregate or window `joined[0].select` over a join with one UNION ALL: the
    aggregate's (window's) over the leaf of the join over each branch of the union. `check`
    refuses, on the query with the union's placeholder, what any model's raw tree may not hold."""
    outer, distributed = _over_leaf(joined, schema, plan_model, check)
    return _leaf_plan(outer, schema, plan_model, distributed)


def derived_join_plan(select: exp.Expr, schema: Schema, plan_model: ModelPlanner, check: Check) -> ViewPlan | None:
    """The plan of a query over one derived table (a subquery, or a CTE read once) that computes
    windows over a join with one UNION ALL (keep-the-latest: `SELECT … FROM (SELECT …, ROW_NUMBER()
    OVER (…) AS rn FROM (<UNION ALL>) u JOIN c ON …) d WHERE rn = 1`): the derived table's windows
    over the leaf (`leaf_join_plan`), the query over them as over any windows of a leaf; None for
    any other query (also where the derived table names its columns, has CTEs of its own, or the
    query reads a CTE outside its FROM item: the refusals of the plain path)."""
    if not reads_one(select):
        return None
    assert isinstance(select, exp.Select)
    item = select.args["from_"].this
    body = derived_body(select, item)
    if not isinstance(body, exp.Select) or body.find(exp.Window) is None or body.args.get("with_"):
        return None
    ctes = (select.args.get("with_") or exp.With()).expressions
    named = next((c for c in ctes if unwrapped(c.this) is body), None)
    aliased = item.args.get("alias") if named is None else named.args.get("alias")
    if aliased is not None and aliased.columns:
        return None
    rest = _without_rows(select)
    rest.set("where", select.args.get("where"))
    names = {c.alias_or_name.lower() for c in ctes}
    if any(not t.db and t.name.lower() in names for t in rest.find_all(exp.Table)):
        return None
    body = body.copy()
    body.set("with_", without_cte(select.args.get("with_"), named))  # the CTEs the body may read
    joined = find(body)
    if not joined or not aggregates_or_windows(joined[0].select):
        return None
    windows, distributed = _over_leaf(joined, schema, plan_model, check)
    query = select.copy()
    with_ = windows.args.get("with_")
    windows.set("with_", None)
    name = item.alias_or_name  # Spark reads a derived table without an alias too
    query.args["from_"].set("this", windows.subquery(_table_alias(name) if name else None))
    query.set("with_", with_)
    return _leaf_plan(query, schema, plan_model, distributed)


def _leaf_plan(query: exp.Select, schema: Schema, plan_model: ModelPlanner, distributed: DistributedUnion) -> ViewPlan:
    """The plan of `query`, which reads the distributed join's UNION ALL as a leaf (`union_leaf`),
    with that union kept for the build's type check."""
    found = find_leaf(query)
    assert found is not None  # the aggregate or windows read the leaf as their one FROM item
    plan = leaf_plan(found, schema, plan_model)
    assert plan.union is not None
    return dataclasses.replace(plan, union=dataclasses.replace(plan.union, distributed=distributed))


def _over_leaf(
    joined: tuple[Joined, ...], schema: Schema, plan_model: ModelPlanner, check: Check
) -> tuple[exp.Select, DistributedUnion]:
    """The aggregate or window `joined[0].select` over a join with one UNION ALL, rewritten to read
    the UNION ALL of the join over each branch of the union (under the union's alias), and the
    distributed union whose compared columns a build checks."""
    first = joined[0]
    if len(joined) > 1:
        raise refuse("an aggregate or a window over a join of two UNION ALL subqueries", first.union, OWN_MODEL)
    if first.padded:
        raise refuse(
            "an aggregate or a window over an outer join that pads the UNION ALL subquery (on its null-supplied "
            "side, or in a FULL JOIN)",
            first.union,
            OWN_MODEL,
        )
    select = first.select
    with_ = without_cte(select.args.get("with_"), first.cte)
    shape, branches = analyzed_branches(named_as_first(first.union), with_, lambda b: plan_model(b, schema))
    refuse_distinct_branches(branches, first.union, OWN_MODEL)
    names = [o.name for o in branches[0].plan.outputs]
    table, key = placeholder(schema, first.alias)
    query = select.copy()
    _item(query, first.position).replace(table)
    query.set("with_", with_.copy() if with_ is not None else None)
    check(query)  # as the plain path checks a raw tree: before normalization merges or names anything
    known = {**schema, key: dict(zip(names, leaf_types(branches, schema), strict=True))}
    normalized, position = _placeholder_read(normalize(query, known), first.union)
    rows, outer = _split(normalized, first.alias, names[0])
    read = Joined(rows, position, first.union, first.alias, None)
    compared = compared_columns(read, (read,), names)
    derived, _ = derived_branches(branches, names, compared, first.union, "join")
    body: exp.Query = _in_place(rows, position, derived[0], first.alias)
    for branch in derived[1:]:
        body = exp.union(body, _in_place(rows, position, branch, first.alias), distinct=False)
    assert isinstance(body, exp.Union)  # a UNION ALL has two branches at least
    outer.set("from_", exp.From(this=body.subquery(_table_alias(first.alias))))
    outer.set("with_", normalized.args.get("with_"))
    distributed = DistributedUnion(first.alias, normalized_query(shape, branches), tuple(derived), tuple(compared))
    return outer, distributed


def _item(select: exp.Select, position: int) -> exp.Expr:
    """The FROM item (position 0) or the k-th JOIN's item of `select`."""
    clause = select.args["from_"] if position == 0 else select.args["joins"][position - 1]
    item: exp.Expr = clause.this
    return item


def _placeholder_read(select: exp.Expr, union: exp.Union) -> tuple[exp.Select, int]:
    """The normalized query, and where it reads the union's placeholder: its FROM item (0) or a
    JOIN's. Refused where normalization merged the join into another (it reads it elsewhere)."""
    joins = select.args.get("joins") if isinstance(select, exp.Select) else None
    if isinstance(select, exp.Select) and select.args.get("from_") is not None and joins:
        items = [select.args["from_"].this, *(j.this for j in joins)]
        found = [k for k, item in enumerate(items) if isinstance(item, exp.Table) and item.name == UNION_PLACEHOLDER]
        reads = [t for t in select.find_all(exp.Table) if t.name == UNION_PLACEHOLDER]
        if len(found) == 1 and len(reads) == 1:
            return select, found[0]
    raise refuse(
        "an aggregate or a window over a join with a UNION ALL subquery, in a query whose join is not its own",
        union,
        OWN_MODEL,
    )


def _split(select: exp.Select, alias: str, first: str) -> tuple[exp.Select, exp.Select]:
    """The normalized `select` as the rows its aggregate or windows read (its FROM, JOINs and WHERE,
    selecting each column the rest reads under a name of its own; the union's `first` column where
    the rest reads none, `COUNT(*)`) and the rest, reading those columns from the union's alias
    (its FROM left to the caller); each output named as before."""
    outer = _without_rows(select)
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for column in outer.find_all(exp.Column):
        if not column.table:
            raise refuse(f"column {column.sql()} of no table", column, "qualify it with its table's alias")
        pair = (column.table, column.name)
        if pair not in names:
            names[pair] = _unique(f"{column.table}_{column.name}", taken)
    if not names:
        names[(alias, first)] = _unique(f"{alias}_{first}", taken)
    rows = exp.Select(
        expressions=[
            exp.column(name, table=table, quoted=True).as_(exp.to_identifier(as_, quoted=True))
            for (table, name), as_ in names.items()
        ]
    )
    for key in ("from_", "joins", "where"):
        value = select.args.get(key)
        rows.set(key, [v.copy() for v in value] if isinstance(value, list) else value.copy() if value else None)
    outputs = [e.alias_or_name for e in outer.expressions]
    for column in list(outer.find_all(exp.Column)):
        as_ = names[(column.table, column.name)]
        column.replace(exp.column(as_, table=alias, quoted=True))
    outer.set(
        "expressions",
        [
            e if isinstance(e, exp.Alias) else e.as_(exp.to_identifier(n, quoted=True))
            for e, n in zip(outer.expressions, outputs, strict=True)
        ],
    )
    return rows, outer


def _unique(name: str, taken: set[str]) -> str:
    """`name` (without leading underscores: never the engine's prefix), or `name_2`, `name_3`, … :
    the first not `taken` (which it joins)."""
    name = name.lstrip("_") or "c"
    found = next(
        c for c in itertools.chain([name], (f"{name}_{k}" for k in itertools.count(2))) if c.lower() not in taken
    )
    taken.add(found.lower())
    return found


def _in_place(rows: exp.Select, position: int, branch: exp.Select, alias: str) -> exp.Select:
    """A copy of `rows` that reads `branch` (under the union's alias) in the placeholder's place."""
    copy = rows.copy()
    _item(copy, position).replace(branch.subquery(_table_alias(alias)))
    return copy


def _table_alias(alias: str) -> exp.TableAlias:
    return exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
