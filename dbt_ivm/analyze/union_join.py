"""A join over a UNION ALL subquery (or CTE), or a plain SELECT over one, distributed over the
union's branches (`ir.DistributedUnion`).

`select f.id, d.name from (select id, dim_id from db.a union all select id, dim_id from db.b) f
join db.dim d on f.dim_id = d.id`: an inner join reads each row of the union by itself, and so does
a LEFT JOIN with the union on its preserved side (a RIGHT JOIN mirrored), so the join over
`B1 ⊎ B2` is `(B1 ⋈ D) ⊎ (B2 ⋈ D)`. The plan is that UNION ALL of joins, a set operation
(`analyze.setops`, maintained by `classes.setops`: a count per branch); SELECT DISTINCT over the
join is their UNION (distinct). Only the engine's plan is distributed: the model's SQL, which
`fast_mv_consistent` runs, stays the user's. A SELECT with no join (a projection, a WHERE) over
the union is the same rewrite with no join: `σπ(B1 ⊎ B2) = σπ(B1) ⊎ σπ(B2)`; one that aggregates
(GROUP BY, aggregates, SELECT DISTINCT) reads the union as a leaf (`union_leaf`).

Spark widens the branches' column types before the join (an INT branch beside a STRING one is
compared and computed as STRING), so a distributed branch means the same only where it has the
union's types. A column the join reads as a plain output only is cast to the model's type by the
set operation; every other (in ON, WHERE or an expression: `compared`) must have one type in every
branch. The analysis types what it can (a source column, a CAST, a string literal, NULL): a NULL
beside one known type is cast to it, two different known types are refused; before a build, Spark compares
each derived branch's types with the union's (`check_types`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Mapping
from typing import NamedTuple

from sqlglot import exp

from dbt_ivm.analyze import union_padded
from dbt_ivm.analyze.functions import is_aggregate
from dbt_ivm.analyze.parsing import DIALECT, Schema, refuse
from dbt_ivm.analyze.setops import (
    BRANCH_CLASSES,
    SEPARATE_MODEL,
    Shape,
    analyzed_branches,
    normalized_query,
    set_plan,
)
from dbt_ivm.analyze.union_leaf import named_as_first, reads_of, refuse_distinct_branches, union_read, without_cte
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import HIDDEN_PREFIX, Branch, DistributedUnion, ViewClass, ViewPlan

ModelPlanner = Callable[[exp.Select, Schema], ViewPlan]
OWN_MODEL = (
    "make the UNION ALL its own fast_mv model and select from it (fast_mv models can read each other); a "
    "SELECT or an inner join over the UNION ALL, a LEFT or RIGHT JOIN with it on either side, or a FULL JOIN "
    "with it and no other join, is maintained"
)
MAX_COMBINATIONS = 16  # set-operation branches a join of several unions may make
VOID = "void"  # the type of a NULL literal, which Spark widens to any other


class Joined(NamedTuple):
    """The UNION ALL that one FROM or JOIN item of `select` reads: its position, the union, its alias and CTE."""

    select: exp.Select
    position: int  # 0: the FROM item, k: the k-th JOIN's
    union: exp.Union
    alias: str
    cte: exp.CTE | None
    padded: bool = False  # on the null-supplied side of a LEFT (RIGHT) JOIN: `union_padded`


def _union_read(select: exp.Select, item: exp.Expr) -> tuple[exp.Union, str, exp.CTE | None] | None:
    """The UNION ALL subquery, or CTE, that `item` reads (`union_leaf.union_read`); a CTE read more
    than once is refused."""
    read = union_read(select, item)
    if read is not None and read[2] is not None and (n := reads_of(select, read[2])) != 1:
        raise refuse(f"the UNION ALL CTE {read[2].alias_or_name} read {n} times", item, OWN_MODEL)
    return read


def find(select: exp.Expr) -> tuple[Joined, ...]:
    """The UNION ALL subqueries, or CTEs read once, that FROM or JOIN items of `select` read, where
    `select` joins them to other relations (or to each other) or reads one alone row by row
    (`_row_by_row`); none where there is none (an aggregate, a window or a subquery test over the
    union alone: `union_leaf`). Several are distributed together, each on a preserved side."""
    if not isinstance(select, exp.Select) or select.args.get("from_") is None:
        return ()
    if not select.args.get("joins") and not _row_by_row(select):
        return ()
    items = [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]
    found = [(k, read) for k, item in enumerate(items) if (read := _union_read(select, item)) is not None]
    if len(found) > 1:
        for position, _ in found:
            if _check_preserved(select, position):
                raise refuse(
                    "a join of two UNION ALL subqueries, one on the null-supplied side of an outer join",
                    items[position],
                    OWN_MODEL,
                )
        return tuple(Joined(select, position, union, alias, cte) for position, (union, alias, cte) in found)
    if not found:
        return ()
    position, (union, alias, cte) = found[0]
    padded = _check_preserved(select, position)
    if padded:
        select, position = union_padded.union_first(select, position)
    return (Joined(select, position, union, alias, cte, padded),)


def _row_by_row(select: exp.Select) -> bool:
    """`select`, which reads its FROM item alone, keeps or drops each row of it by itself: no GROUP
    BY, HAVING, DISTINCT, QUALIFY, aggregate, window or subquery outside that item."""
    if any(select.args.get(k) for k in ("group", "having", "distinct", "qualify")):
        return False
    outer = _in_place(select, {0: exp.to_table("__ivm_union")})  # without its FROM item and CTEs
    return not any(
        isinstance(n, exp.Window) or (isinstance(n, exp.Query) and n is not outer) or is_aggregate(n)
        for n in outer.walk()
    )


def _check_preserved(select: exp.Select, position: int) -> bool:
    """The union (FROM or JOIN item `position`) is on the preserved side of every outer join (False),
    or on the null-supplied side of a LEFT (RIGHT) JOIN in the shape `union_padded` takes (True)."""
    if union_padded.null_supplied(select, position):
        return True
    joins: list[exp.Join] = select.args.get("joins") or []
    for k, join in enumerate(joins, 1):
        side = (join.side or "").upper()
        if (join.args.get("kind") or "").upper() in ("SEMI", "ANTI"):
            continue  # refused as such (`refusals`)
        if side == "FULL" and k >= position:
            raise refuse("a UNION ALL subquery in a FULL JOIN", join, OWN_MODEL)
        if (side == "LEFT" and k == position) or (side == "RIGHT" and k > position):
            raise refuse(f"a UNION ALL subquery on the null-supplied side of a {side} JOIN", join, OWN_MODEL)
    return False


class _Distributed(NamedTuple):
    """One union of the query, analyzed: its shape and branches, and each branch as the query reads it."""

    joined: Joined
    shape: Shape
    branches: list[Branch]
    compared: list[str]
    derived: list[exp.Select]
    types: dict[str, exp.DataType]


def join_plan(joined: tuple[Joined, ...], schema: Schema, plan_model: ModelPlanner) -> ViewPlan:
    """The plan of the join `joined` (or of the query with no join): the set operation of the join
    over each branch of its union; over several unions, over each combination of their branches
    (`(A1 ⊎ A2) ⋈ (B1 ⊎ B2) = (A1 ⋈ B1) ⊎ (A1 ⋈ B2) ⊎ (A2 ⋈ B1) ⊎ (A2 ⋈ B2)`)."""
    select = joined[0].select
    reader = "join" if select.args.get("joins") else "query"
    with_ = without_cte(select.args.get("with_"), *(j.cte for j in joined))
    unions = [_distribute(j, joined, with_, schema, plan_model, reader) for j in joined]
    if (combinations := math.prod(len(u.derived) for u in unions)) > MAX_COMBINATIONS:
        raise refuse(
            f"a join of UNION ALL subqueries whose branches combine {combinations} ways (more than "
            f"{MAX_COMBINATIONS}: one set-operation branch each)",
            joined[1].union,
            OWN_MODEL,
        )
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        raise refuse("DISTINCT ON", distinct, "use GROUP BY")
    padded = joined[0].padded  # one union only (`find`)
    inner = union_padded.matched(select, joined[0].position) if padded else select
    joins = [
        _in_place(
            inner, {u.joined.position: d.subquery(_alias(u.joined)) for u, d in zip(unions, combination, strict=True)}
        )
        for combination in itertools.product(*(u.derived for u in unions))
    ]
    if padded:
        one = unions[0]
        joins.append(union_padded.padded(select, one.joined.position, one.joined.alias, one.derived, one.types))
    tree: exp.Query = joins[0]
    for join in joins[1:]:
        tree = exp.union(tree, join, distinct=distinct is not None)
    assert isinstance(tree, exp.Union)  # a UNION ALL has two branches at least
    tree.set("with_", with_)
    planner = functools.partial(
        _branch_plan, plan_model=plan_model, schema=schema, union=joined[0].union, reader=reader
    )
    plan = set_plan(tree, planner)
    assert plan.set_operation is not None
    found = tuple(
        DistributedUnion(
            u.joined.alias,
            normalized_query(u.shape, u.branches),
            tuple(u.derived),
            tuple(u.compared),
            len(u.derived) if padded else None,
        )
        for u in unions
    )
    return dataclasses.replace(plan, set_operation=dataclasses.replace(plan.set_operation, distributed=found))


def _alias(joined: Joined) -> exp.TableAlias:
    return exp.TableAlias(this=exp.to_identifier(joined.alias, quoted=True))


def _distribute(
    joined: Joined,
    every: tuple[Joined, ...],
    with_: exp.With | None,
    schema: Schema,
    plan_model: ModelPlanner,
    reader: str,
) -> _Distributed:
    """The union `joined` (one of the unions `every` the query reads) analyzed branch by branch."""
    shape, branches = analyzed_branches(named_as_first(joined.union), with_, lambda b: plan_model(b, schema))
    refuse_distinct_branches(branches, joined.union, OWN_MODEL)
    names = [o.name for o in branches[0].plan.outputs]
    compared = compared_columns(joined, every, names)
    derived, types = derived_branches(branches, names, compared, joined.union, reader)
    return _Distributed(joined, shape, branches, compared, derived, types)


def _branch_plan(
    select: exp.Select, *, plan_model: ModelPlanner, schema: Schema, union: exp.Union, reader: str
) -> ViewPlan:
    """One distributed join (`reader`: "join", or "query" with no join) analyzed as a model; one a
    set operation cannot hold is refused as the query over the union that it is."""
    try:
        plan = plan_model(select, schema)
    except UnsupportedView as e:
        raise UnsupportedView(f"{e.construct}, in the {reader} over a branch of a UNION ALL", e.hint, e.position) from e
    if plan.view_class not in BRANCH_CLASSES:
        construct = {ViewClass.WINDOW: "window", ViewClass.SEMI_JOIN: "subquery test"}.get(plan.view_class, "aggregate")
        over = "a join with a UNION ALL subquery" if reader == "join" else "a UNION ALL subquery"
        raise refuse(
            f"a{'n' * (construct == 'aggregate')} {construct} over {over}",
            union,
            f"make the {reader} over the UNION ALL its own fast_mv model (it is maintained) and put the "
            f"{construct} in a fast_mv model over it (fast_mv models can read each other)",
        )
    return plan


def _in_place(select: exp.Select, relations: Mapping[int, exp.Expr]) -> exp.Select:
    """A copy of `select` that reads `relations[k]` as its FROM (k = 0) or k-th JOIN item, without
    its CTEs and DISTINCT (the set operation above holds them)."""
    copy = select.copy()
    copy.set("with_", None)
    copy.set("distinct", None)
    for position, relation in relations.items():
        (copy.args["from_"] if position == 0 else copy.args["joins"][position - 1]).set("this", relation)
    return copy


def compared_columns(joined: Joined, every: tuple[Joined, ...], names: list[str]) -> list[str]:
    """The union's columns the query reads other than as a plain output (`f.c` or `f.c AS x` in the
    SELECT list): in ON, USING, WHERE or an expression; an unqualified name of a union column counts
    wherever it is read but there. `every`: all the unions the query reads, whose own columns are
    left out."""
    lowered = {n.lower(): n for n in names}
    outer = _in_place(joined.select, {j.position: exp.to_table(f"__ivm_union{k}") for k, j in enumerate(every)})
    found: set[str] = set()
    for column in outer.find_all(exp.Column):
        name, table = column.name.lower(), column.table.lower()
        if name not in lowered or table not in ("", joined.alias.lower()):
            continue
        output = column.parent if isinstance(column.parent, exp.Alias) else column
        if not (output.parent is outer and output.arg_key == "expressions"):
            found.add(lowered[name])
    for join in outer.args.get("joins") or []:
        found.update(lowered[i.name.lower()] for i in join.args.get("using") or [] if i.name.lower() in lowered)
    return [n for n in names if n in found]


def derived_branches(
    branches: list[Branch], names: list[str], compared: list[str], union: exp.Union, reader: str
) -> tuple[list[exp.Select], dict[str, exp.DataType]]:
    """Each branch of the union as the distributed join reads it: its normalized SELECT under the
    union's column names, a NULL cast to the one type the other branches give its column; and that
    type of each compared column where the analysis knows it."""
    types = [[_known_type(e, b.plan) for e in b.plan.query.expressions] for b in branches]
    casts: dict[int, exp.DataType] = {}
    for k, name in enumerate(names):
        if name not in compared:
            continue
        known = {t for row in types if (t := row[k]) is not None and t != VOID}
        if len(known) > 1:
            found = " and ".join(sorted(known))
            raise refuse(
                f"a UNION ALL column {name} of types {found} read by the {reader} (Spark widens them before it)",
                union,
                f"cast {name} to one type in every branch (CAST(... AS <type>)), or "
                + (OWN_MODEL if reader == "join" else SEPARATE_MODEL.format("UNION ALL", "")),
            )
        if len(known) == 1:  # a branch the analysis cannot type must agree (`check_types`)
            casts[k] = exp.DataType.build(known.pop(), dialect=DIALECT)
    derived = []
    for branch, row in zip(branches, types, strict=True):
        select = branch.plan.query.copy()
        columns = []
        for k, (e, name) in enumerate(zip(select.expressions, names, strict=True)):
            value = e.unalias().copy()
            if k in casts and row[k] == VOID:
                value = exp.Cast(this=value, to=casts[k].copy())
            columns.append(value.as_(exp.to_identifier(name, quoted=True)))
        select.set("expressions", columns)
        derived.append(select)
    return derived, {names[k]: t for k, t in casts.items()}


def _known_type(expression: exp.Expr, plan: ViewPlan) -> str | None:
    """The Spark type of a branch's column where the analysis knows it: a source column, a CAST,
    a string literal, NULL (`VOID`); None for any other expression."""
    e = expression.unalias()
    if isinstance(e, exp.Null):
        return VOID
    if isinstance(e, exp.Cast):
        return e.to.sql(dialect=DIALECT).lower()
    if isinstance(e, exp.Literal) and e.is_string:
        return "string"
    if isinstance(e, exp.Column):
        source = next((s for s in plan.sources if s.alias.lower() == e.table.lower()), None)
        typed = dict((n.lower(), t) for n, t in source.columns).get(e.name.lower()) if source else None
        return _canonical(typed) if typed else None
    return None


def _canonical(spark_type: str) -> str | None:
    """A Spark type's text as a CAST writes it (None where sqlglot cannot read it)."""
    try:
        return exp.DataType.build(spark_type, dialect=DIALECT).sql(dialect=DIALECT).lower()
    except Exception:  # a type sqlglot does not know: not inferred, the build compares it
        return None


Describe = Callable[[exp.Select], Mapping[str, str]]  # a query's column types (DESCRIBE QUERY)


def check_types(plan: ViewPlan, describe: Describe) -> None:
    """A distributed join (`ir.DistributedUnion`) is the model's join where every branch has its
    union's type in each column the join compares or computes with (`compared`). Before a build,
    Spark's types of each union and of each branch as the engine reads it, in one DESCRIBE QUERY
    (planned, not run); a difference is refused, naming the column."""
    every = (plan.set_operation.distributed if plan.set_operation is not None else ()) + (
        (plan.union.distributed,) if plan.union is not None and plan.union.distributed is not None else ()
    )
    found = [d for d in every if d.compared]
    if not found:
        return
    parts = {(u, n): part for u, d in enumerate(found) for n, part in enumerate([d.union, *d.derived])}

    def name(u: int, n: int) -> exp.Identifier:
        return exp.to_identifier(f"{HIDDEN_PREFIX}p{u}_{n}", quoted=True)

    def typed(u: int, n: int, k: int) -> str:
        return f"{HIDDEN_PREFIX}t{u}_{n}_{k}"

    columns = [
        exp.column(c, table=name(u, n), quoted=True).as_(exp.to_identifier(typed(u, n, k), quoted=True))
        for u, n in parts
        for k, c in enumerate(found[u].compared)
    ]
    (first, *others) = [part.subquery(name(u, n)) for (u, n), part in parts.items()]
    query = exp.select(*columns).from_(first)
    for other in others:
        query = query.join(other, join_type="cross")
    types = describe(query)
    for u, union in enumerate(found):
        for k, column in enumerate(union.compared):
            wanted = types[typed(u, 0, k)]
            for n in range(1, len(union.derived) + 1):
                branch = types[typed(u, n, k)]
                if branch != wanted:
                    raise UnsupportedView(
                        f"column {column} of the UNION ALL {union.alias}, which the query compares, is {wanted} in "
                        f"the union (Spark widens its branches to it) and {branch} in branch {n - 1}",
                        f"cast {column} to {wanted} in every branch of the UNION ALL, or make the UNION ALL its own "
                        "fast_mv model and select from it (fast_mv models can read each other)",
                    )
