"""analyze(sql, schema) -> ViewPlan: validate, normalize and classify a model's SELECT.

Runs once per build, before any SQL touches the database. Every construct the
refresh algorithms cannot maintain exactly is refused here with a message that
names it; nothing unsupported passes silently.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.eliminate_ctes import eliminate_ctes
from sqlglot.optimizer.eliminate_subqueries import eliminate_subqueries
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_columns import quote_identifiers
from sqlglot.optimizer.scope import Scope, build_scope, traverse_scope
from sqlglot.schema import ensure_schema

from dbt_ivm import spark_functions, using, verbatim
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import (
    COUNT_COLUMN,
    HIDDEN_PREFIX,
    INTEGRAL_TYPES,
    Aggregate,
    AggregateFunction,
    HiddenColumn,
    InnerGroup,
    JoinKind,
    JoinNode,
    Leaf,
    OuterJoin,
    OutputColumn,
    Role,
    Side,
    Source,
    TableName,
    ViewClass,
    ViewPlan,
    group_column,
    is_hidden,
)

DIALECT = verbatim.DIALECT  # Spark, with every function call kept as written
Schema = Mapping[str, Mapping[str, str]]

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
ORIGINAL_NAME = "ivm_original"  # identifier meta: the spelling the model used, before normalization


def _position(node: exp.Expr) -> str | None:
    """Line and column of the first token of `node` that the parser located."""
    for sub in node.walk():
        meta = sub.meta if isinstance(sub, exp.Expression) else {}
        if meta.get("line") is not None:
            return f"line {meta['line']}, column {meta.get('col', '?')}"
    return None


def _snippet(node: exp.Expr, limit: int = 80) -> str:
    text = node.sql(dialect=DIALECT)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _refuse(construct: str, node: exp.Expr | None = None, hint: str = "") -> UnsupportedView:
    return UnsupportedView(construct, hint, _position(node) if node is not None else None)


def parse(sql: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None and not isinstance(s, exp.Semicolon)]
    except ParseError as e:
        raise UnsupportedView(f"SQL that does not parse ({str(e).splitlines()[0]})", "check the model's SQL") from e
    if not statements:
        raise UnsupportedView("an empty model (no SQL statement)", "a model is one SELECT")
    if len(statements) != 1:
        raise UnsupportedView(f"{len(statements)} statements", "a model is one SELECT")
    stmt = statements[0]
    while isinstance(stmt, exp.Subquery) and not stmt.alias and isinstance(stmt.this, exp.Query):
        stmt = stmt.this  # (SELECT ...): the parentheses mean nothing at the top
    if not isinstance(stmt, exp.Query):
        kind = stmt.name.upper() if isinstance(stmt, exp.Command) else stmt.key.upper()
        raise UnsupportedView(f"a non-SELECT statement ({kind})", "a model is one SELECT")
    return stmt


def _cte_names(tree: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _table_name(table: exp.Table) -> TableName:
    return TableName(db=table.db or None, name=table.name, catalog=table.catalog or None)


def source_references(tree: exp.Expr) -> list[exp.Table]:
    """Every place the model names a source table, in the order of the SQL text: CTE names,
    table-valued functions and the aliases hints name (/*+ BROADCAST(c) */) excluded."""
    ctes = _cte_names(tree)
    refs = []
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        if not isinstance(table.this, exp.Identifier) or table.find_ancestor(exp.Hint) is not None:
            continue
        refs.append(table)
    return sorted(refs, key=lambda t: t.this.meta.get("start", 0))


def source_tables(sql: str) -> list[TableName]:
    """The tables the model reads, in order of first appearance; CTE names excluded."""
    seen: dict[str, TableName] = {}
    for table in source_references(parse(sql)):
        name = _table_name(table)
        seen.setdefault(name.key, name)
    return list(seen.values())


def check_constructs(tree: exp.Expr, functions: frozenset[str] = frozenset()) -> None:
    """Refuse, on the raw parse tree, every construct no refresh can maintain exactly.

    `functions`: the model's `deterministic_functions` (lower case), accepted beside Spark's
    deterministic built-ins.
    """
    for node in tree.walk():
        if isinstance(node, exp.Hint):
            continue
        if isinstance(node, exp.Window):
            raise _refuse(
                f"window function {_snippet(node)}", node, "use materialized='table', or aggregate with GROUP BY"
            )
        if isinstance(node, (exp.Limit, exp.Fetch)):
            raise _refuse("LIMIT", node, "drop the LIMIT, or use materialized='table'")
        if isinstance(node, exp.Offset):
            raise _refuse("OFFSET", node, "drop the OFFSET, or use materialized='table'")
        if isinstance(node, (exp.Sort, exp.Cluster, exp.Distribute)):
            raise _refuse(f"{node.key.upper()} BY", node, "drop it: a view has no row order")
        if isinstance(node, exp.Order) and not isinstance(node.parent, (exp.Window, exp.AggFunc)):
            raise _refuse("ORDER BY", node, "a view has no row order: drop ORDER BY and sort when reading")
        if isinstance(node, exp.SetOperation):
            kind = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}.get(
                type(node), "set operation"
            )
            if not node.args.get("distinct"):
                kind += " ALL"
            raise _refuse(f"set operation {kind}", node, "make one fast_mv per branch, or use materialized='table'")
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise _refuse("WITH RECURSIVE", node, "use materialized='table'")
        if isinstance(node, NONDETERMINISTIC_CLASSES) or (
            isinstance(node, exp.Func)
            and (
                _func_key(node) in NONDETERMINISTIC_NAMES
                or (_func_key(node) in NOW_WITHOUT_ARGUMENTS and not node.expressions)
            )
        ):
            raise _refuse(
                f"non-deterministic function {_func_name(node)}()",
                node,
                "a recompute would give other values: compute it upstream in a table, or use materialized='table'",
            )
        if isinstance(node, GENERATOR_CLASSES) or (isinstance(node, exp.Func) and _func_key(node) in GENERATOR_NAMES):
            raise _refuse(
                f"generator or LATERAL {_snippet(node)}",
                node,
                "explode the data upstream into a table, or use materialized='table'",
            )
        if isinstance(node, exp.QueryTransform):
            raise _refuse("TRANSFORM ... USING (script transform)", node, "use materialized='table'")
        if isinstance(node, exp.Pivot):
            kind = "UNPIVOT" if node.args.get("unpivot") else "PIVOT"
            raise _refuse(kind, node, "aggregate with GROUP BY and CASE expressions, or use materialized='table'")
        if isinstance(node, exp.TableSample):
            raise _refuse("TABLESAMPLE", node, "sampling is not deterministic: use materialized='table'")
        if isinstance(node, exp.Table):
            _check_table(node)
        if isinstance(node, (exp.Exists, exp.Subquery, exp.Select)) and _is_predicate_subquery(node):
            raise _refuse(
                f"subquery in an expression ({_snippet(node)})",
                node,
                "rewrite it as a JOIN, or use materialized='table'",
            )
        if isinstance(node, (exp.IgnoreNulls, exp.RespectNulls)):
            raise _refuse(
                f"{'IGNORE' if isinstance(node, exp.IgnoreNulls) else 'RESPECT'} NULLS",
                node,
                "drop it: COUNT(x), SUM, AVG, MIN and MAX skip NULLs anyway",
            )
        if _is_aggregate(node):
            _check_aggregate(node)
        if isinstance(node, exp.Anonymous):
            _check_function(node, functions)
        if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            kind = "GROUPING SETS" if type(node) is exp.GroupingSets else node.key.upper()
            raise _refuse(kind, node, "one fast_mv per grouping, or use materialized='table'")
        if isinstance(node, exp.Group) and node.args.get("all"):
            raise _refuse("GROUP BY ALL", node, "list the grouping columns after GROUP BY")
        if isinstance(node, exp.Join):
            _check_join(node)
        if isinstance(node, exp.Column) and is_hidden(node.name):
            raise _refuse(
                f"column {node.name!r} uses the reserved prefix {HIDDEN_PREFIX}",
                node,
                f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
        if isinstance(node, exp.Alias) and is_hidden(node.alias):
            raise _refuse(
                f"column alias {node.alias!r} uses the reserved prefix {HIDDEN_PREFIX}",
                node,
                f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
    for select in tree.find_all(exp.Select):
        _check_projections(select)


def _check_function(node: exp.Anonymous, declared: frozenset[str]) -> None:
    """A plain call must be a deterministic Spark built-in or declared by the model.

    Any other function (a UDF, a function of a newer Spark, a database-qualified name) may be
    non-deterministic or be redefined later, and the view would silently differ from a recompute.
    """
    name = _func_key(node)
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        name = f"{parent.this.sql(dialect=DIALECT).replace('`', '').lower()}.{name}"
    elif name in WINDOW_NAMES:
        raise _refuse(f"window function {name}()", node, "use materialized='table'")
    elif name in BUILTIN_NAMES:
        return
    if name not in declared:
        raise _refuse(
            f"function {name}(), which is not a Spark built-in fast_mv knows to be deterministic",
            node,
            f"if it is deterministic and will not be redefined, declare it in the model config: "
            f"deterministic_functions=['{name}'] (a change to the list rebuilds the view); "
            "otherwise use materialized='table'",
        )


def _func_key(node: exp.Expr) -> str:
    """The function's name as sqlglot knows it, lower case (cheap: no SQL generation)."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key


def _func_name(node: exp.Expr) -> str:
    """The function's name as the model would write it in Spark SQL (COLLECT_LIST, not ARRAY_AGG)."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", node.sql(dialect=DIALECT))
    return match.group(1).lower() if match else _func_key(node)


def _is_predicate_subquery(node: exp.Expr) -> bool:
    """A subquery used as a value or predicate, not as a FROM/JOIN relation or CTE body."""
    if isinstance(node, exp.Exists):
        return True
    parent = node.parent
    if isinstance(node, exp.Select):
        # IN (SELECT ...) puts the Select straight under In; FROM subqueries wrap it in Subquery.
        return isinstance(parent, exp.In)
    if isinstance(node, exp.Subquery):
        return not isinstance(parent, (exp.From, exp.Join, exp.CTE, exp.Union, exp.Subquery)) and not (
            isinstance(parent, exp.Table)
        )
    return False


def _check_projections(select: exp.Select) -> None:
    """Every column of a SELECT needs a name Spark and fast_mv agree on: computed ones need AS."""
    for e in select.expressions:
        if not isinstance(e, (exp.Alias, exp.Column, exp.Star, exp.Dot)):
            raise _refuse(
                f"computed column {_snippet(e)} without a name",
                e,
                "give it a name with AS (Spark would name it after its text, which a Delta column name cannot hold)",
            )


def _check_table(table: exp.Table) -> None:
    if table.args.get("version") is not None:
        raise _refuse(
            f"time travel on {_snippet(table)}", table, "read the current table: fast_mv pins source versions itself"
        )
    alias = table.args.get("alias")
    if isinstance(alias, exp.TableAlias) and isinstance(alias.this, exp.Parameter):
        name = ".".join(p.name for p in table.parts)
        raise _refuse(
            f"time travel on {name}@{alias.this.name}",
            table,
            "read the current table: fast_mv pins source versions itself",
        )
    if isinstance(table.this, exp.Func):  # Anonymous is a Func too
        raise _refuse(
            f"table-valued function {_snippet(table)}", table, "read a Delta table, or use materialized='table'"
        )
    if isinstance(alias, exp.TableAlias) and alias.columns:
        raise _refuse(
            f"column aliases in the table alias {_snippet(alias)}",
            table,
            "rename the columns in the SELECT list instead",
        )


def _check_join(join: exp.Join) -> None:
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):
        raise _refuse(
            f"{(join.side + ' ' if join.side else '')}{kind} JOIN",
            join,
            "use an inner join on distinct keys, or materialized='table'",
        )
    if join.args.get("method"):
        raise _refuse(f"{join.args['method']} JOIN", join, "write the join condition out with ON")
    if kind == "ASOF" or join.args.get("match_condition") is not None:
        raise _refuse("ASOF JOIN", join, "use materialized='table'")
    if join.args.get("using") and _group(join.this) is not None:
        raise _refuse(
            f"JOIN {_snippet(join.this)} USING (...) with a parenthesized join on its right",
            join,
            "write the join condition with ON",
        )
    if join.side and join.args.get("on") is None and not join.args.get("using"):
        raise _refuse(
            f"an outer join without ON ({join.side.upper()} JOIN {_snippet(join.this)})",
            join,
            "give the join condition with ON",
        )


def _is_aggregate(node: exp.Expr) -> bool:
    """An aggregate call: a typed one, a plain call of a Spark aggregate, or one with FILTER or WITHIN GROUP."""
    if isinstance(node, (exp.Filter, exp.WithinGroup)):
        return _is_aggregate(node.this)
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, exp.Anonymous):
        return _func_key(node) in AGGREGATE_NAMES
    # Spark's any(bool) aggregate, not x = ANY (...) or LIKE ANY (...)
    return (
        isinstance(node, exp.Any)
        and not isinstance(node.this, (exp.Subquery, exp.Query))
        and not isinstance(node.parent, exp.Binary)
    )


def aggregate_calls(expr: exp.Expr) -> Iterator[exp.Expr]:
    """The aggregate calls in `expr`, outermost first, not looking inside one."""
    if _is_aggregate(expr):
        yield expr
        return
    for child in expr.iter_expressions():
        yield from aggregate_calls(child)


def _check_aggregate(node: exp.Expr) -> None:
    name = _func_key(node.this if isinstance(node, (exp.Filter, exp.WithinGroup)) else node)
    if name in ORDER_SENSITIVE_AGGREGATES:
        raise _refuse(
            f"aggregate {_func_name(node)}(), whose value depends on the order of the rows (which Spark does not "
            "define), so a recompute may give another value",
            node,
            "use an aggregate that does not depend on row order (min, max, array_sort(collect_set(…)), "
            "count(DISTINCT …)), "
            "or use materialized='table' for this model",
        )
    core = node.this if isinstance(node, (exp.Filter, exp.WithinGroup)) else node
    for inner in node.walk():
        if inner is not node and inner is not core and _is_aggregate(inner):
            raise _refuse("nested aggregate", node, "use materialized='table'")


def _aggregate_rule(call: exp.Expr) -> tuple[AggregateFunction, exp.Expr | None]:
    """The maintenance rule of an aggregate call and its argument (None: none, or recomputed)."""
    function = ALGEBRAIC_AGGREGATES.get(type(call))
    arg = call.this
    if function is None or isinstance(arg, exp.Distinct) or call.args.get("distinct") or call.args.get("expressions"):
        return AggregateFunction.RECOMPUTED, None
    if function is AggregateFunction.COUNT and (arg is None or isinstance(arg, (exp.Star, exp.Literal))):
        return AggregateFunction.COUNT_STAR, None  # COUNT(1) counts rows like COUNT(*)
    return function, arg


def _nested_schema(schema: Schema) -> dict[str, Any]:
    """{'db.t': cols} -> {'db': {'t': cols}} as sqlglot's MappingSchema wants it."""
    depths = {len(k.split(".")) for k in schema}
    if len(depths) > 1:
        raise UnsupportedView("sources named with and without a database", "qualify every source as db.table")
    nested: dict[str, Any] = {}
    for key, cols in schema.items():
        parts = [p.strip("`").lower() for p in key.split(".")]
        node = nested
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = {c.lower(): t for c, t in cols.items()}
    return nested


def _schema_key(key: str) -> str:
    return key.lower().replace("`", "")


def normalize(tree: exp.Expr, schema: Schema) -> exp.Expr:
    """Qualify and expand with sqlglot's own optimizer rules; merge CTEs and SPJ subqueries.

    Output column names keep the spelling the model used (Spark does; sqlglot lower-cases).
    """
    tree = tree.copy()
    _lowercase_tables(tree)
    for ident in tree.find_all(exp.Identifier):
        ident.meta[ORIGINAL_NAME] = ident.this
    using.mark(tree)
    sources = ensure_schema(_nested_schema(schema), dialect=DIALECT)
    try:
        tree = qualify(
            tree,
            schema=sources,
            dialect=DIALECT,
            quote_identifiers=True,
            validate_qualify_columns=True,
            identify=True,
        )
        using.resolve(tree, sources)
    except OptimizeError as e:
        raise UnsupportedView(f"unresolvable SQL ({e})", "check the column and table names") from e
    _restore_output_names(tree, schema)
    tree = eliminate_subqueries(tree)
    _check_null_supplied_subqueries(tree)
    tree = merge_subqueries(_inline_shared_ctes(verbatim.as_calls(tree)))
    tree = verbatim.as_anonymous(eliminate_ctes(tree))
    return quote_identifiers(tree, dialect=DIALECT, identify=True)  # merging renames unquoted


def _inline_shared_ctes(tree: exp.Expr) -> exp.Expr:
    """A CTE read more than once becomes one derived table per read (in place), so that
    merge_subqueries, which merges only CTEs read once, can merge each of them.
    Runs after eliminate_subqueries (which would deduplicate the copies back into one CTE),
    so every derived table is a CTE of the top-level WITH."""
    with_ = tree.args.get("with_") or tree.args.get("with")
    if not isinstance(with_, exp.With):
        return tree
    for cte in list(with_.expressions):
        name = cte.alias_or_name.lower()
        reads = [
            t
            for t in tree.find_all(exp.Table)
            if not t.db and t.name.lower() == name and t.find_ancestor(exp.CTE) is not cte
        ]
        if len(reads) < 2 or not _mergeable(cte.this):
            continue
        for table in reads:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name, quoted=True))
            table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
        cte.pop()
    if not with_.expressions:
        with_.pop()
    return tree


def _lowercase_tables(tree: exp.Expr) -> None:
    """Spark's catalog is case-insensitive: compare table names in lower case."""
    for table in tree.find_all(exp.Table):
        for part in ("this", "db", "catalog"):
            ident = table.args.get(part)
            if isinstance(ident, exp.Identifier):
                ident.set("this", ident.this.lower())


def _restore_output_names(tree: exp.Expr, schema: Schema) -> None:
    """Name each top-level column as Spark would: as written, or as the source table spells it."""
    if not isinstance(tree, exp.Select):
        return
    scope = build_scope(tree)
    if scope is None:
        return
    columns = {_schema_key(k): {c.lower(): c for c in cols} for k, cols in schema.items()}
    for projection in tree.expressions:
        if isinstance(projection, exp.Alias):
            name = _spelled_name(projection, scope, columns)
            projection.set("alias", exp.to_identifier(name, quoted=True))


def _original_name(ident: exp.Expr) -> str | None:
    """The spelling the model used for `ident`, recorded by `normalize` before qualifying."""
    original: str | None = ident.meta.get(ORIGINAL_NAME)
    return original


def _spelled_name(projection: exp.Expr, scope: Scope, columns: dict[str, dict[str, str]]) -> str:
    alias = projection.args.get("alias")
    if isinstance(alias, exp.TableAlias):
        alias = alias.this
    if isinstance(alias, exp.Identifier) and (original := _original_name(alias)):
        return original
    expr = projection.this if isinstance(projection, exp.Alias) else projection
    if expr.meta.get(using.MERGED):  # a FULL join's USING column: named after its left key
        return _spelled_name(expr.expressions[0], scope, columns)
    if isinstance(expr, exp.Column) and not isinstance(expr.this, exp.Star):
        if original := _original_name(expr.this):
            return original  # written in the query: Spark keeps that spelling
        source = scope.sources.get(expr.table)  # expanded from a star: the source's spelling
        if isinstance(source, exp.Table):
            return columns.get(_table_name(source).key, {}).get(expr.name.lower(), expr.name)
        if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
            for inner in source.expression.expressions:
                if inner.alias_or_name == expr.name:
                    return _spelled_name(inner, source, columns)
    return projection.alias_or_name


def _check_null_supplied_subqueries(tree: exp.Expr) -> None:
    """Merging a derived table into the null-supplied side of an outer join must keep padded rows NULL.

    sqlglot's merge_subqueries would turn `LEFT JOIN (SELECT id, 1 AS flag FROM t) x` into a
    constant 1 on rows with no match, where Spark gives NULL. Refuse such subqueries.
    """
    for scope in traverse_scope(tree):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            continue
        joins = list(select.args.get("joins") or [])
        relations = [from_.this] + [j.this for j in joins]
        sides = [""] + [(j.side or "").upper() for j in joins]
        for i, rel in enumerate(relations):
            padded = sides[i] in ("LEFT", "FULL") or any(s in ("RIGHT", "FULL") for s in sides[i + 1 :])
            source = scope.sources.get(rel.alias_or_name)
            if not padded or not isinstance(source, Scope) or not _mergeable(source.expression):
                continue
            for projection in source.expression.expressions:
                inner = projection.this if isinstance(projection, exp.Alias) else projection
                if not _padded_null(inner, source):
                    raise _refuse(
                        f"subquery or CTE {rel.alias_or_name} on the null-supplied side of an outer join "
                        f"computes {_snippet(projection)}, which is not NULL on rows without a match",
                        rel,
                        "compute the expression in the outer SELECT, or use materialized='table'",
                    )


def _mergeable(select: exp.Expr) -> bool:
    return (
        isinstance(select, exp.Select)
        and not select.args.get("group")
        and not select.args.get("distinct")
        and select.find(exp.AggFunc) is None
    )


def _padded_null(expr: exp.Expr, scope: Scope) -> bool:
    """`expr` is NULL when every relation of `scope` is padded with NULLs."""

    def column_null(col: exp.Column) -> bool:
        source = scope.sources.get(col.table)
        if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
            for inner in source.expression.expressions:
                if inner.alias_or_name == col.name:
                    value = inner.this if isinstance(inner, exp.Alias) else inner
                    return _padded_null(value, source)
            return False
        return True

    return _null_on_null(expr, column_null)


# --- NULL analysis: which predicates reject the NULL-padded rows of an outer join ---------

STRICT_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.IntDiv,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Like,
    exp.ILike,
    exp.RegexpLike,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
    exp.DPipe,
    exp.Neg,
    exp.BitwiseNot,
    exp.Not,
    exp.Paren,
    exp.Cast,
    exp.TryCast,
    exp.Alias,
    # functions that return NULL as soon as an argument is NULL
    exp.Upper,
    exp.Lower,
    exp.Length,
    exp.Substring,
    exp.Trim,
    exp.Abs,
    exp.Round,
    exp.Floor,
    exp.Ceil,
    exp.Year,
    exp.Month,
    exp.Day,
    exp.DateTrunc,
    exp.TimestampTrunc,
)
# The same, as plain calls (see `verbatim`): Spark returns NULL as soon as an argument is NULL.
STRICT_FUNCTIONS = frozenset(
    {
        "upper",
        "lower",
        "ucase",
        "lcase",
        "length",
        "char_length",
        "character_length",
        "substring",
        "substr",
        "trim",
        "ltrim",
        "rtrim",
        "abs",
        "round",
        "bround",
        "floor",
        "ceil",
        "ceiling",
        "year",
        "month",
        "day",
        "dayofmonth",
        "hour",
        "minute",
        "second",
        "quarter",
        "date_trunc",
        "trunc",
    }
)


def _null_on_null(expr: exp.Expr, is_null: Callable[[exp.Column], bool]) -> bool:
    """True when `expr` is NULL once every column for which `is_null` holds is NULL (conservative)."""
    if isinstance(expr, exp.Column):
        return is_null(expr)
    if isinstance(expr, exp.Null):
        return True
    if isinstance(expr, (exp.In, exp.Between)):
        return not expr.args.get("query") and _null_on_null(expr.this, is_null)
    if isinstance(expr, (exp.And, exp.Or)):  # NULL AND FALSE is FALSE, NULL OR TRUE is TRUE
        return all(_null_on_null(e, is_null) for e in expr.flatten())
    if isinstance(expr, exp.Concat) and expr.args.get("coalesce"):
        return False
    if isinstance(expr, (*STRICT_OPERATORS, exp.Concat)) or (
        isinstance(expr, exp.Anonymous) and _func_key(expr) in STRICT_FUNCTIONS
    ):
        return any(_null_on_null(e, is_null) for e in expr.iter_expressions())
    return False


def _rejects(pred: exp.Expr | None, aliases: set[str]) -> bool:
    """True when `pred` cannot be TRUE on a row whose `aliases` columns are all NULL."""
    if pred is None:
        return False
    if isinstance(pred, exp.Paren):
        return _rejects(pred.this, aliases)
    if isinstance(pred, exp.And):
        return any(_rejects(e, aliases) for e in pred.flatten())
    if isinstance(pred, exp.Or):
        return all(_rejects(e, aliases) for e in pred.flatten())
    if isinstance(pred, exp.Not) and isinstance(pred.this, exp.Is) and isinstance(pred.this.expression, exp.Null):
        return _null_on_null(pred.this.this, lambda c: c.table in aliases)  # x IS NOT NULL
    if isinstance(pred, exp.Boolean) and not pred.this:
        return True
    return _null_on_null(pred, lambda c: c.table in aliases)


def _null_intolerant(pred: exp.Expr | None, aliases: set[str] | None = None) -> bool:
    """True when the predicate cannot be TRUE once every referenced column (or every column of
    `aliases`) is NULL. Conservative: what it cannot prove counts as NULL-tolerant."""
    if pred is None:
        return False
    if aliases is None:
        aliases = {c.table for c in pred.find_all(exp.Column)}
    return bool(aliases) and _rejects(pred, aliases)


def analyze(sql: str, schema: Schema, functions: Iterable[str] = ()) -> ViewPlan:
    """Validate, normalize and classify `sql` (Spark dialect, sources fully named).

    `schema` maps each source table ("db.table" or "table") to {column: Spark type};
    `functions` are the functions the model declares deterministic (`deterministic_functions`).
    Raises UnsupportedView with the construct and what to do instead.
    """
    declared = tuple(sorted({f.strip().lower() for f in functions if f.strip()}))
    raw = parse(sql)
    check_constructs(raw, frozenset(declared))
    known = {_schema_key(k) for k in schema}
    missing = [t for t in source_tables(sql) if t.key not in known]
    if missing:
        raise UnsupportedView(f"no schema for source {missing[0]}", "the source must exist before the build")
    _check_groups(raw)
    tree = normalize(raw, schema)
    if not isinstance(tree, exp.Select):
        raise UnsupportedView(f"a top-level {tree.key.upper()}", "a model is one SELECT")
    select = tree
    for sub in select.find_all(exp.Subquery, exp.CTE):
        if _group(sub) is not None:
            continue  # a parenthesized join
        raise _refuse(
            f"a FROM subquery or CTE that could not be merged into the query ({_snippet(sub)})",
            sub,
            "only select-project-join subqueries are merged (no GROUP BY, DISTINCT or aggregates; no joins "
            "when joined to other tables; no WHERE on the null-supplied side of an outer join): write the "
            "joins and filters out in the main query, or make the subquery its own fast_mv and select from it",
        )
    for col in select.find_all(exp.Column):
        if is_hidden(col.name):
            raise _refuse(
                f"source column {col.name!r} uses the reserved prefix {HIDDEN_PREFIX}",
                col,
                f"rename it upstream, or leave it out of the view: names starting with "
                f"{HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
    select = _simplify_outer_joins(select)
    sources, tree_node = _join_tree(select, schema)
    where = select.args.get("where")
    where_expr = where.this if where is not None else None
    outputs = _outputs(select)
    group_by, aggregates, having, distinct = _aggregation(select, outputs)
    aggregates = _exact_averages(select, aggregates, schema)
    aggregated = bool(group_by or aggregates or distinct or having is not None)
    view_class = _classify(sources, tree_node, aggregated)
    hidden = _hidden_columns(view_class, sources, group_by, aggregates)
    verbatim.check_round_trip(select)
    return ViewPlan(
        view_class=view_class,
        query=select,
        sources=sources,
        tree=tree_node,
        where=where_expr,
        outputs=outputs,
        group_by=group_by,
        aggregates=aggregates,
        having=having,
        distinct=distinct,
        hidden=hidden,
        functions=declared,
    )


# --- the join tree -------------------------------------------------------------------


def _group(rel: exp.Expr) -> tuple[exp.Expr, list[exp.Join]] | None:
    """A parenthesized join `(a JOIN b ON …)`: its first operand and its joins; else None.

    sqlglot hangs a group's joins on its first operand (a table, or a group itself), which is
    read as an operand without them.
    """
    if isinstance(rel, exp.Subquery) and not rel.alias and isinstance(rel.this, (exp.Table, exp.Subquery)):
        joins = rel.this.args.get("joins")
        if joins:
            return rel.this, list(joins)
    return None


def _check_groups(tree: exp.Expr) -> None:
    """Only tables (or groups) inside a parenthesized join: merging a derived table or CTE there
    would hoist its WHERE above the outer join and keep its constants on padded rows."""
    ctes = _cte_names(tree)
    for node in tree.find_all(exp.Subquery):
        group = _group(node)
        if group is None:
            continue
        first, joins = group
        for rel in [first, *(j.this for j in joins)]:
            if isinstance(rel, exp.Table):
                if rel.db or rel.name.lower() not in ctes:
                    continue
            elif _group(rel) is not None:
                continue  # a nested group
            raise _refuse(
                f"a derived table or CTE inside a parenthesized join ({_snippet(rel)})",
                rel,
                "join the tables themselves inside the parentheses, or make the subquery its own fast_mv "
                "and select from it",
            )


def _from(select: exp.Select) -> tuple[exp.Expr, list[exp.Join]]:
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        raise UnsupportedView("a SELECT without FROM", "a view must read at least one Delta table")
    return from_.this, list(select.args.get("joins") or [])


def _relations(select: exp.Select) -> tuple[list[exp.Table], list[exp.Join]]:
    """Every table and every join, parenthesized ones included, in the order they are written."""
    relations: list[exp.Table] = []
    all_joins: list[exp.Join] = []

    def visit(rel: exp.Expr, joins: list[exp.Join], first: bool = False) -> None:
        group = _group(rel)
        if group is not None:
            visit(group[0], group[1], first=True)
        elif (
            not isinstance(rel, exp.Table)
            or (rel.args.get("joins") and not first)
            or not isinstance(rel.this, exp.Identifier)
        ):
            raise _refuse(
                f"relation {_snippet(rel)}",
                rel,
                "join tables directly, or in parentheses (no VALUES, table functions or derived tables)",
            )
        else:
            relations.append(rel)
        for join in joins:
            all_joins.append(join)
            visit(join.this, [])

    visit(*_from(select))
    return relations, all_joins


# The join written as `exp.Join` that made each outer-join node (by id: nodes are values).
Owners = dict[int, exp.Join]


def _build_tree(select: exp.Select, owners: Owners | None = None) -> JoinNode:
    """The FROM clause as a normalized tree: relation i (in written order) is Leaf(i), a
    parenthesized join a subtree, RIGHT becomes LEFT with its sides swapped."""
    counter = iter(range(1_000_000))
    found: Owners = {} if owners is None else owners

    def operand(rel: exp.Expr) -> JoinNode:
        group = _group(rel)
        return joined(*group) if group is not None else Leaf(next(counter))

    def joined(first: exp.Expr, joins: list[exp.Join]) -> JoinNode:
        node = operand(first)
        for join in joins:
            on = join.args.get("on")
            if join.args.get("using"):
                raise _refuse("JOIN ... USING that could not be rewritten", join, "write the condition with ON")
            side = (join.side or "").upper()
            right = operand(join.this)
            if side == "":
                node = _add_inner(node, right, on)
                continue
            if side == "LEFT":
                node = OuterJoin(JoinKind.LEFT, node, right, _require_on(on, join))
            elif side == "RIGHT":
                node = OuterJoin(JoinKind.LEFT, right, node, _require_on(on, join))
            elif side == "FULL":
                node = OuterJoin(JoinKind.FULL, node, right, _require_on(on, join))
            else:
                raise _refuse(f"{side} JOIN", join, "use INNER, LEFT, RIGHT or FULL joins")
            found[id(node)] = join
        return node

    return joined(*_from(select))


def _join_tree(select: exp.Select, schema: Schema) -> tuple[tuple[Source, ...], JoinNode]:
    relations, _ = _relations(select)
    aliases = [rel.alias_or_name for rel in relations]
    used = _used_columns(select)
    lowered = {_schema_key(k): v for k, v in schema.items()}
    sources = []
    for i, rel in enumerate(relations):
        name = _table_name(rel)
        cols = {c.lower(): (c, t) for c, t in lowered[name.key].items()}
        used_names = used.get(aliases[i], set())
        columns = tuple((cols[c][0], cols[c][1]) for c in cols if c in used_names)
        sources.append(Source(index=i, alias=aliases[i], table=name, columns=columns))
    node = _with_null_intolerance(_build_tree(select), aliases)
    sides = _annotate(node)
    sources = [Source(s.index, s.alias, s.table, s.columns, sides.get(s.index, Side.PRESERVED)) for s in sources]
    return tuple(sources), node


def _with_null_intolerance(node: JoinNode, aliases: list[str]) -> JoinNode:
    """Set OuterJoin.null_intolerant: the ON predicate rejects an all-NULL null-supplied row."""
    if isinstance(node, Leaf):
        return node
    if isinstance(node, InnerGroup):
        return InnerGroup(tuple(_with_null_intolerance(c, aliases) for c in node.children), node.predicates)
    padded = {aliases[i] for i in _leaves(node.null_supplied)}
    if node.kind is JoinKind.FULL:
        padded_too = {aliases[i] for i in _leaves(node.preserved)}
        intolerant = _null_intolerant(node.on, padded) and _null_intolerant(node.on, padded_too)
    else:
        intolerant = _null_intolerant(node.on, padded)
    return OuterJoin(
        node.kind,
        _with_null_intolerance(node.preserved, aliases),
        _with_null_intolerance(node.null_supplied, aliases),
        node.on,
        intolerant,
    )


def _require_on(on: exp.Expr | None, join: exp.Join) -> exp.Expr:
    if on is None:
        raise _refuse("an outer join without ON", join, "give the join condition with ON")
    return on


def _add_inner(node: JoinNode, right: JoinNode, on: exp.Expr | None) -> JoinNode:
    """`node JOIN right ON on`, inner groups flattened (inner joins associate)."""
    preds = (on,) if on is not None else ()
    left_children, left_preds = (node.children, node.predicates) if isinstance(node, InnerGroup) else ((node,), ())
    if isinstance(right, InnerGroup):
        return InnerGroup((*left_children, *right.children), left_preds + right.predicates + preds)
    return InnerGroup((*left_children, right), left_preds + preds)


def _leaves(node: JoinNode) -> frozenset[int]:
    if isinstance(node, Leaf):
        return frozenset({node.source})
    if isinstance(node, InnerGroup):
        return frozenset().union(*(_leaves(c) for c in node.children))
    return _leaves(node.preserved) | _leaves(node.null_supplied)


def _annotate(node: JoinNode, side: Side = Side.PRESERVED) -> dict[int, Side]:
    """Nica's PSNS annotation: each relation's side as seen from the view's root."""
    if isinstance(node, Leaf):
        return {node.source: side}
    out: dict[int, Side] = {}
    if isinstance(node, InnerGroup):
        for child in node.children:
            out.update(_annotate(child, side))
        return out
    if node.kind is JoinKind.FULL:
        both = Side.BOTH if side is Side.PRESERVED else side
        out.update(_annotate(node.preserved, both))
        out.update(_annotate(node.null_supplied, both))
        return out
    out.update(_annotate(node.preserved, side))
    out.update(_annotate(node.null_supplied, Side.NULL_SUPPLIED if side is Side.PRESERVED else side))
    return out


def _simplify_outer_joins(select: exp.Select) -> exp.Select:
    """Nica's step 3 (outer join to inner join): an outer join whose padded rows a WHERE or
    inner-join predicate rejects is an inner join (a FULL join a LEFT or RIGHT one).

    Rewrites the join kinds in a copy of `select` until nothing changes, so the query and the
    tree built from it say the same thing.
    """
    _, joins = _relations(select)
    if not any(j.side for j in joins):
        return select
    select = select.copy()
    relations, _ = _relations(select)
    aliases = [rel.alias_or_name for rel in relations]
    where = select.args.get("where")
    while True:
        owners: Owners = {}
        tree = _build_tree(select, owners)
        changes = _outer_to_inner(tree, _rejected(where.this if where else None, aliases), aliases, owners)
        if not changes:
            return select
        for join, side in changes:
            join.set("side", side or None)
            join.set("kind", None)


def _rejected(pred: exp.Expr | None, aliases: list[str]) -> frozenset[int]:
    """Relations whose all-NULL rows `pred` rejects."""
    if pred is None:
        return frozenset()
    return frozenset(i for i, a in enumerate(aliases) if _rejects(pred, {a}))


def _outer_to_inner(
    node: JoinNode, rejected: frozenset[int], aliases: list[str], owners: Owners
) -> list[tuple[exp.Join, str]]:
    """(join, new side) for the outer joins whose padded rows `rejected` filters away."""
    if isinstance(node, Leaf):
        return []
    if isinstance(node, InnerGroup):
        inner = rejected.union(*(_rejected(p, aliases) for p in node.predicates))
        return [c for child in node.children for c in _outer_to_inner(child, inner, aliases, owners)]
    join = owners[id(node)]
    if node.kind is JoinKind.LEFT:
        if _leaves(node.null_supplied) & rejected:
            return [(join, "")]
        return [
            *_outer_to_inner(node.preserved, rejected, aliases, owners),
            *_outer_to_inner(node.null_supplied, _rejected(node.on, aliases), aliases, owners),
        ]
    left_gone = bool(_leaves(node.preserved) & rejected)  # rows padding the left operand are filtered
    right_gone = bool(_leaves(node.null_supplied) & rejected)
    if left_gone and right_gone:
        return [(join, "")]
    if left_gone:
        return [(join, "LEFT")]
    if right_gone:
        return [(join, "RIGHT")]
    return [
        *_outer_to_inner(node.preserved, frozenset(), aliases, owners),
        *_outer_to_inner(node.null_supplied, frozenset(), aliases, owners),
    ]


def _references(pred: exp.Expr, alias: str) -> bool:
    return any(c.table == alias for c in pred.find_all(exp.Column))


def _used_columns(select: exp.Select) -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for col in select.find_all(exp.Column):
        if col.table:
            used.setdefault(col.table, set()).add(col.name.lower())
    return used


# --- outputs and aggregation ---------------------------------------------------------


def _outputs(select: exp.Select) -> tuple[OutputColumn, ...]:
    outputs = []
    seen: dict[str, str] = {}
    for e in select.expressions:
        name = e.alias_or_name
        if not name:
            raise _refuse(f"unnamed column {_snippet(e)}", e, "give it an alias")
        if is_hidden(name):
            raise _refuse(
                f"column {name!r} uses the reserved prefix {HIDDEN_PREFIX}",
                e,
                f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns",
            )
        if name.lower() in seen:
            raise _refuse(f"duplicate column name {name!r}", e, "alias one of them")
        seen[name.lower()] = name
        outputs.append(OutputColumn(name, e.this if isinstance(e, exp.Alias) else e))
    return tuple(outputs)


def _aggregation(
    select: exp.Select, outputs: tuple[OutputColumn, ...]
) -> tuple[tuple[exp.Expr, ...], tuple[Aggregate, ...], exp.Expr | None, bool]:
    """GROUP BY expressions, the aggregates to maintain, HAVING, and whether the SELECT is DISTINCT."""
    group = select.args.get("group")
    group_by = tuple(group.expressions) if group is not None else ()
    having_node = select.args.get("having")
    having = having_node.this if having_node is not None else None
    distinct = select.args.get("distinct") is not None
    if distinct and select.args["distinct"].args.get("on"):
        raise _refuse("DISTINCT ON", select.args["distinct"], "use GROUP BY")
    if distinct and group_by:
        raise _refuse("DISTINCT together with GROUP BY", select, "drop DISTINCT: GROUP BY rows are distinct")
    _check_aggregate_places(select)
    calls = [agg for out in outputs for agg in aggregate_calls(out.expression)]
    if having is not None:
        calls += list(aggregate_calls(having))
    if distinct and calls:
        raise _refuse("DISTINCT together with aggregates", select, "drop DISTINCT, or GROUP BY the columns")
    if group_by or calls or having is not None:  # HAVING alone makes Spark aggregate globally
        _check_grouped(outputs, having, group_by)
    # An ordinal qualify left in place points at a constant output (GROUP BY 2 of `'web' AS channel`).
    group_by = tuple(
        outputs[int(g.name) - 1].expression
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.name) <= len(outputs)
        else g
        for g in group_by
    )
    if distinct:
        group_by = tuple(o.expression for o in outputs)  # one group per distinct row
    by_key: dict[str, Aggregate] = {}
    for call in calls:
        key = call.sql(dialect=DIALECT)
        if key not in by_key:
            function, argument = _aggregate_rule(call)
            by_key[key] = Aggregate(len(by_key), function, call, argument)
    return group_by, _count_extremes(tuple(by_key.values()), group_by), having, distinct


def _count_extremes(aggregates: tuple[Aggregate, ...], group_by: tuple[exp.Expr, ...]) -> tuple[Aggregate, ...]:
    """MIN and MAX count the rows that hold their extreme, unless every touched group is recomputed
    anyway (an aggregate without a rule) or the argument is a constant or a group key (the
    extreme is then the group's one value: nothing to gain)."""
    if any(a.function is AggregateFunction.RECOMPUTED for a in aggregates):
        return aggregates
    keys = {g.sql(dialect=DIALECT) for g in group_by}

    def counts(a: Aggregate) -> bool:
        if a.function not in (AggregateFunction.MIN, AggregateFunction.MAX) or a.argument is None:
            return False
        return any(a.argument.find_all(exp.Column)) and a.argument.sql(dialect=DIALECT) not in keys

    return tuple(dataclasses.replace(a, counted=True) if counts(a) else a for a in aggregates)


def _exact_averages(select: exp.Select, aggregates: tuple[Aggregate, ...], schema: Schema) -> tuple[Aggregate, ...]:
    """AVG over an integral argument sums it exactly (`Aggregate.exact`). The argument's type is
    sqlglot's inference over the sources' columns, re-parsed (the normalized tree holds Spark's
    functions as anonymous calls); the build checks it against Spark's (`aggregate.user_view`)."""
    averages = [a for a in aggregates if a.function is AggregateFunction.AVG and a.argument is not None]
    if not averages:
        return aggregates
    probe = select.copy()
    for arg in ("group", "having", "distinct"):
        probe.set(arg, None)
    probe.set("expressions", [a.argument.copy() for a in averages if a.argument is not None])
    parsed = sqlglot.parse_one(probe.sql(dialect=DIALECT), read="spark")
    typed = annotate_types(parsed, schema=_nested_schema(schema), dialect="spark")
    types = [e.type.sql(dialect="spark").lower() if e.type else "" for e in typed.expressions]
    integral = {a.index for a, t in zip(averages, types, strict=True) if t in INTEGRAL_TYPES}
    return tuple(dataclasses.replace(a, exact=True) if a.index in integral else a for a in aggregates)


def _check_aggregate_places(select: exp.Select) -> None:
    """Aggregates belong in the select list and HAVING only."""
    places = [("WHERE", select.args.get("where")), ("GROUP BY", select.args.get("group"))]
    places += [("JOIN ... ON", j) for j in select.args.get("joins") or []]
    for place, node in places:
        agg = next((n for n in node.walk() if _is_aggregate(n)), None) if node is not None else None
        if agg is not None:
            raise _refuse(
                f"aggregate {_snippet(agg)} in {place}", agg, "aggregates belong in the SELECT list or HAVING"
            )


def _check_grouped(outputs: tuple[OutputColumn, ...], having: exp.Expr | None, group_by: tuple[exp.Expr, ...]) -> None:
    keys = {g.sql(dialect=DIALECT) for g in group_by}
    exprs = [o.expression for o in outputs] + ([having] if having is not None else [])
    for e in exprs:
        col = _ungrouped_column(e, keys)
        if col is not None:
            raise _refuse(
                f"column {_snippet(col)} that is neither in GROUP BY nor aggregated",
                col,
                "add it to GROUP BY, or aggregate it",
            )


def _ungrouped_column(expr: exp.Expr, keys: set[str]) -> exp.Column | None:
    if _is_aggregate(expr) or expr.sql(dialect=DIALECT) in keys:
        return None
    if isinstance(expr, exp.Column):
        return expr
    for child in expr.iter_expressions():
        col = _ungrouped_column(child, keys)
        if col is not None:
            return col
    return None


def _classify(sources: tuple[Source, ...], tree: JoinNode, aggregated: bool) -> ViewClass:
    if aggregated:
        return ViewClass.AGGREGATE if len(sources) == 1 else ViewClass.AGGREGATE_JOIN
    if any(s.side is not Side.PRESERVED for s in sources):
        return ViewClass.OUTER_JOIN
    return ViewClass.SINGLE_SOURCE if len(sources) == 1 else ViewClass.INNER_JOIN


def _hidden_columns(
    view_class: ViewClass,
    sources: tuple[Source, ...],
    group_by: tuple[exp.Expr, ...],
    aggregates: tuple[Aggregate, ...],
) -> tuple[HiddenColumn, ...]:
    if view_class in (ViewClass.AGGREGATE, ViewClass.AGGREGATE_JOIN):
        keys = [HiddenColumn(group_column(i), Role.GROUP_KEY, g.sql(dialect=DIALECT)) for i, g in enumerate(group_by)]
        count = HiddenColumn(COUNT_COLUMN, Role.GROUP_COUNT)
        return (*keys, count, *(h for agg in aggregates for h in agg.state))
    rids = [HiddenColumn(s.rid, Role.ROW_IDENTITY, f"{s.alias} ({s.table})") for s in sources]
    return (*rids, HiddenColumn(COUNT_COLUMN, Role.MULTIPLICITY))
