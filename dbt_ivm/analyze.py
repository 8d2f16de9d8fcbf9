"""analyze(sql, schema) -> ViewPlan: validate, normalize and classify a model's SELECT.

Runs once per build, before any SQL touches the database. Every construct the
refresh algorithms cannot maintain exactly is refused here with a message that
names it; nothing unsupported passes silently.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.eliminate_ctes import eliminate_ctes
from sqlglot.optimizer.eliminate_subqueries import eliminate_subqueries
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.simplify import simplify

from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import (
    COUNT_COLUMN,
    HIDDEN_PREFIX,
    Aggregate,
    HiddenColumn,
    InnerGroup,
    JoinNode,
    Leaf,
    OuterJoin,
    OutputColumn,
    Side,
    Source,
    TableName,
    ViewClass,
    ViewPlan,
    is_hidden,
)

DIALECT = "spark"
Schema = Mapping[str, Mapping[str, str]]

# Functions whose value is not a function of their arguments: a recompute would differ.
NONDETERMINISTIC_CLASSES: tuple[type[exp.Expression], ...] = (
    exp.Rand,
    exp.Randn,
    exp.Uuid,
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.CurrentTime,
    exp.CurrentUser,
)
NONDETERMINISTIC_NAMES = frozenset(
    {
        "rand", "random", "randn", "randstr", "uniform", "uuid", "shuffle", "now",
        "current_timestamp", "current_date", "current_time", "localtimestamp",
        "current_timezone", "current_user", "user", "session_user", "current_catalog",
        "current_database", "current_schema", "monotonically_increasing_id",
        "spark_partition_id", "input_file_name", "input_file_block_start",
        "input_file_block_length", "unix_timestamp", "rand_str", "try_reflect", "reflect",
        "java_method",
    }
)
GENERATOR_CLASSES: tuple[type[exp.Expression], ...] = (
    exp.Explode,
    exp.Posexplode,
    exp.Inline,
    exp.Unnest,
    exp.Lateral,
)
SUPPORTED_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
}


def _position(node: exp.Expression) -> str | None:
    """Line and column of the first token of `node` that the parser located."""
    for sub in node.walk():
        meta = sub.meta if isinstance(sub, exp.Expression) else {}
        if meta.get("line") is not None:
            return f"line {meta['line']}, column {meta.get('col', '?')}"
    return None


def _snippet(node: exp.Expression, limit: int = 80) -> str:
    text = node.sql(dialect=DIALECT)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _refuse(construct: str, node: exp.Expression | None = None, hint: str = "") -> UnsupportedView:
    return UnsupportedView(construct, hint, _position(node) if node is not None else None)


def parse(sql: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as e:
        raise UnsupportedView(f"SQL that does not parse ({str(e).splitlines()[0]})",
                              "check the model's SQL") from e
    if len(statements) != 1:
        raise UnsupportedView(f"{len(statements)} statements", "a model is one SELECT")
    stmt = statements[0]
    if not isinstance(stmt, exp.Query):
        raise UnsupportedView(f"a {stmt.key.upper()} statement", "a model is one SELECT")
    return stmt


def _cte_names(tree: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _table_name(table: exp.Table) -> TableName:
    return TableName(db=table.db or None, name=table.name, catalog=table.catalog or None)


def source_tables(sql: str) -> list[TableName]:
    """The tables the model reads, in order of first appearance; CTE names excluded."""
    tree = parse(sql)
    ctes = _cte_names(tree)
    seen: dict[str, TableName] = {}
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        if isinstance(table.this, exp.Func):  # table-valued function
            continue
        name = _table_name(table)
        seen.setdefault(name.key, name)
    return list(seen.values())


def check_constructs(tree: exp.Expression) -> None:
    """Refuse, on the raw parse tree, every construct no refresh can maintain exactly."""
    for node in tree.walk():
        if isinstance(node, exp.Window):
            raise _refuse(f"window function {_snippet(node)}", node,
                          "use materialized='table', or aggregate with GROUP BY")
        if isinstance(node, (exp.Limit, exp.Fetch)):
            raise _refuse("LIMIT", node, "drop the LIMIT, or use materialized='table'")
        if isinstance(node, exp.Offset):
            raise _refuse("OFFSET", node, "drop the OFFSET, or use materialized='table'")
        if isinstance(node, exp.Order) and not isinstance(node.parent, (exp.Window, exp.AggFunc)):
            raise _refuse("ORDER BY", node, "a view has no row order: drop ORDER BY and sort when reading")
        if isinstance(node, (exp.Sort, exp.Cluster, exp.Distribute)):
            raise _refuse(f"{node.key.upper()} BY", node, "drop it: a view has no row order")
        if isinstance(node, exp.SetOperation):
            kind = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}.get(type(node), "set operation")
            if isinstance(node, exp.Union) and not node.args.get("distinct"):
                kind = "UNION ALL"
            raise _refuse(f"set operation {kind}", node,
                          "make one fast_mv per branch, or use materialized='table'")
        if isinstance(node, NONDETERMINISTIC_CLASSES) or (
            isinstance(node, (exp.Anonymous, exp.Func))
            and _func_name(node) in NONDETERMINISTIC_NAMES
        ):
            raise _refuse(f"non-deterministic function {_func_name(node)}()", node,
                          "a recompute would give other values: compute it upstream in a table, "
                          "or use materialized='table'")
        if isinstance(node, GENERATOR_CLASSES):
            raise _refuse(f"generator or LATERAL {_snippet(node)}", node,
                          "explode the data upstream into a table, or use materialized='table'")
        if isinstance(node, exp.TableSample):
            raise _refuse("TABLESAMPLE", node, "sampling is not deterministic: use materialized='table'")
        if isinstance(node, exp.Table):
            _check_table(node)
        if isinstance(node, (exp.Exists, exp.Subquery, exp.Select)) and _is_predicate_subquery(node):
            raise _refuse(f"subquery in an expression ({_snippet(node)})", node,
                          "rewrite it as a JOIN, or use materialized='table'")
        if isinstance(node, exp.AggFunc):
            _check_aggregate(node)
        if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            raise _refuse(f"{node.key.upper()}", node, "one fast_mv per grouping, or use materialized='table'")
        if isinstance(node, exp.Join):
            _check_join(node)
        if isinstance(node, exp.Column) and is_hidden(node.name):
            raise _refuse(f"column {node.name!r} uses the reserved prefix {HIDDEN_PREFIX}", node,
                          f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns")
        if isinstance(node, exp.Alias) and is_hidden(node.alias):
            raise _refuse(f"column alias {node.alias!r} uses the reserved prefix {HIDDEN_PREFIX}", node,
                          f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns")


def _func_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key


def _is_predicate_subquery(node: exp.Expression) -> bool:
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


def _check_table(table: exp.Table) -> None:
    if table.args.get("version") is not None:
        raise _refuse(f"time travel on {_snippet(table)}", table,
                      "read the current table: fast_mv pins source versions itself")
    if isinstance(table.this, exp.Func) or isinstance(table.this, exp.Anonymous):
        raise _refuse(f"table-valued function {_snippet(table)}", table,
                      "read a Delta table, or use materialized='table'")


def _check_join(join: exp.Join) -> None:
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):
        raise _refuse(f"{(join.side + ' ' if join.side else '')}{kind} JOIN", join,
                      "use an inner join on distinct keys, or materialized='table'")
    if join.args.get("method"):
        raise _refuse(f"{join.args['method']} JOIN", join, "write the join condition out with ON")
    if kind == "ASOF" or join.args.get("match_condition") is not None:
        raise _refuse("ASOF JOIN", join, "use materialized='table'")


def _check_aggregate(node: exp.AggFunc) -> None:
    name = SUPPORTED_AGGREGATES.get(type(node))
    if name is None:
        raise _refuse(f"aggregate {_func_name(node)}()", node,
                      "supported aggregates are COUNT(*), COUNT(x), SUM, AVG, MIN and MAX; "
                      "use materialized='table' for this model")
    arg = node.this
    if isinstance(arg, exp.Distinct) or node.args.get("distinct"):
        raise _refuse(f"{name.upper()}(DISTINCT ...)", node,
                      "aggregate a fast_mv that selects DISTINCT, or use materialized='table'")
    if node.args.get("expressions"):
        raise _refuse(f"{name.upper()} with several arguments", node, "aggregate one expression")
    if arg is not None and any(isinstance(a, exp.AggFunc) for a in arg.find_all(exp.AggFunc)):
        raise _refuse("nested aggregate", node, "use materialized='table'")


def _nested_schema(schema: Schema) -> dict:
    """{'db.t': cols} -> {'db': {'t': cols}} as sqlglot's MappingSchema wants it."""
    depths = {len(k.split(".")) for k in schema}
    if len(depths) > 1:
        raise UnsupportedView("sources named with and without a database",
                              "qualify every source as db.table")
    nested: dict = {}
    for key, cols in schema.items():
        parts = [p.strip("`").lower() for p in key.split(".")]
        node = nested
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = {c.lower(): t for c, t in cols.items()}
    return nested


def normalize(tree: exp.Expression, schema: Schema) -> exp.Expression:
    """Qualify and expand with sqlglot's own optimizer rules; merge CTEs and SPJ subqueries."""
    tree = tree.copy()
    _lowercase_tables(tree)
    try:
        tree = qualify(
            tree,
            schema=_nested_schema(schema),
            dialect=DIALECT,
            quote_identifiers=True,
            validate_qualify_columns=True,
            identify=True,
        )
    except OptimizeError as e:
        raise UnsupportedView(f"unresolvable SQL ({e})", "check the column and table names") from e
    tree = eliminate_subqueries(tree)
    tree = merge_subqueries(tree)
    tree = eliminate_ctes(tree)
    tree = simplify(tree, dialect=DIALECT)
    return tree


def _lowercase_tables(tree: exp.Expression) -> None:
    """Spark's catalog is case-insensitive: compare table names in lower case."""
    for table in tree.find_all(exp.Table):
        for part in ("this", "db", "catalog"):
            ident = table.args.get(part)
            if isinstance(ident, exp.Identifier):
                ident.set("this", ident.this.lower())


def analyze(sql: str, schema: Schema) -> ViewPlan:
    """Validate, normalize and classify `sql` (Spark dialect, sources fully named).

    `schema` maps each source table ("db.table" or "table") to {column: Spark type}.
    Raises UnsupportedView with the construct and what to do instead.
    """
    raw = parse(sql)
    check_constructs(raw)
    missing = [t for t in source_tables(sql) if t.key not in {k.lower().replace("`", "") for k in schema}]
    if missing:
        raise UnsupportedView(f"no schema for source {missing[0]}", "the source must exist before the build")
    tree = normalize(raw, schema)
    if not isinstance(tree, exp.Select):
        raise UnsupportedView(f"a top-level {tree.key.upper()}", "a model is one SELECT")
    select = tree
    for sub in select.find_all(exp.Subquery, exp.CTE):
        raise _refuse(
            f"a FROM subquery or CTE that could not be merged into the query ({_snippet(sub)})", sub,
            "subqueries with GROUP BY, DISTINCT or outer joins inside are not maintained: "
            "make the subquery its own fast_mv and select from it",
        )
    sources, tree_node = _join_tree(select, schema)
    where = select.args.get("where")
    where_expr = where.this if where is not None else None
    outputs = _outputs(select)
    group_by, aggregates, having, distinct = _aggregation(select, outputs)
    view_class = _classify(sources, tree_node, bool(group_by or aggregates or distinct))
    if where_expr is not None and view_class is ViewClass.OUTER_JOIN:
        _check_outer_where(where_expr, sources)
    hidden = _hidden_columns(view_class, sources, aggregates)
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
    )


def _join_tree(select: exp.Select, schema: Schema) -> tuple[tuple[Source, ...], JoinNode]:
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        raise UnsupportedView("a SELECT without FROM", "a view must read at least one Delta table")
    relations: list[exp.Expression] = [from_.this]
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    relations += [j.this for j in joins]
    for rel in relations:
        if not isinstance(rel, exp.Table) or rel.args.get("joins"):
            raise _refuse(f"relation {_snippet(rel)}", rel,
                          "join tables directly (no VALUES, table functions or parenthesized joins)")
    used = _used_columns(select)
    lowered = {k.lower().replace("`", ""): v for k, v in schema.items()}
    sources = []
    for i, rel in enumerate(relations):
        name = _table_name(rel)
        cols = {c.lower(): (c, t) for c, t in lowered[name.key].items()}
        alias = rel.alias_or_name
        used_names = used.get(alias, set())
        columns = tuple((cols[c][0], cols[c][1]) for c in cols if c in used_names)
        sources.append(Source(index=i, alias=alias, table=name, columns=columns))

    node: JoinNode = Leaf(0)
    for i, join in enumerate(joins, start=1):
        on = join.args.get("on")
        if join.args.get("using"):
            raise _refuse("JOIN ... USING that could not be rewritten", join, "write the condition with ON")
        side = (join.side or "").upper()
        if side == "":
            node = _add_inner(node, Leaf(i), on)
        elif side == "LEFT":
            node = OuterJoin("left", node, Leaf(i), _require_on(on, join), _null_intolerant(on))
        elif side == "RIGHT":
            node = OuterJoin("left", Leaf(i), node, _require_on(on, join), _null_intolerant(on))
        elif side == "FULL":
            node = OuterJoin("full", node, Leaf(i), _require_on(on, join), _null_intolerant(on))
        else:
            raise _refuse(f"{side} JOIN", join, "use INNER, LEFT, RIGHT or FULL joins")
    sides = _annotate(node)
    sources = [Source(s.index, s.alias, s.table, s.columns, sides.get(s.index, Side.PRESERVED)) for s in sources]
    return tuple(sources), node


def _require_on(on: exp.Expression | None, join: exp.Join) -> exp.Expression:
    if on is None:
        raise _refuse("an outer join without ON", join, "give the join condition with ON")
    return on


def _add_inner(node: JoinNode, leaf: Leaf, on: exp.Expression | None) -> JoinNode:
    preds = (on,) if on is not None else ()
    if isinstance(node, InnerGroup):
        return InnerGroup(node.children + (leaf,), node.predicates + preds)
    return InnerGroup((node, leaf), preds)


def _annotate(node: JoinNode, side: Side = Side.PRESERVED) -> dict[int, Side]:
    """Nica's PSNS annotation: each relation's side as seen from the view's root."""
    if isinstance(node, Leaf):
        return {node.source: side}
    out: dict[int, Side] = {}
    if isinstance(node, InnerGroup):
        for child in node.children:
            out.update(_annotate(child, side))
        return out
    if node.kind == "full":
        both = Side.BOTH if side is Side.PRESERVED else side
        out.update(_annotate(node.preserved, both))
        out.update(_annotate(node.null_supplied, both))
        return out
    out.update(_annotate(node.preserved, side))
    out.update(_annotate(node.null_supplied, Side.NULL_SUPPLIED if side is Side.PRESERVED else side))
    return out


NULL_TOLERANT = (exp.Is, exp.Coalesce, exp.If, exp.Case, exp.Or, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Not)


def _null_intolerant(pred: exp.Expression | None) -> bool:
    """True when the predicate cannot be TRUE once every referenced column is NULL.

    Conservative: any NULL-handling construct makes it tolerant.
    """
    if pred is None:
        return False
    for node in pred.walk():
        if isinstance(node, NULL_TOLERANT):
            return False
        if isinstance(node, exp.Func) and _func_name(node) in {"nvl", "ifnull", "nvl2", "nullif", "coalesce"}:
            return False
    return any(True for _ in pred.find_all(exp.Column))


def _check_outer_where(where: exp.Expression, sources: tuple[Source, ...]) -> None:
    """A WHERE on the null-supplied side must keep working on padded rows; refuse what we cannot tell."""
    ns = {s.alias for s in sources if s.side is not Side.PRESERVED}
    for conj in where.flatten() if isinstance(where, exp.And) else [where]:
        tables = {c.table for c in conj.find_all(exp.Column)}
        if tables & ns and not _null_intolerant(conj):
            raise _refuse(f"WHERE predicate {_snippet(conj)} on the null-supplied side of an outer join", conj,
                          "move the predicate into the ON clause, or use materialized='table'")


def _used_columns(select: exp.Select) -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for col in select.find_all(exp.Column):
        if col.table:
            used.setdefault(col.table, set()).add(col.name.lower())
    return used


def _outputs(select: exp.Select) -> tuple[OutputColumn, ...]:
    outputs = []
    seen: dict[str, str] = {}
    for e in select.expressions:
        name = e.alias_or_name
        if not name:
            raise _refuse(f"unnamed column {_snippet(e)}", e, "give it an alias")
        if is_hidden(name):
            raise _refuse(f"column {name!r} uses the reserved prefix {HIDDEN_PREFIX}", e,
                          f"rename it: names starting with {HIDDEN_PREFIX} are fast_mv's hidden columns")
        if name.lower() in seen:
            raise _refuse(f"duplicate column name {name!r}", e, "alias one of them")
        seen[name.lower()] = name
        outputs.append(OutputColumn(name, e.this if isinstance(e, exp.Alias) else e))
    return tuple(outputs)


def _aggregation(select: exp.Select, outputs: tuple[OutputColumn, ...]):
    group = select.args.get("group")
    group_by = tuple(group.expressions) if group is not None else ()
    having_node = select.args.get("having")
    having = having_node.this if having_node is not None else None
    distinct = select.args.get("distinct") is not None
    if distinct and select.args["distinct"].args.get("on"):
        raise _refuse("DISTINCT ON", select.args["distinct"], "use GROUP BY")
    if distinct and group_by:
        raise _refuse("DISTINCT together with GROUP BY", select, "drop DISTINCT: GROUP BY rows are distinct")
    aggregates = []
    for i, out in enumerate(outputs):
        for agg in out.expression.find_all(exp.AggFunc):
            func = SUPPORTED_AGGREGATES[type(agg)]
            arg = agg.this
            if func == "count" and (arg is None or isinstance(arg, exp.Star)):
                func, arg = "count_star", None
            helpers: tuple[str, ...] = ()
            if func in ("count", "sum", "avg", "min", "max"):
                helpers = (f"{HIDDEN_PREFIX}nn_{i}",)
            aggregates.append(Aggregate(func, arg, out.name, helpers))
    if having is not None:
        for agg in having.find_all(exp.AggFunc):
            func = SUPPORTED_AGGREGATES[type(agg)]
            aggregates.append(Aggregate(func, agg.this, f"having:{_snippet(agg)}", ()))
    return group_by, tuple(aggregates), having, distinct


def _classify(sources: tuple[Source, ...], tree: JoinNode, aggregated: bool) -> ViewClass:
    if aggregated:
        return ViewClass.AGGREGATE if len(sources) == 1 else ViewClass.AGGREGATE_JOIN
    if any(s.side is not Side.PRESERVED for s in sources):
        return ViewClass.OUTER_JOIN
    return ViewClass.SINGLE_SOURCE if len(sources) == 1 else ViewClass.INNER_JOIN


def _hidden_columns(view_class: ViewClass, sources: tuple[Source, ...],
                    aggregates: tuple[Aggregate, ...]) -> tuple[HiddenColumn, ...]:
    if view_class in (ViewClass.AGGREGATE, ViewClass.AGGREGATE_JOIN):
        cols = [HiddenColumn(COUNT_COLUMN, "rows in the group")]
        for agg in aggregates:
            cols += [HiddenColumn(h, f"non-NULL arguments of {agg.output}") for h in agg.helpers]
        return tuple(cols)
    cols = [HiddenColumn(s.rid, f"row identity of {s.alias} ({s.table})") for s in sources]
    cols.append(HiddenColumn(COUNT_COLUMN, "multiplicity of the row"))
    return tuple(cols)
