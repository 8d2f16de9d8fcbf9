"""Refusals: every construct no refresh can maintain exactly, refused with a message that names it
and says what to do instead.

`RULES` is the table `check_constructs` applies, in order, to every node of the raw parse tree:
a `Refusal` names a construct and the hint; a `Check` hands the node to a function that refuses
with its own message. `check_merged` runs on the normalized query.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from dbt_ivm.analyze.calculated import aggregating
from dbt_ivm.analyze.functions import (
    BUILTIN_NAMES,
    GENERATOR_CLASSES,
    GENERATOR_NAMES,
    NONDETERMINISTIC_CLASSES,
    NONDETERMINISTIC_NAMES,
    NOW_WITHOUT_ARGUMENTS,
    ORDER_SENSITIVE_AGGREGATES,
    WINDOW_NAMES,
    func_key,
    func_name,
    is_aggregate,
)
from dbt_ivm.analyze.join_tree import parenthesized
from dbt_ivm.analyze.parsing import DIALECT, SPLIT_HINT, cte_names, refuse, snippet
from dbt_ivm.analyze.setops import SEPARATE_MODEL, set_operation_name
from dbt_ivm.analyze.subqueries import check_subquery, is_test_query
from dbt_ivm.analyze.windows import check_window, in_window
from dbt_ivm.ir import HIDDEN_PREFIX, is_hidden
from dbt_ivm.verbatim import COMPARISONS

RESERVED_HINT = f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns"


@dataclasses.dataclass(frozen=True)
class Refusal:
    """The nodes `matches` holds for are a construct no refresh maintains: `construct` names it."""

    matches: Callable[[exp.Expr], Any]
    construct: Callable[[Any], str]
    hint: str

    def __call__(self, node: exp.Expr, functions: frozenset[str]) -> None:
        if self.matches(node):
            raise refuse(self.construct(node), node, self.hint)


@dataclasses.dataclass(frozen=True)
class Check:
    """The nodes `matches` holds for go to `check`, which refuses with its own message."""

    matches: Callable[[exp.Expr], Any]
    check: Callable[[Any, frozenset[str]], None]

    def __call__(self, node: exp.Expr, functions: frozenset[str]) -> None:
        if self.matches(node):
            self.check(node, functions)


def _of(*types: type[exp.Expr]) -> Callable[[exp.Expr], bool]:
    return lambda node: isinstance(node, types)


def _named(construct: str) -> Callable[[exp.Expr], str]:
    return lambda _node: construct


def _is_order_by(node: exp.Expr) -> bool:
    return isinstance(node, exp.Order) and not isinstance(node.parent, (exp.Window, exp.AggFunc))


def _set_operation(node: exp.SetOperation) -> str:
    """A set operation inside the query (a top-level one is a view class: `analyze.setops`)."""
    return f"set operation {set_operation_name(node)} in a subquery or CTE (a query over a set operation)"


def _is_nondeterministic(node: exp.Expr) -> bool:
    return isinstance(node, NONDETERMINISTIC_CLASSES) or (
        isinstance(node, exp.Func)
        and (
            func_key(node) in NONDETERMINISTIC_NAMES
            or (func_key(node) in NOW_WITHOUT_ARGUMENTS and not node.expressions)
        )
    )


def _is_generator(node: exp.Expr) -> bool:
    return isinstance(node, GENERATOR_CLASSES) or (isinstance(node, exp.Func) and func_key(node) in GENERATOR_NAMES)


def _is_predicate_subquery(node: exp.Expr) -> bool:
    """A subquery used as a value or predicate, not as a FROM/JOIN relation or CTE body."""
    if isinstance(node, exp.Exists):
        return True
    parent = node.parent
    if isinstance(node, exp.Select):
        # a SELECT is a relation under a Subquery (FROM, JOIN, IN), a set operation or a CTE;
        # sqlglot puts it straight under anything else (ALL, ARRAY, EXISTS: see above)
        return parent is not None and not isinstance(parent, (exp.Subquery, exp.SetOperation, exp.CTE))
    if isinstance(node, exp.Subquery):
        return not isinstance(parent, (exp.From, exp.Join, exp.CTE, exp.Union, exp.Subquery)) and not (
            isinstance(parent, exp.Table)
        )
    return False


def _check_projections(select: exp.Select) -> None:
    """Every column of a SELECT needs a name Spark and fast_mv agree on: computed ones need AS."""
    for e in select.expressions:
        if not isinstance(e, (exp.Alias, exp.Column, exp.Star, exp.Dot)):
            raise refuse(
                f"computed column {snippet(e)} without a name",
                e,
                "give it a name with AS (Spark would name it after its text, which a Delta column name cannot hold)",
            )


def _check_table(table: exp.Table) -> None:
    if table.args.get("version") is not None:
        raise refuse(
            f"time travel on {snippet(table)}", table, "read the current table: fast_mv pins source versions itself"
        )
    alias = table.args.get("alias")
    if isinstance(alias, exp.TableAlias) and isinstance(alias.this, exp.Parameter):
        name = ".".join(p.name for p in table.parts)
        raise refuse(
            f"time travel on {name}@{alias.this.name}",
            table,
            "read the current table: fast_mv pins source versions itself",
        )
    if isinstance(table.this, exp.Func):  # Anonymous is a Func too
        raise refuse(
            f"table-valued function {snippet(table)}", table, "read a Delta table, or use materialized='table'"
        )
    if isinstance(alias, exp.TableAlias) and alias.columns:
        raise refuse(
            f"column aliases in the table alias {snippet(alias)}",
            table,
            "rename the columns in the SELECT list instead",
        )


def _check_join(join: exp.Join) -> None:
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):
        raise refuse(
            f"{(join.side + ' ' if join.side else '')}{kind} JOIN",
            join,
            "use an inner join on distinct keys, or materialized='table'",
        )
    if join.args.get("method"):
        raise refuse(f"{join.args['method']} JOIN", join, "write the join condition out with ON")
    if kind == "ASOF" or join.args.get("match_condition") is not None:
        raise refuse("ASOF JOIN", join, "use materialized='table'")
    if join.args.get("using") and parenthesized(join.this) is not None:
        raise refuse(
            f"JOIN {snippet(join.this)} USING (...) with a parenthesized join on its right",
            join,
            "write the join condition with ON",
        )
    if join.side and join.args.get("on") is None and not join.args.get("using"):
        raise refuse(
            f"an outer join without ON ({join.side.upper()} JOIN {snippet(join.this)})",
            join,
            "give the join condition with ON",
        )


def _check_aggregate(node: exp.Expr) -> None:
    name = func_key(node.this if isinstance(node, (exp.Filter, exp.WithinGroup)) else node)
    if name in ORDER_SENSITIVE_AGGREGATES and not in_window(node):  # a window's ORDER BY orders it
        raise refuse(
            f"aggregate {func_name(node)}(), whose value depends on the order of the rows (which Spark does not "
            "define), so a recompute may give another value",
            node,
            "use an aggregate that does not depend on row order (min, max, array_sort(collect_set(…)), "
            "count(DISTINCT …)), "
            "or use materialized='table' for this model",
        )
    if in_window(node):
        return  # over a GROUP BY's groups, a window's argument may aggregate them: SUM(SUM(x)) OVER (…)
    core = node.this if isinstance(node, (exp.Filter, exp.WithinGroup)) else node
    for inner in node.walk():
        if inner is not node and inner is not core and is_aggregate(inner):
            raise refuse("nested aggregate", node, "use materialized='table'")


def _check_function(node: exp.Anonymous, declared: frozenset[str]) -> None:
    """A plain call must be a deterministic Spark built-in or declared by the model.

    Any other function (a UDF, a function of a newer Spark, a database-qualified name) may be
    non-deterministic or be redefined later, and the view would silently differ from a recompute.
    """
    name = func_key(node)
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        name = f"{parent.this.sql(dialect=DIALECT).replace('`', '').lower()}.{name}"
    elif name in WINDOW_NAMES and not in_window(node):
        raise refuse(f"window function {name}()", node, "use materialized='table'")
    elif name in BUILTIN_NAMES:
        return
    if name not in declared:
        raise refuse(
            f"function {name}(), which is not a Spark built-in fast_mv knows to be deterministic",
            node,
            f"if it is deterministic and will not be redefined, declare it in the model config: "
            f"deterministic_functions=['{name}'] (a change to the list rebuilds the view); "
            "otherwise use materialized='table'",
        )


KEYWORD_PREDICATES = (exp.In, exp.Between, exp.Like, exp.ILike, exp.RegexpLike)


def _compared_predicate(node: exp.Expr) -> bool:
    """IN, BETWEEN, LIKE or RLIKE (NOT too) as a comparison's operand without parentheses: sqlglot
    reads `a = b IN (…)` as `a = (b IN (…))`, Spark as `(a = b) IN (…)` (and `x BETWEEN a AND b
    = c` as `x BETWEEN a AND (b = c)`); the analysis would reason about another value."""
    if not isinstance(node, KEYWORD_PREDICATES):
        return False
    parent = node.parent.parent if isinstance(node.parent, exp.Not) else node.parent
    return isinstance(parent, COMPARISONS)


RULES: tuple[Refusal | Check, ...] = (
    Check(_of(exp.Window), lambda window, _: check_window(window)),
    Refusal(
        _of(exp.Qualify),
        _named("QUALIFY"),
        "filter in a query over the windows' rows: SELECT * FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn …) "
        "WHERE rn = 1",
    ),
    Refusal(_of(exp.Limit, exp.Fetch), _named("LIMIT"), "drop the LIMIT, or use materialized='table'"),
    Refusal(_of(exp.Offset), _named("OFFSET"), "drop the OFFSET, or use materialized='table'"),
    Refusal(
        _of(exp.Sort, exp.Cluster, exp.Distribute),
        lambda node: f"{node.key.upper()} BY",
        "drop it: a view has no row order",
    ),
    Refusal(_is_order_by, _named("ORDER BY"), "a view has no row order: drop ORDER BY and sort when reading"),
    Refusal(_of(exp.SetOperation), _set_operation, SEPARATE_MODEL.format("set operation", "")),
    Refusal(
        lambda node: isinstance(node, exp.With) and node.args.get("recursive"),
        _named("WITH RECURSIVE"),
        "use materialized='table'",
    ),
    Refusal(
        _is_nondeterministic,
        lambda node: f"non-deterministic function {func_name(node)}()",
        "a recompute would give other values: compute it upstream in a table, or use materialized='table'",
    ),
    Refusal(
        _is_generator,
        lambda node: f"generator or LATERAL {snippet(node)}",
        "explode the data upstream into a table, or use materialized='table'",
    ),
    Refusal(_of(exp.QueryTransform), _named("TRANSFORM ... USING (script transform)"), "use materialized='table'"),
    Refusal(
        _of(exp.Pivot),
        lambda node: "UNPIVOT" if node.args.get("unpivot") else "PIVOT",
        "aggregate with GROUP BY and CASE expressions, or use materialized='table'",
    ),
    Refusal(_of(exp.TableSample), _named("TABLESAMPLE"), "sampling is not deterministic: use materialized='table'"),
    Check(_of(exp.Table), lambda table, _: _check_table(table)),
    Check(_is_predicate_subquery, lambda node, _: check_subquery(node)),
    Refusal(
        lambda node: isinstance(node, (exp.IgnoreNulls, exp.RespectNulls)) and not isinstance(node.parent, exp.Window),
        lambda node: f"{'IGNORE' if isinstance(node, exp.IgnoreNulls) else 'RESPECT'} NULLS",
        "drop it: COUNT(x), SUM, AVG, MIN and MAX skip NULLs anyway (a window function takes it)",
    ),
    Check(is_aggregate, lambda node, _: _check_aggregate(node)),
    Check(_of(exp.Anonymous), _check_function),
    Refusal(
        _of(exp.Rollup, exp.Cube, exp.GroupingSets),
        lambda node: "GROUPING SETS" if type(node) is exp.GroupingSets else node.key.upper(),
        "one fast_mv per grouping, or use materialized='table'",
    ),
    Refusal(
        lambda node: isinstance(node, exp.Group) and node.args.get("all"),
        _named("GROUP BY ALL"),
        "list the grouping columns after GROUP BY",
    ),
    Check(_of(exp.Join), lambda join, _: _check_join(join)),
    Refusal(
        _compared_predicate,
        lambda node: f"{node.key.upper()} beside a comparison, without parentheses ({snippet(node)})",
        "add parentheses around what is compared: (a = b) IN (...) or a = (b IN (...))",
    ),
    Refusal(
        lambda node: isinstance(node, exp.Column) and is_hidden(node.name),
        lambda node: f"column {node.name!r} uses the reserved prefix {HIDDEN_PREFIX}",
        RESERVED_HINT,
    ),
    Refusal(
        lambda node: isinstance(node, exp.Alias) and is_hidden(node.alias),
        lambda node: f"column alias {node.alias!r} uses the reserved prefix {HIDDEN_PREFIX}",
        RESERVED_HINT,
    ),
)


def check_constructs(tree: exp.Expr, functions: frozenset[str] = frozenset()) -> None:
    """Refuse, on the raw parse tree, every construct no refresh can maintain exactly.

    `functions`: the model's `deterministic_functions` (lower case), accepted beside Spark's
    deterministic built-ins.
    """
    for node in tree.walk():
        if isinstance(node, exp.Hint):
            continue
        for rule in RULES:
            rule(node, functions)
    for select in tree.find_all(exp.Select):
        if not is_test_query(select):  # an EXISTS or IN subquery's columns are not stored
            _check_projections(select)


def check_groups(tree: exp.Expr) -> None:
    """Only tables (or groups) inside a parenthesized join: merging a derived table or CTE there
    would hoist its WHERE above the outer join and keep its constants on padded rows."""
    ctes = cte_names(tree)
    for node in tree.find_all(exp.Subquery):
        group = parenthesized(node)
        if group is None:
            continue
        first, joins = group
        for rel in [first, *(j.this for j in joins)]:
            if isinstance(rel, exp.Table):
                if rel.db or rel.name.lower() not in ctes:
                    continue
            elif parenthesized(rel) is not None:
                continue  # a nested group
            raise refuse(
                f"a derived table or CTE inside a parenthesized join ({snippet(rel)})",
                rel,
                "join the tables themselves inside the parentheses, or make the subquery its own fast_mv "
                "and select from it",
            )


def check_merged(select: exp.Select) -> None:
    """The normalized query is one SELECT over tables and parenthesized joins, reading no source
    column with the hidden columns' prefix."""
    for sub in select.find_all(exp.Subquery, exp.CTE):
        if parenthesized(sub) is not None:
            continue
        if aggregating(sub.this):
            raise refuse(
                f"a grouped subquery or CTE ({snippet(sub)}) that the query joins to other rows or reads "
                "another way (only a query that projects, filters or computes windows over one aggregate's groups is "
                "merged)",
                sub,
                SPLIT_HINT,
            )
        if isinstance(sub.this, exp.Select) and any(
            w.find_ancestor(exp.Select) is sub.this for w in sub.this.find_all(exp.Window)
        ):
            raise refuse(
                f"a subquery or CTE with window functions ({snippet(sub)}) that the query joins to other rows "
                "(a model's windows are maintained only over the rows of the model's own FROM)",
                sub,
                "make the windows their own fast_mv, and join it in a second model that reads it with ref() "
                "(a fast_mv can read another fast_mv: README, Chains), or use materialized='table'",
            )
        raise refuse(
            f"a FROM subquery or CTE that could not be merged into the query ({snippet(sub)})",
            sub,
            "only select-project-join subqueries are merged (no GROUP BY, DISTINCT or aggregates; no joins "
            "when joined to other tables; a WHERE on the null-supplied side of a LEFT JOIN only, over one table): "
            "write the "
            "joins and filters out in the main query, or make the subquery its own fast_mv and select from it",
        )
    for col in select.find_all(exp.Column):
        if is_hidden(col.name):
            raise refuse(
                f"source column {col.name!r} uses the reserved prefix {HIDDEN_PREFIX}",
                col,
                f"rename it upstream, or leave it out of the view: names starting with "
                f"{HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
