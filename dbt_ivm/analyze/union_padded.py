"""The UNION ALL on the null-supplied side of a LEFT JOIN (a RIGHT JOIN mirrored), distributed
(`analyze.union_join`).

`D ⟕_c (B1 ⊎ … ⊎ Bn) = ⊎_i (D ⋈_{c_i} Bi) ⊎ pad(D ▷_c (B1 ⊎ … ⊎ Bn))`: the matched rows are the
inner join over each branch; a row of D matches none of the union's rows where it matches no
row of any branch, so the padded rows are one outer-join SELECT, each branch a LEFT JOIN item:
`select <D's outputs>, NULL as <the union's> from D LEFT JOIN B1' ON c1 … LEFT JOIN Bn' ON cn
WHERE b1.k IS NULL AND … AND bn.k IS NULL`. `ci` is `c` over branch i's expressions with its
WHERE; `bi.k` a column of branch i's table that an equality of `ci` compares (non-NULL in a
matched row). The query's outputs and WHERE read the union's columns as NULL, as in a padded row.
Taken only as `D [inner joins] LEFT JOIN union` or `union RIGHT JOIN D`, each branch one table
with an optional WHERE.

A FULL JOIN of D and the union (one join, either side) keeps the union's rows too:
`D ⟗_c (B1 ⊎ … ⊎ Bn) = ⊎_i (D ⟖_{c_i} Bi) ⊎ pad(D ▷_c (B1 ⊎ … ⊎ Bn))`, each branch's copy an
outer join that preserves the branch (a row of Bi, matched or padded, is a row of the union's
side), and the same padded rows of D.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt_ivm.analyze.parsing import refuse
from dbt_ivm.render import conjuncts

NULL_SIDE = "a UNION ALL subquery on the null-supplied side of a {} JOIN"
HINT = (
    "write it as D [INNER JOIN ...] LEFT JOIN (<UNION ALL>) u ON <an equality of a column of each branch>, "
    "or D FULL JOIN (<UNION ALL>) u ON ... with no other join, each branch one table with an optional WHERE, "
    "or make the UNION ALL its own fast_mv model and join to it"
)


def null_supplied(select: exp.Select, position: int) -> bool:
    """The union (FROM or JOIN item `position`) is on the null-supplied side of a LEFT (RIGHT) JOIN
    in the one shape this module maintains; False where it is on no null-supplied side; refused
    by name where it is, in another shape."""
    joins: list[exp.Join] = select.args.get("joins") or []
    sides = [(j.side or "").upper() for j in joins]
    if joins and sides[max(position, 1) - 1] == "FULL":
        if len(joins) != 1:
            raise refuse("a UNION ALL subquery in a FULL JOIN with another join in the query", joins[-1], HINT)
        return True
    if position == 0:
        if "RIGHT" not in sides:
            return False
        if len(joins) != 1:
            raise refuse(NULL_SIDE.format("RIGHT") + " with another join in the query", joins[0], HINT)
        return True
    if sides[position - 1] != "LEFT":
        return False
    others = [j for k, j in enumerate(joins, 1) if k != position]
    if position != len(joins) or any(
        sides[k] or (j.args.get("kind") or "").upper() == "CROSS" for k, j in enumerate(joins[:-1])
    ):
        raise refuse(NULL_SIDE.format("LEFT") + " with an outer join or a later join in the query", others[0], HINT)
    return True


def union_first(select: exp.Select, position: int) -> tuple[exp.Select, int]:
    """`D FULL JOIN union ON c` written `union FULL JOIN D ON c` (position 0): the same rows, the
    columns of `*` aside, which a padded row refuses (`padded`). Each branch's copy then reads the
    branch on the preserved side of a LEFT JOIN, where a branch's WHERE merges; any other query as it is."""
    joins: list[exp.Join] = select.args.get("joins") or []
    if position != 1 or len(joins) != 1 or (joins[0].side or "").upper() != "FULL":
        return select, position
    copy = select.copy()
    join, first = copy.args["joins"][0], copy.args["from_"].this
    copy.args["from_"].set("this", join.this)
    join.set("this", first)
    return copy, 0


def matched(select: exp.Select, position: int) -> exp.Select:
    """A copy of `select` whose outer join of the union is an inner join (the matched rows), or for
    a FULL JOIN, the union first (`union_first`), the LEFT JOIN that keeps its rows, matched or not."""
    copy = select.copy()
    join = copy.args["joins"][max(position, 1) - 1]
    if (join.side or "").upper() == "FULL":
        join.set("side", "LEFT")
        return copy
    join.set("side", None)
    if (join.args.get("kind") or "").upper() == "OUTER":  # LEFT OUTER JOIN: no bare OUTER JOIN
        join.set("kind", None)
    return copy


def padded(
    select: exp.Select,
    position: int,
    alias: str,
    derived: list[exp.Select],
    types: Mapping[str, exp.DataType],
) -> exp.Select:
    """The rows of D that match no row of the union, the union's columns NULL (`types`: the type of a
    column the query computes with; a plain output takes the model's type from the set operation)."""
    joins: list[exp.Join] = select.args["joins"]
    union_join = joins[max(position, 1) - 1]
    side = (union_join.side or "").upper()
    on = union_join.args.get("on")
    if on is None or union_join.args.get("using"):
        raise refuse(NULL_SIDE.format(side) + " joined without ON", union_join, HINT)
    kept = [] if position == 0 else [j.copy() for j in joins[:-1]]
    first = joins[0].this if position == 0 else select.args["from_"].this
    names = [e.alias_or_name for e in derived[0].expressions]
    _refuse_unqualified(select, alias, names, side)
    taken = {t.alias_or_name.lower() for t in select.find_all(exp.Table, exp.CTE, exp.Subquery)}
    keys: list[exp.Expr] = []
    for i, branch in enumerate(derived):
        fresh = _fresh(f"{alias}_b{i}", taken)
        item, values, where = _branch_item(branch, fresh, side, i)
        keys.append(exp.Is(this=_key(on, alias, values, side, i), expression=exp.Null()))
        condition = _substituted(on, alias, values)
        kept.append(exp.Join(this=item, on=exp.and_(condition, where) if where is not None else condition, side="LEFT"))
    out = select.copy()
    for key in ("with_", "distinct", "where", "order"):
        out.set(key, None)
    out.set("from_", exp.From(this=first.copy()))
    out.set("joins", kept)
    lowered = {n.lower(): t for n, t in types.items()}
    out.set("expressions", [_padded_output(e, alias, lowered, side) for e in select.expressions])
    where = select.args.get("where")
    tests = ([_as_null(where.this, alias, lowered, side)] if where is not None else []) + keys
    return out.where(exp.and_(*tests), copy=False)


def _refuse_unqualified(select: exp.Select, alias: str, names: list[str], side: str) -> None:
    """A padded row reads each column of the union by name: `*`, `alias.*` and an unqualified
    column of the union are refused."""
    for output in select.expressions:
        if isinstance(output, exp.Star) or (isinstance(output, exp.Column) and output.is_star and _of(output, alias)):
            raise refuse(f"SELECT * over {NULL_SIDE.format(side)}", output, "list the columns")
    lowered = {n.lower() for n in names}
    for column in select.find_all(exp.Column):
        if not column.table and column.name.lower() in lowered and column.find_ancestor(exp.Subquery, exp.CTE) is None:
            raise refuse(
                f"an unqualified column {column.name} of " + NULL_SIDE.format(side),
                column,
                "qualify it with the UNION ALL's alias",
            )


def _fresh(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found.lower() in taken:
        found, n = f"{name}_{n}", n + 1
    taken.add(found.lower())
    return found


def _branch_item(
    branch: exp.Select, fresh: str, side: str, i: int
) -> tuple[exp.Table, dict[str, exp.Expr], exp.Expr | None]:
    """Branch i as one LEFT JOIN item under alias `fresh`: its table, its columns by the union's
    names and its WHERE, over `fresh`; a branch that is more than one table and a WHERE is refused."""
    table = branch.args["from_"].this
    extra = [
        k
        for k in ("joins", "group", "having", "distinct", "qualify", "order", "limit", "laterals")
        if branch.args.get(k)
    ]
    if (
        extra
        or not isinstance(table, exp.Table)
        or any(isinstance(n, exp.Query) for n in branch.walk() if n is not branch)
    ):
        raise refuse(
            f"branch {i} of " + NULL_SIDE.format(side) + ", which is more than one table and a WHERE", branch, HINT
        )
    old = table.alias_or_name.lower()

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table.lower() == old:
            return exp.column(node.name, table=fresh, quoted=True)
        return node

    item = table.copy()
    item.set("alias", exp.TableAlias(this=exp.to_identifier(fresh, quoted=True)))
    values = {e.alias_or_name.lower(): e.unalias().copy().transform(rename) for e in branch.expressions}
    where = branch.args.get("where")
    return item, values, where.this.copy().transform(rename) if where is not None else None


def _key(on: exp.Expr, alias: str, values: Mapping[str, exp.Expr], side: str, i: int) -> exp.Expr:
    """A column of branch i's table that an equality of ON (a conjunct) compares with an expression
    of D: NULL in the padded row of a LEFT JOIN, so `key IS NULL` means no match."""
    for conjunct in conjuncts(on):
        if not isinstance(conjunct, exp.EQ):
            continue
        for ours, theirs in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            value = values.get(ours.name.lower()) if _of(ours, alias) else None
            if isinstance(value, exp.Column) and not any(_of(c, alias) for c in theirs.find_all(exp.Column)):
                return value.copy()
    raise refuse(
        f"{NULL_SIDE.format(side)} whose ON has no equality of a column of branch {i}'s table with the other side",
        on,
        "join on an equality (u.k = d.id) that every branch gives as a column of its table",
    )


def _of(node: exp.Expr, alias: str) -> bool:
    return isinstance(node, exp.Column) and node.table.lower() == alias.lower()


def _substituted(expression: exp.Expr, alias: str, values: Mapping[str, exp.Expr]) -> exp.Expr:
    """`expression` with each column of the union `alias` replaced by its value in `values`."""

    def replace(node: exp.Expr) -> exp.Expr:
        if _of(node, alias) and node.name.lower() in values:
            return values[node.name.lower()].copy()
        return node

    return expression.copy().transform(replace)


def _as_null(expression: exp.Expr, alias: str, types: Mapping[str, exp.DataType], side: str) -> exp.Expr:
    """`expression` as a padded row reads it: each column of the union `alias` a NULL of its type
    (`types`, by lower-case name); one whose type the analysis cannot tell is refused."""

    def replace(node: exp.Expr) -> exp.Expr:
        if not _of(node, alias):
            return node
        typed = types.get(node.name.lower())
        if typed is None:
            raise refuse(
                f"column {node.name} of {NULL_SIDE.format(side)}, computed with or tested outside ON, of a type "
                "the analysis cannot tell",
                node,
                f"cast {node.name} to its type in a branch of the UNION ALL (CAST(... AS <type>))",
            )
        return exp.Cast(this=exp.Null(), to=typed.copy())

    return expression.copy().transform(replace)


def _padded_output(output: exp.Expr, alias: str, types: Mapping[str, exp.DataType], side: str) -> exp.Expr:
    """An output of the query in a padded row: a plain column of the union is a NULL (typed where
    known; the set operation casts it to the model's type), any other reads the union's as NULL."""
    column = output.unalias()
    if _of(column, alias):
        typed = types.get(column.name.lower())
        value = exp.Cast(this=exp.Null(), to=typed.copy()) if typed is not None else exp.Null()
        return value.as_(exp.to_identifier(output.alias_or_name, quoted=True))
    return _as_null(output, alias, types, side)
