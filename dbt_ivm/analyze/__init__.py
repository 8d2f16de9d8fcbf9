"""analyze(model, schema) -> ViewPlan: validate, normalize and classify a model's SELECT.

Runs once per build, before any SQL touches the database. Every construct the refresh
algorithms cannot maintain exactly is refused here with a message that names it; nothing
unsupported passes silently. The steps, in order, each a module of pure functions (named apart
from the functions this package exports, `parse` and `normalize`, which would shadow them):

- `parsing`: one SELECT, and the source tables it names;
- `written_out`: GROUP BY ALL written out, a subquery's ORDER BY (which orders nothing) dropped;
- `ordering`: the top-level ORDER BY, taken off and kept as an order of the model's columns;
- `refusals`: the constructs no refresh maintains, on the tree as written;
- `normalization`: qualified, expanded, CTEs and subqueries merged, outputs named as Spark does;
- `calculated`: a query that projects and filters one aggregate's groups, merged into it;
- `join_tree`: outer joins a predicate makes inner rewritten, then the FROM clause as a tree
  (with `nulls`, the NULL analysis both rely on, and `functions`, what the analysis knows of
  Spark's functions);
- `shape`: outputs, grouping and aggregates, the view's class and hidden columns;
- `windows`: a window view's SELECT, the query over it, and the partition its windows share;
- `subqueries`: a semi-join view's EXISTS and IN tests, their correlations and shared key.
- `setops`: a top-level UNION, INTERSECT or EXCEPT, each branch analyzed as a model of its own;
- `union_leaf`: an aggregate over a UNION ALL subquery, the UNION ALL read as one derived leaf;
- `union_leaf_join`: an aggregate or a window over a join with a UNION ALL subquery, the join over
  each branch read as one leaf;
- `union_join`: a join over a UNION ALL subquery, or a plain SELECT over one, distributed over its
  branches (a set operation); `union_padded`: the rows of a LEFT JOIN that match no row of a
  UNION ALL on its null-supplied side, one outer-join branch.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

from sqlglot import exp

from dbt_ivm import verbatim
from dbt_ivm.analyze import setops, shape, subqueries, union_join, union_leaf, union_leaf_join, windows
from dbt_ivm.analyze.calculated import merge_calculated
from dbt_ivm.analyze.functions import ALGEBRAIC_AGGREGATES, aggregate_calls
from dbt_ivm.analyze.join_tree import join_tree, simplify_outer_joins
from dbt_ivm.analyze.normalization import normalize
from dbt_ivm.analyze.ordering import orderings, split_order
from dbt_ivm.analyze.parsing import (
    DIALECT,
    Schema,
    parse,
    refuse,
    schema_key,
    snippet,
    source_references,
    source_tables,
    table_name,
)
from dbt_ivm.analyze.refusals import check_constructs, check_groups, check_merged
from dbt_ivm.analyze.written_out import written_out
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import ViewClass, ViewPlan

__all__ = [
    "ALGEBRAIC_AGGREGATES",
    "DIALECT",
    "Schema",
    "aggregate_calls",
    "analyze",
    "check_constructs",
    "normalize",
    "parse",
    "source_references",
    "source_tables",
]


def analyze(model: str | exp.Expr, schema: Schema, functions: Iterable[str] = ()) -> ViewPlan:
    """Validate, normalize and classify `model` (Spark dialect, sources fully named): its SQL, or
    the tree `parse` made of it (not modified), so that a caller that parsed it need not again.

    `schema` maps each source table ("db.table" or "table") to {column: Spark type};
    `functions` are the functions the model declares deterministic (`deterministic_functions`).
    Raises UnsupportedView with the construct and what to do instead.
    """
    declared = tuple(sorted({f.strip().lower() for f in functions if f.strip()}))
    raw = written_out(parse(model) if isinstance(model, str) else model)
    _check_columns(raw, schema)
    if isinstance(raw, exp.SetOperation):
        return _every_source_followed(raw, setops.set_plan(raw, lambda branch: analyze(branch, schema, declared)))
    raw, order = split_order(raw)
    plan = _every_source_followed(raw, _select_plan(raw, schema, declared))
    if order is None:
        return plan
    assert isinstance(raw, exp.Select)  # `split_order` takes an ORDER BY off a SELECT only
    return dataclasses.replace(plan, order=orderings(order, raw, plan.outputs))


def _every_source_followed(raw: exp.Expr, plan: ViewPlan) -> ViewPlan:
    """`plan`, if every table the model names is a source whose changes the refresh reads; a table
    read where the analysis did not take the query apart (a SELECT inside an expression) would
    never refresh the view: refused."""
    followed = {t.key for t in plan.tables}
    for ref in source_references(raw):
        if (name := table_name(ref)).key not in followed:
            place = ref.find_ancestor(exp.Select) or ref
            raise refuse(
                f"table {name} read where fast_mv would not follow its changes ({snippet(place)})",
                ref,
                "read it in the FROM, a JOIN or an EXISTS/IN test in the WHERE, or use materialized='table'",
            )
    return plan


def _check_columns(raw: exp.Expr, schema: Schema) -> None:
    """A source the model reads has columns (sqlglot cannot hold a table without)."""
    empty = {schema_key(k) for k, columns in schema.items() if not columns}
    for table in source_tables(raw) if empty else ():
        if table.key in empty:
            raise UnsupportedView(f"source {table} has no columns", "give the source its columns before the build")


def _select_plan(raw: exp.Expr, schema: Schema, declared: tuple[str, ...]) -> ViewPlan:
    """The plan of a model that is not a set operation, without its top-level ORDER BY."""
    # a join over a UNION ALL, or a SELECT row by row over one, first (an aggregate or windows over the
    # join: the join over each branch as a leaf); any other query over one alone: a leaf; windows over a
    # join with one in the derived table a query reads: that join as a leaf
    planner = functools.partial(analyze, functions=declared)  # a branch, or the query over a leaf
    checked = functools.partial(_checked, declared=declared)
    if joined := union_join.find(raw):
        if union_leaf_join.aggregates_or_windows(joined[0].select):
            return union_leaf_join.leaf_join_plan(joined, schema, planner, checked)
        return union_join.join_plan(joined, schema, planner)
    if (found := union_leaf.find(raw)) is not None:
        return union_leaf.leaf_plan(found, schema, planner)
    if (plan := union_leaf_join.derived_join_plan(raw, schema, planner, checked)) is not None:
        return plan
    check_constructs(raw, frozenset(declared))
    known = {schema_key(k) for k in schema}
    missing = [t for t in source_tables(raw) if t.key not in known]
    if missing:
        raise UnsupportedView(f"no schema for source {missing[0]}", "the source must exist before the build")
    check_groups(raw)
    normalized = normalize(raw, schema)
    subqueries.check_tested_relations(normalized)
    tree = windows.with_window_subquery(merge_calculated(normalized))
    if not isinstance(tree, exp.Select):
        raise UnsupportedView(f"a top-level {tree.key.upper()}", "a model is one SELECT")
    if subqueries.has_subquery(tree):
        return _semi_join_plan(tree, schema, declared)
    rows, outer = windows.split(tree)
    check_merged(rows)
    if outer is None and not windows.has_window(rows):
        return _plan(simplify_outer_joins(tree), schema, declared)
    return _window_plan(tree, rows, outer, schema, declared)


def _checked(query: exp.Select, declared: tuple[str, ...]) -> None:
    """The refusals on a raw tree that a model's SELECT takes before normalization."""
    check_constructs(query, frozenset(declared))
    check_groups(query)


def _window_plan(
    query: exp.Select, rows: exp.Select, outer: exp.Select | None, schema: Schema, declared: tuple[str, ...]
) -> ViewPlan:
    """The plan of a window view: `rows` computes the windows (`query` itself, or the derived
    table `outer` reads)."""
    simplified = simplify_outer_joins(rows)
    if outer is not None:
        query = query.copy()
        query.args["from_"].this.set("this", simplified)
    else:
        query = simplified
    rows = windows.split(query)[0]
    sources, tree = join_tree(rows, schema)
    where = rows.args.get("where")
    shape.output_columns(rows)  # the stored columns: named, none hidden, none twice
    verbatim.check_round_trip(query)
    shared = windows.windows(rows, outer)
    return ViewPlan(
        view_class=ViewClass.WINDOW,
        query=query,
        sources=sources,
        tree=tree,
        where=where.this if where is not None else None,
        outputs=shape.output_columns(query),
        hidden=shape.window_hidden_columns(shared.partition_by, shared.first),
        functions=declared,
        windows=shared,
    )


def _plan(select: exp.Select, schema: Schema, declared: tuple[str, ...]) -> ViewPlan:
    """The plan of a normalized SELECT whose outer joins are as inner as its predicates allow."""
    select = shape.without_redundant_distinct(select)
    sources, tree = join_tree(select, schema)
    where = select.args.get("where")
    outputs = shape.output_columns(select)
    group_by, aggregates, having, distinct = shape.aggregation(select, outputs)
    aggregates = shape.exact_averages(select, aggregates, schema)
    aggregated = bool(group_by or aggregates or distinct or having is not None)
    view_class = shape.classify(sources, aggregated)
    verbatim.check_round_trip(select)
    return ViewPlan(
        view_class=view_class,
        query=select,
        sources=sources,
        tree=tree,
        where=where.this if where is not None else None,
        outputs=outputs,
        group_by=group_by,
        aggregates=aggregates,
        having=having,
        distinct=distinct,
        hidden=shape.hidden_columns(view_class, sources, group_by, aggregates),
        functions=declared,
    )


def _semi_join_plan(select: exp.Select, schema: Schema, declared: tuple[str, ...]) -> ViewPlan:
    """The plan of a SELECT whose WHERE tests rows with EXISTS or IN subqueries: the outer query's
    sources first, then each subquery's (`analyze.subqueries`)."""
    unfiltered = select.copy()
    unfiltered.set("where", None)
    check_merged(unfiltered)  # the tests' subqueries are checked one by one
    select = simplify_outer_joins(select)
    query, tests, inner = subqueries.tests(select, schema, len(join_tree(select, schema)[0]))
    for test in tests.tests:
        check_merged(test.select)
    sources, tree = join_tree(query, schema)
    where = query.args.get("where")
    verbatim.check_round_trip(query)
    return ViewPlan(
        view_class=ViewClass.SEMI_JOIN,
        query=query,
        sources=sources + inner,
        tree=tree,
        where=where.this if where is not None else None,
        outputs=shape.output_columns(query),
        hidden=shape.window_hidden_columns(tests.partition_by),
        functions=declared,
        subqueries=tests,
    )
