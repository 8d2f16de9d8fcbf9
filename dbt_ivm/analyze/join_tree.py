"""The join tree: the FROM clause as a tree of inner groups and outer joins over the relations
in written order, each outer join marked null-intolerant or not, each relation with its side as
seen from the root (Nica's PSNS annotation); and the rewrite of the outer joins whose padded rows
a predicate rejects into inner joins."""

from __future__ import annotations

from sqlglot import exp

from dbt_ivm.analyze.nulls import null_intolerant, rejects
from dbt_ivm.analyze.parsing import Schema, refuse, schema_key, snippet, table_name
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import InnerGroup, JoinKind, JoinNode, Leaf, OuterJoin, Side, Source


def children(node: InnerGroup | OuterJoin) -> tuple[JoinNode, ...]:
    return node.children if isinstance(node, InnerGroup) else (node.preserved, node.null_supplied)


def leaves(node: JoinNode) -> tuple[int, ...]:
    """The source occurrences under `node`, in occurrence order."""
    if isinstance(node, Leaf):
        return (node.source,)
    return tuple(sorted(i for c in children(node) for i in leaves(c)))


def annotate(node: JoinNode, side: Side = Side.PRESERVED) -> dict[int, Side]:
    """Nica's PSNS annotation: each relation's side as seen from the view's root."""
    if isinstance(node, Leaf):
        return {node.source: side}
    out: dict[int, Side] = {}
    if isinstance(node, InnerGroup):
        for child in node.children:
            out.update(annotate(child, side))
        return out
    if node.kind is JoinKind.FULL:
        both = Side.BOTH if side is Side.PRESERVED else side
        out.update(annotate(node.preserved, both))
        out.update(annotate(node.null_supplied, both))
        return out
    out.update(annotate(node.preserved, side))
    out.update(annotate(node.null_supplied, Side.NULL_SUPPLIED if side is Side.PRESERVED else side))
    return out


def parenthesized(rel: exp.Expr) -> tuple[exp.Expr, list[exp.Join]] | None:
    """A parenthesized join `(a JOIN b ON …)`: its first operand and its joins; else None.

    sqlglot hangs a group's joins on its first operand (a table, or a group itself), which is
    read as an operand without them.
    """
    if isinstance(rel, exp.Subquery) and not rel.alias and isinstance(rel.this, (exp.Table, exp.Subquery)):
        joins = rel.this.args.get("joins")
        if joins:
            return rel.this, list(joins)
    return None


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
        group = parenthesized(rel)
        if group is not None:
            visit(group[0], group[1], first=True)
        elif (
            not isinstance(rel, exp.Table)
            or (rel.args.get("joins") and not first)
            or not isinstance(rel.this, exp.Identifier)
        ):
            raise refuse(
                f"relation {snippet(rel)}",
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
        group = parenthesized(rel)
        return joined(*group) if group is not None else Leaf(next(counter))

    def joined(first: exp.Expr, joins: list[exp.Join]) -> JoinNode:
        node = operand(first)
        for join in joins:
            on = join.args.get("on")
            if join.args.get("using"):
                raise refuse("JOIN ... USING that could not be rewritten", join, "write the condition with ON")
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
                raise refuse(f"{side} JOIN", join, "use INNER, LEFT, RIGHT or FULL joins")
            found[id(node)] = join
        return node

    return joined(*_from(select))


def join_tree(select: exp.Select, schema: Schema) -> tuple[tuple[Source, ...], JoinNode]:
    relations, _ = _relations(select)
    aliases = [rel.alias_or_name for rel in relations]
    used = _used_columns(select)
    lowered = {schema_key(k): v for k, v in schema.items()}
    sources = []
    for i, rel in enumerate(relations):
        name = table_name(rel)
        cols = {c.lower(): (c, t) for c, t in lowered[name.key].items()}
        used_names = used.get(aliases[i], set())
        columns = tuple((cols[c][0], cols[c][1]) for c in cols if c in used_names)
        sources.append(Source(index=i, alias=aliases[i], table=name, columns=columns))
    node = _with_null_intolerance(_build_tree(select), aliases)
    sides = annotate(node)
    sources = [Source(s.index, s.alias, s.table, s.columns, sides.get(s.index, Side.PRESERVED)) for s in sources]
    return tuple(sources), node


def _with_null_intolerance(node: JoinNode, aliases: list[str]) -> JoinNode:
    """Set OuterJoin.null_intolerant: the ON predicate rejects an all-NULL null-supplied row."""
    if isinstance(node, Leaf):
        return node
    if isinstance(node, InnerGroup):
        return InnerGroup(tuple(_with_null_intolerance(c, aliases) for c in node.children), node.predicates)
    padded = {aliases[i] for i in leaves(node.null_supplied)}
    if node.kind is JoinKind.FULL:
        padded_too = {aliases[i] for i in leaves(node.preserved)}
        intolerant = null_intolerant(node.on, padded) and null_intolerant(node.on, padded_too)
    else:
        intolerant = null_intolerant(node.on, padded)
    return OuterJoin(
        node.kind,
        _with_null_intolerance(node.preserved, aliases),
        _with_null_intolerance(node.null_supplied, aliases),
        node.on,
        intolerant,
    )


def _require_on(on: exp.Expr | None, join: exp.Join) -> exp.Expr:
    if on is None:
        raise refuse("an outer join without ON", join, "give the join condition with ON")
    return on


def _add_inner(node: JoinNode, right: JoinNode, on: exp.Expr | None) -> JoinNode:
    """`node JOIN right ON on`, inner groups flattened (inner joins associate)."""
    preds = (on,) if on is not None else ()
    left_children, left_preds = (node.children, node.predicates) if isinstance(node, InnerGroup) else ((node,), ())
    if isinstance(right, InnerGroup):
        return InnerGroup((*left_children, *right.children), left_preds + right.predicates + preds)
    return InnerGroup((*left_children, right), left_preds + preds)


def simplify_outer_joins(select: exp.Select) -> exp.Select:
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
    return frozenset(i for i, a in enumerate(aliases) if rejects(pred, {a}))


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
        if rejected.intersection(leaves(node.null_supplied)):
            return [(join, "")]
        return [
            *_outer_to_inner(node.preserved, rejected, aliases, owners),
            *_outer_to_inner(node.null_supplied, _rejected(node.on, aliases), aliases, owners),
        ]
    left_gone = bool(rejected.intersection(leaves(node.preserved)))  # rows padding the left operand are filtered
    right_gone = bool(rejected.intersection(leaves(node.null_supplied)))
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


def _used_columns(select: exp.Select) -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for col in select.find_all(exp.Column):
        if col.table:
            used.setdefault(col.table, set()).add(col.name.lower())
    return used
