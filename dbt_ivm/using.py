"""`JOIN … USING (k)` as Spark resolves it, over the tree sqlglot's qualify wrote.

Spark (`Analyzer.commonNaturalJoinProcessing`) joins the left operand's `k` (the first column
named `k` in its output) with the right operand's, and outputs one merged `k` in place of
both: the left `k` after an inner or LEFT join, the right `k` after a RIGHT join,
`COALESCE(left k, right k)` after a FULL join. Later joins and the unqualified `k` of the
SELECT list, WHERE, GROUP BY and HAVING read that merged column; `a.k` still names `a`'s own.
After `a FULL JOIN b USING (k) FULL JOIN c USING (k)` Spark joins `c` on `COALESCE(a.k, b.k)`,
after `a RIGHT JOIN b USING (k) … USING (k)` on `b.k`.

sqlglot's qualify joins on the first table that has `k` (`a.k`: another join) and writes each
unqualified `k` as a COALESCE over every table joined on it (right in value, but not always in
type). `mark` records each USING join's columns before qualify; `resolve` then rewrites, scope
by scope, the ON of each USING join and every COALESCE qualify wrote (the model's own COALESCE
is a plain call, see `verbatim`) into Spark's expressions. The merged column of a FULL join is a
plain COALESCE call, as the model would write it.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.resolver import Resolver
from sqlglot.optimizer.scope import Scope, traverse_scope

from dbt_ivm.errors import UnsupportedView

USING_COLUMNS = "ivm_using"  # Join meta: the USING columns (lower case), recorded before qualify
MERGED = "ivm_merged"  # meta of a FULL join's merged column (named after its left key, as Spark does)

# An operand's output columns in order: (name in lower case, the expression Spark reads for it).
Output = list[tuple[str, exp.Expr]]


def mark(tree: exp.Expr) -> None:
    """Record each USING join's columns (qualify drops them), and name each unqualified column
    the SELECT list of such a join returns as written (`K` stays `K AS K`: qualify's COALESCE
    would lose the spelling Spark keeps). In place, before qualify."""
    for join in tree.find_all(exp.Join):
        using = join.args.get("using")
        if not using:
            continue
        join.meta[USING_COLUMNS] = tuple(dict.fromkeys(u.name.lower() for u in using))
        select = join.parent
        if not isinstance(select, exp.Select):
            continue
        for projection in select.expressions:
            if (
                isinstance(projection, exp.Column)
                and not projection.table
                and isinstance(projection.this, exp.Identifier)
            ):
                projection.replace(exp.alias_(projection.copy(), projection.this.copy()))


def resolve(tree: exp.Expr, schema: Any) -> None:
    """Rewrite the USING joins `mark` recorded, and the columns qualify merged for them, into the
    expressions Spark reads (in place, after qualify). `schema`: sqlglot's schema of the sources."""
    for scope in traverse_scope(tree):
        select = scope.expression
        if not isinstance(select, exp.Select) or not any(USING_COLUMNS in j.meta for j in select.find_all(exp.Join)):
            continue
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            continue
        output = _chain(from_.this, list(select.args.get("joins") or []), _Columns(scope, schema))
        for node in list(select.find_all(exp.Coalesce)):
            if node.find_ancestor(exp.Select) is select:
                node.replace(_lookup(_merged_name(node), output, node))


class _Columns:
    """The columns of each source of a scope, as qualify resolved them."""

    def __init__(self, scope: Scope, schema: Any):
        self.resolver = Resolver(scope, schema)

    def of(self, alias: str) -> Output:
        return [(c.lower(), exp.column(c, table=alias, quoted=True)) for c in self.resolver.get_source_columns(alias)]


def _group(rel: exp.Expr) -> tuple[exp.Expr, list[exp.Join]] | None:
    """A parenthesized join `(a JOIN b …)`: its first operand and its joins (see `analyze.join_tree.parenthesized`)."""
    if isinstance(rel, exp.Subquery) and not rel.alias and isinstance(rel.this, (exp.Table, exp.Subquery)):
        joins = rel.this.args.get("joins")
        if joins:
            return rel.this, list(joins)
    return None


def _operand(rel: exp.Expr, columns: _Columns) -> Output:
    """A table's or derived table's columns, or a parenthesized join's output (a group's first
    operand carries the group's joins: it is read without them)."""
    group = _group(rel)
    return _chain(*group, columns) if group is not None else columns.of(rel.alias_or_name)


def _chain(first: exp.Expr, joins: list[exp.Join], columns: _Columns) -> Output:
    """The output of `first` joined with `joins` in order (Spark folds a FROM list left to right,
    `a, b JOIN c USING (k)` too); each USING join's ON rewritten on the way."""
    output = _operand(first, columns)
    for join in joins:
        right = _operand(join.this, columns)
        names = join.meta.get(USING_COLUMNS)
        if names is None:
            on = join.args.get("on")
            if on is not None:
                for node in list(on.find_all(exp.Coalesce)):
                    node.replace(_lookup(_merged_name(node), output + right, node))
            output = output + right
            continue
        output = _using(join, names, output, right)
    return output


def _using(join: exp.Join, names: tuple[str, ...], left: Output, right: Output) -> Output:
    """Set the ON of `join` (`left JOIN right USING (names)`) to Spark's; its output."""
    pairs = [(_first(name, left, join, "left"), _first(name, right, join, "right")) for name in names]
    join.set("on", exp.and_(*[exp.EQ(this=left[i][1].copy(), expression=right[j][1].copy()) for i, j in pairs]))
    side = (join.side or "").upper()
    merged: Output = []
    for name, (i, j) in zip(names, pairs, strict=True):
        if side == "RIGHT":
            merged.append((name, right[j][1]))
        elif side == "FULL":
            call = exp.Anonymous(this="COALESCE", expressions=[left[i][1].copy(), right[j][1].copy()])
            call.meta[MERGED] = True
            merged.append((name, call))
        else:
            merged.append((name, left[i][1]))
    used_left, used_right = {i for i, _ in pairs}, {j for _, j in pairs}
    return [
        *merged,
        *(c for i, c in enumerate(left) if i not in used_left),
        *(c for j, c in enumerate(right) if j not in used_right),
    ]


def _first(name: str, output: Output, join: exp.Join, side: str) -> int:
    for i, (column, _) in enumerate(output):
        if column == name:
            return i
    raise UnsupportedView(
        f"USING column {name} that the {side} side of {join.sql(dialect='spark')[:80]} does not have",
        "check the column names",
    )


def _merged_name(node: exp.Coalesce) -> str:
    """The USING column whose references qualify wrote as `node` (COALESCE(a.k, b.k, …))."""
    names = {a.name.lower() for a in node.iter_expressions() if isinstance(a, exp.Column)}
    if len(names) != 1 or not all(isinstance(a, exp.Column) for a in node.iter_expressions()):
        raise UnsupportedView(f"an unexpected COALESCE after qualification ({node.sql(dialect='spark')[:80]})")
    return names.pop()


def _lookup(name: str, output: Output, node: exp.Expr) -> exp.Expr:
    """The one column `name` of `output`, as an unqualified reference reads it."""
    found = [e for column, e in output if column == name]
    if len(found) != 1:
        raise UnsupportedView(
            f"column {name}, which is ambiguous after a JOIN … USING ({len(found)} columns of that name)",
            "qualify it with its table's alias",
        )
    return found[0].copy()
