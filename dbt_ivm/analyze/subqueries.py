"""Semi-join views: a SELECT whose WHERE tests its rows with `[NOT] EXISTS (subquery)` or
`x [NOT] IN (subquery)` (`ir.Subqueries`).

A test is correlated by equalities between the subquery's columns and the outer query's
(`s.k = r.k`, `s.k <=> r.k`; IN adds its value `x = y`), so a row's result depends on the row
and on the subquery's rows of its key only: the refresh recomputes the keys a change touches
(`classes.semijoins`). What cannot be cut so (a correlation that is not an equality, a
correlation or a subquery inside a subquery, a subquery outside the WHERE) is refused by name.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from dbt_ivm.analyze.calculated import aggregating
from dbt_ivm.analyze.functions import is_aggregate
from dbt_ivm.analyze.join_tree import join_tree
from dbt_ivm.analyze.parsing import DIALECT, Schema, nested_schema, refuse, snippet
from dbt_ivm.ir import (
    HIDDEN_PREFIX,
    INTEGRAL_TYPES,
    Comparison,
    KeyPair,
    Source,
    Subqueries,
    SubqueryTest,
)
from dbt_ivm.render import conjuncts

# what can be written instead of a subquery that aggregates (a join to a grouped subquery is refused too)
OWN_MODEL_HINT = (
    "compute the subquery in a fast_mv model of its own and read that model with ref() instead (a fast_mv "
    "can read another; a one-row aggregate by a CROSS JOIN), or use materialized='table'"
)
# Spark SQL parses no ANY/ALL over a subquery: the model cannot run as written
QUANTIFIED_HINT = (
    "Spark SQL has no ANY/ALL over a subquery: write `x = ANY (subquery)` as `x IN (subquery)` and "
    "`x <> ALL (subquery)` as `x NOT IN (subquery)`, which fast_mv maintains; another comparison "
    "(`x > ALL (…)`) needs the subquery's MIN or MAX: compute it in a fast_mv model of its own and read "
    "that model with ref() (a one-row aggregate by a CROSS JOIN), or use materialized='table'"
)
# a test inside a test: its inner query can be a model of its own, which the outer test reads
NESTED_HINT = (
    "compute the inner query, with its own EXISTS or IN, in a fast_mv model of its own and test against "
    "that model with ref() instead (a fast_mv can read another), or use materialized='table'"
)
CORRELATION_HINT = (
    "correlate the subquery by equalities of its columns with the outer query's only (s.k = r.k), or use "
    "materialized='table'"
)


def inner_key(j: int) -> str:
    """The name under which a test's `select` gives pair `j`'s inner value."""
    return f"{HIDDEN_PREFIX}k_{j}"


def _test_query(node: exp.Expr) -> exp.Expr | None:
    """The subquery of an EXISTS or IN test, else None."""
    query: exp.Expr | None = None
    if isinstance(node, exp.Exists):
        query = node.this
    elif isinstance(node, exp.In) and isinstance(node.args.get("query"), exp.Expr):
        query = node.args["query"]
        query = query.this if isinstance(query, exp.Subquery) else query
    return query


def is_test_query(select: exp.Expr) -> bool:
    """`select` is the subquery of an EXISTS or IN test."""
    parent = select.parent
    test = parent.parent if isinstance(parent, exp.Subquery) else parent
    return test is not None and _test_query(test) is select


def has_subquery(select: exp.Expr) -> bool:
    return any(_test_query(n) is not None for n in select.find_all(exp.Exists, exp.In))


def check_subquery(node: exp.Expr) -> None:
    """On the raw tree, a subquery used as a value or predicate (not a FROM relation): an EXISTS
    or IN test in a WHERE, and in no other subquery; anything else is refused by name."""
    test = node if isinstance(node, exp.Exists) else node.parent
    if isinstance(test, (exp.Any, exp.All)):
        raise refuse(f"{test.key.upper()} (subquery) {snippet(test)}", test, QUANTIFIED_HINT)
    if test is None or _test_query(test) is None:
        raise refuse(f"scalar subquery {snippet(node)}", node, OWN_MODEL_HINT)
    place = test.parent
    while place is not None and not isinstance(place, (exp.Where, exp.Select, exp.Join, exp.Having, exp.Group)):
        place = place.parent
    if not isinstance(place, exp.Where):
        names = {"join": "a JOIN condition", "having": "HAVING", "group": "GROUP BY"}
        where = names.get(place.key, "the SELECT list") if place is not None else "the SELECT list"
        raise refuse(f"subquery {snippet(test)} in {where}", test, "test rows in the WHERE")
    outer = place.parent
    while outer is not None:
        if _test_query(outer) is not None:
            raise refuse(f"a subquery inside a subquery ({snippet(test)})", test, NESTED_HINT)
        outer = outer.parent


def check_tested_relations(tree: exp.Expr) -> None:
    """On the normalized tree (CTEs and derived tables merged where they can be, aggregates not
    yet merged into the query over their groups): an EXISTS or IN test in the WHERE of a query
    that reads a CTE or derived table computing windows or aggregates is refused by name (its
    rows are the windows' or groups', which a key's recompute does not cut)."""
    if not isinstance(tree, exp.Select) or tree.args.get("where") is None:
        return
    test = next((n for n in tree.args["where"].find_all(exp.Exists, exp.In) if _test_query(n) is not None), None)
    if test is None:
        return
    ctes = {cte.alias_or_name.lower(): cte.this for cte in tree.find_all(exp.CTE)}
    relations = [tree.args["from_"].this, *(j.this for j in tree.args.get("joins") or [])]
    for rel in relations:
        body = rel.this if isinstance(rel, exp.Subquery) else None
        if isinstance(rel, exp.Table) and not rel.db:
            body = ctes.get(rel.name.lower())
        if not isinstance(body, exp.Select):
            continue
        windowed = any(e.find(exp.Window) for e in body.expressions)
        if not windowed and not aggregating(body):
            continue
        what = "computes windows" if windowed else "aggregates its rows (GROUP BY, DISTINCT or an aggregate)"
        name = rel.alias_or_name
        raise refuse(
            f"a subquery predicate ({snippet(test)}) over {name!r}, a CTE or derived table that {what}",
            test,
            f"split it into two fast_mv models, chained: the query of {name!r} in one, and in a second that reads "
            "the first with ref() the query that tests its rows (a fast_mv can read another fast_mv: README, "
            "Chains), or use materialized='table'",
        )


def tests(select: exp.Select, schema: Schema, first_index: int) -> tuple[exp.Select, Subqueries, tuple[Source, ...]]:
    """The model with every test's aliases its own (`select`, renamed in place of a copy), its
    tests, and the sources they read, numbered from `first_index`."""
    select = select.copy()
    _check_outer(select)
    where = select.args.get("where")
    found = [n for n in select.find_all(exp.Exists, exp.In) if _test_query(n) is not None]
    taken = {s.alias for s in join_tree(select, schema)[0]}
    built: list[SubqueryTest] = []
    sources: list[Source] = []
    for node in found:
        if where is None or not _within(node, where):
            raise refuse(f"subquery {snippet(node)} outside the WHERE", node, "test rows in the WHERE")
        sub = _test_query(node)
        assert isinstance(sub, exp.Select)
        _rename(sub, taken)
        test, inner = _test(node, sub, select, schema, first_index + len(sources))
        built.append(test)
        sources += inner
    outer = select.copy()
    kept = [c for c in conjuncts(where.this) if not has_subquery(c)] if where is not None else []
    outer.set("where", exp.Where(this=exp.and_(*[c.copy() for c in kept])) if kept else None)
    return select, Subqueries(outer, tuple(built), _partition(built)), tuple(sources)


def _check_outer(select: exp.Select) -> None:
    for arg, construct in (("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT")):
        if select.args.get(arg) is not None:
            raise refuse(
                f"{construct} over rows a subquery tests",
                select.args[arg],
                "make the filtered rows their own fast_mv and aggregate in a model over it, or use "
                "materialized='table'",
            )
    for e in select.expressions:
        found = e.find(exp.Window) or next((n for n in e.walk() if is_aggregate(n)), None)
        if found is not None:
            raise refuse(
                f"{snippet(found)} over rows a subquery tests",
                found,
                "make the filtered rows their own fast_mv and compute it in a model over it, or use "
                "materialized='table'",
            )


def _within(node: exp.Expr, root: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        parent = parent.parent
    return parent is root


def _rename(sub: exp.Select, taken: set[str]) -> None:
    """Give each of the subquery's tables an alias no other relation has (in place): a column the
    subquery qualifies with a name it declares is its own (the outer one is shadowed)."""
    for rel in list(sub.find_all(exp.Table)):  # its relations: no subquery inside a subquery
        alias = rel.alias_or_name
        if alias in taken:
            fresh = next(f"{alias}_{n}" for n in range(2, 1000) if f"{alias}_{n}" not in taken)
            rel.set("alias", exp.TableAlias(this=exp.to_identifier(fresh, quoted=True)))
            for column in sub.find_all(exp.Column):
                if column.table == alias:
                    column.set("table", exp.to_identifier(fresh, quoted=True))
            alias = fresh
        taken.add(alias)


def _test(
    node: exp.Expr, sub: exp.Select, model: exp.Select, schema: Schema, first_index: int
) -> tuple[SubqueryTest, tuple[Source, ...]]:
    for arg, construct in (("group", "GROUP BY"), ("having", "HAVING"), ("with_", "WITH")):
        if sub.args.get(arg) is not None:
            raise refuse(f"{construct} inside a subquery ({snippet(node)})", node, OWN_MODEL_HINT)
    if any(n for n in sub.walk() if is_aggregate(n) or isinstance(n, exp.Window)):
        raise refuse(f"an aggregate or window inside a subquery ({snippet(node)})", node, OWN_MODEL_HINT)
    local, tree = join_tree(sub, schema)
    inner = {s.alias for s in local}
    pairs, own = _correlations(node, sub, inner)
    pairs += _values(node, sub)
    _check_correlated_columns(sub, inner, own, node)
    select = sub.copy()
    select.set("distinct", None)
    select.set("where", exp.Where(this=exp.and_(*[c.copy() for c in own])) if own else None)
    values = [p.inner for p in pairs] or [exp.true()]  # an uncorrelated EXISTS: whether it has rows
    select.set(
        "expressions", [v.copy().as_(exp.to_identifier(inner_key(j), quoted=True)) for j, v in enumerate(values)]
    )
    pairs = [_keyed(p, model, sub, schema) for p in pairs]
    sources = tuple(Source(first_index + s.index, s.alias, s.table, s.columns, s.side, s.upstream) for s in local)
    test = SubqueryTest(node.copy(), select, tuple(pairs), tuple(s.index for s in sources), tree)
    return test, sources


def _correlations(node: exp.Expr, sub: exp.Select, inner: set[str]) -> tuple[list[KeyPair], list[exp.Expr]]:
    """The subquery's correlations (equalities of an inner and an outer expression) and its own
    conjuncts (over its tables alone); any other conjunct that reads the outer query is refused."""
    where = sub.args.get("where")
    pairs: list[KeyPair] = []
    own: list[exp.Expr] = []
    for conjunct in conjuncts(where.this) if where is not None else []:
        if not _outer_columns(conjunct, inner):
            own.append(conjunct)
            continue
        pair = _pair(conjunct, inner)
        if pair is None:
            raise refuse(
                f"correlated condition {snippet(conjunct)} in {snippet(node)}, which is not an equality of the "
                "subquery's columns with the outer query's",
                conjunct,
                CORRELATION_HINT,
            )
        pairs.append(pair)
    return pairs, own


def _outer_columns(expr: exp.Expr, inner: set[str]) -> list[exp.Column]:
    return [c for c in expr.find_all(exp.Column) if c.table not in inner]


def _pair(conjunct: exp.Expr, inner: set[str]) -> KeyPair | None:
    if not isinstance(conjunct, (exp.EQ, exp.NullSafeEQ)):
        return None
    comparison = Comparison.EQUAL if isinstance(conjunct, exp.EQ) else Comparison.NULL_SAFE
    for outer, own in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
        inner_only = list(own.find_all(exp.Column)) and not _outer_columns(own, inner)
        outer_only = all(c.table not in inner for c in outer.find_all(exp.Column)) and _outer_columns(outer, inner)
        if inner_only and outer_only:
            return KeyPair(outer, own, comparison, keyed=False)
    return None


def _values(node: exp.Expr, sub: exp.Select) -> list[KeyPair]:
    """IN's value against the subquery's select list: compared as by `=` where the test is a
    positive conjunct of the WHERE (a NULL only fails it), three-valued anywhere else."""
    if not isinstance(node, exp.In):
        return []
    values = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
    selected = [e.this if isinstance(e, exp.Alias) else e for e in sub.expressions]
    if len(values) != len(selected):
        raise refuse(f"{snippet(node)} compares {len(values)} values with {len(selected)} columns", node, "")
    positive = _positive(node)
    if not positive and len(values) > 1:
        raise refuse(
            f"a multi-column NOT IN or an IN under NOT, OR or CASE ({snippet(node)})",
            node,
            "write it as NOT EXISTS with the equalities, or use materialized='table'",
        )
    comparison = Comparison.EQUAL if positive else Comparison.NULL_AWARE
    return [KeyPair(v, y, comparison, keyed=False) for v, y in zip(values, selected, strict=True)]


def _positive(node: exp.Expr) -> bool:
    """`node` is a conjunct of its WHERE (under ANDs and parentheses only)."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _check_correlated_columns(sub: exp.Select, inner: set[str], own: list[exp.Expr], node: exp.Expr) -> None:
    """The outer query's columns appear in the correlations only (an EXISTS's select list is not read)."""
    places: list[exp.Expr] = [j for j in sub.args.get("joins") or []]
    if isinstance(node, exp.In):
        places += sub.expressions
    for place in places:
        found = _outer_columns(place, inner)
        if found:
            raise refuse(
                f"the outer query's column {snippet(found[0])} in {snippet(place)} inside a subquery",
                found[0],
                CORRELATION_HINT,
            )


def _keyed(pair: KeyPair, model: exp.Select, sub: exp.Select, schema: Schema) -> KeyPair:
    """A pair whose sides have one type (or both an integral type): the touched outer rows are found
    by comparing the outer expression with the inner values; any other compares as its types do."""
    outer, inner = _type(pair.outer, model, schema), _type(pair.inner, sub, schema)
    same = outer == inner and outer not in ("", "unknown", "null")
    keyed = same or (outer in INTEGRAL_TYPES and inner in INTEGRAL_TYPES)
    return KeyPair(pair.outer, pair.inner, pair.comparison, keyed)


def _type(expr: exp.Expr, select: exp.Select, schema: Schema) -> str:
    """sqlglot's inference of `expr`'s type over `select`'s FROM (re-parsed: the normalized tree
    holds Spark's functions as plain calls); '' when it cannot tell."""
    probe = exp.select(expr.copy()).from_(select.args["from_"].copy())
    for join in select.args.get("joins") or []:
        probe.append("joins", join.copy())
    try:
        parsed = sqlglot.parse_one(probe.sql(dialect=DIALECT), read="spark")
        typed = annotate_types(parsed, schema=nested_schema(schema), dialect="spark")
    except Exception:  # sqlglot cannot type it: the pair is compared as written
        return ""
    found = typed.expressions[0].type
    return found.sql(dialect="spark").lower() if found is not None else ""


def _partition(tests: list[SubqueryTest]) -> tuple[exp.Expr, ...]:
    """The outer expressions (by their text) that every test correlates on by a keyed pair (a
    three-valued IN's value only where it is the test's one pair): a key's rows then depend on the
    subqueries' rows of that key only."""
    capable = [_capable(t) for t in tests]
    common = [text for text in capable[0] if all(text in c for c in capable[1:])] if capable else []
    return tuple(capable[0][text] for text in common)


def _capable(test: SubqueryTest) -> dict[str, exp.Expr]:
    found: dict[str, exp.Expr] = {}
    for p in test.pairs:
        if p.keyed and (p.comparison is not Comparison.NULL_AWARE or len(test.pairs) == 1):
            found.setdefault(p.outer.sql(dialect=DIALECT), p.outer)
    return found


def inner_value(test: SubqueryTest, outer: exp.Expr) -> int:
    """The index of `test`'s first keyed pair on `outer` (a partition expression)."""
    text = outer.sql(dialect=DIALECT)
    return next(j for j, p in enumerate(test.pairs) if p.keyed and p.outer.sql(dialect=DIALECT) == text)
