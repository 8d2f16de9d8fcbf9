"""What the analysis knows about functions: which are deterministic, which generate rows, which
aggregate, and how each aggregate is maintained."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp

from dbt_ivm import spark_functions, verbatim
from dbt_ivm.analyze.parsing import DIALECT
from dbt_ivm.ir import AggregateFunction

# Functions whose value is not a function of their arguments: a recompute would differ.
NONDETERMINISTIC_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.Rand,
    exp.Randn,
    exp.Uuid,
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.CurrentTime,
    exp.CurrentUser,
    exp.CurrentSchema,
    exp.Localtimestamp,
    exp.Shuffle,
)
NONDETERMINISTIC_NAMES = (
    frozenset(
        {
            "rand",
            "random",
            "randn",
            "randstr",
            "uniform",
            "uuid",
            "shuffle",
            "now",
            "current_timestamp",
            "current_date",
            "curdate",
            "current_time",
            "localtimestamp",
            "current_timezone",
            "current_user",
            "user",
            "session_user",
            "current_catalog",
            "current_database",
            "current_schema",
            "current_role",
            "monotonically_increasing_id",
            "spark_partition_id",
            "input_file_name",
            "input_file_block_start",
            "input_file_block_length",
            "rand_str",
            "try_reflect",
            "reflect",
            "java_method",
            "aes_encrypt",  # GCM mode draws a random IV per call
        }
    )
    | spark_functions.NONDETERMINISTIC
)
# The current time when called without an argument, a function of its arguments otherwise.
NOW_WITHOUT_ARGUMENTS = frozenset({"unix_timestamp"})
GENERATOR_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.Explode,  # also ExplodeOuter, Posexplode, PosexplodeOuter
    exp.Inline,
    exp.Unnest,
    exp.Lateral,
    exp.Stack,
)
GENERATOR_NAMES = frozenset({"json_tuple"}) | spark_functions.GROUPS["generator_funcs"]
# Aggregates with an algebraic rule (see `classes.aggregate`); DISTINCT ones are recomputed.
ALGEBRAIC_AGGREGATES: dict[type[exp.Expr], AggregateFunction] = {
    exp.Count: AggregateFunction.COUNT,
    exp.Sum: AggregateFunction.SUM,
    exp.Avg: AggregateFunction.AVG,
    exp.Min: AggregateFunction.MIN,
    exp.Max: AggregateFunction.MAX,
}
# Spark's other aggregates are parsed as plain calls (see `verbatim`) and recomputed for the groups
# a change touches, except these, whose value depends on the order of the rows (which Spark does
# not define) or on how they are split: a recompute may give another value than the model's SQL.
ORDER_SENSITIVE_AGGREGATES = frozenset(
    {
        "any_value",
        "first",
        "first_value",
        "last",
        "last_value",
        "array_agg",
        "collect_list",
        "listagg",
        "string_agg",
        "max_by",
        "min_by",
        "mode",
        "approx_percentile",
        "percentile_approx",
        "histogram_numeric",
        "approx_top_k",
        "approx_top_k_accumulate",
        "approx_top_k_combine",
        "count_min_sketch",
        "hll_sketch_agg",
        "hll_union_agg",
        "kll_sketch_agg_bigint",
        "kll_sketch_agg_double",
        "kll_sketch_agg_float",
        "theta_sketch_agg",
        "theta_union_agg",
        "theta_intersection_agg",
        "grouping",
        "grouping_id",
    }
)
AGGREGATE_NAMES = spark_functions.GROUPS["agg_funcs"]
WINDOW_NAMES = spark_functions.GROUPS["window_funcs"]
BUILTIN_NAMES = frozenset().union(*spark_functions.GROUPS.values()) | verbatim.GRAMMAR_FUNCTIONS


def func_key(node: exp.Expr) -> str:
    """The function's name as sqlglot knows it, lower case (cheap: no SQL generation)."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key


def func_name(node: exp.Expr) -> str:
    """The function's name as the model would write it in Spark SQL (COLLECT_LIST, not ARRAY_AGG)."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", node.sql(dialect=DIALECT))
    return match.group(1).lower() if match else func_key(node)


def is_aggregate(node: exp.Expr) -> bool:
    """An aggregate call: a typed one, a plain call of a Spark aggregate, or one with FILTER or WITHIN GROUP."""
    if isinstance(node, (exp.Filter, exp.WithinGroup)):
        return is_aggregate(node.this)
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, exp.Anonymous):
        return func_key(node) in AGGREGATE_NAMES
    # Spark's any(bool) aggregate, not x = ANY (...) or LIKE ANY (...)
    return (
        isinstance(node, exp.Any)
        and not isinstance(node.this, (exp.Subquery, exp.Query))
        and not isinstance(node.parent, exp.Binary)
    )


def aggregate_calls(expr: exp.Expr) -> Iterator[exp.Expr]:
    """The aggregate calls in `expr`, outermost first, not looking inside one."""
    if is_aggregate(expr):
        yield expr
        return
    for child in expr.iter_expressions():
        yield from aggregate_calls(child)


def aggregates_outside_windows(expr: exp.Expr) -> list[exp.Expr]:
    """The aggregate calls in `expr` that are not a window's (`SUM(x) OVER (…)` is a window)."""
    if isinstance(expr, exp.Window):
        return []
    calls = list(aggregate_calls(expr)) if not any(expr.find_all(exp.Window)) else []
    if calls:
        return calls
    return [c for child in expr.iter_expressions() for c in aggregates_outside_windows(child)]


def aggregated(select: exp.Select) -> bool:
    """`select` aggregates its rows: GROUP BY, HAVING or an aggregate call outside its windows (its
    windows, if any, are then over its groups)."""
    if select.args.get("group") is not None or select.args.get("having") is not None:
        return True
    return any(aggregates_outside_windows(e) for e in select.expressions)


def aggregate_rule(call: exp.Expr) -> tuple[AggregateFunction, exp.Expr | None]:
    """The maintenance rule of an aggregate call and its argument (None: none, or recomputed)."""
    function = ALGEBRAIC_AGGREGATES.get(type(call))
    arg = call.this
    if function is None or isinstance(arg, exp.Distinct) or call.args.get("distinct") or call.args.get("expressions"):
        return AggregateFunction.RECOMPUTED, None
    if function is AggregateFunction.COUNT and (arg is None or isinstance(arg, (exp.Star, exp.Literal))):
        return AggregateFunction.COUNT_STAR, None  # COUNT(1) counts rows like COUNT(*)
    return function, arg
