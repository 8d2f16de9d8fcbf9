"""The join tree at refresh time: whether it has an outer join (`has_outer_join`), the joins
above an occurrence (`joins_above`), and the join keys each join gives a term's narrowing over
outer joins (`outer_join_keys`). The occurrences under a node (`leaves`) and a join's children
come from `analyze.join_tree` (one copy).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from sqlglot import exp

from dbt_ivm.analyze.join_tree import children, leaves
from dbt_ivm.classes.keys import key_equalities
from dbt_ivm.ir import InnerGroup, JoinKind, JoinNode, Leaf, OuterJoin, Source, ViewPlan


def has_outer_join(node: JoinNode) -> bool:
    if isinstance(node, Leaf):
        return False
    if isinstance(node, InnerGroup):
        return any(has_outer_join(c) for c in node.children)
    return True


def joins_above(node: JoinNode, index: int) -> Iterator[InnerGroup | OuterJoin]:
    """The joins above occurrence `index`, the root first."""
    if not isinstance(node, Leaf):
        yield node
        yield from joins_above(next(c for c in children(node) if index in leaves(c)), index)


def outer_parent(node: JoinNode, index: int) -> OuterJoin | None:
    """The outer join whose direct child is Leaf(`index`), when its other side is preserved."""
    if isinstance(node, Leaf):
        return None
    if isinstance(node, OuterJoin):
        for child in (node.preserved, node.null_supplied):
            if child == Leaf(index) and (child is node.null_supplied or node.kind is JoinKind.FULL):
                return node
    return next((found for c in children(node) if (found := outer_parent(c, index)) is not None), None)


def node_keys(plan: ViewPlan, node: InnerGroup | OuterJoin, index: int) -> list[tuple[str, Source, str, str]]:
    """(a column of occurrence `index`, an occurrence on another side of `node`, its column, their
    type) of each key equality (`keys.key_equalities`) of `node`'s condition between the two."""
    mine = leaves(next(c for c in children(node) if index in leaves(c)))
    conditions = node.predicates if isinstance(node, InnerGroup) else (node.on,)
    out = []
    for condition in conditions:
        for a, b, type_ in key_equalities(plan, condition):
            for (source, column), (other, other_column) in ((a, b), (b, a)):
                if source.index == index and other.index not in mine:
                    out.append((column, other, other_column, type_))
    return out


def outer_join_keys(plan: ViewPlan) -> dict[int, list[tuple[str, str, str, str]]]:
    """`keys.JoinKeys` over outer joins: per occurrence i, for each key equality of a join above
    it between i's column x and a column y of an occurrence b on the join's other side
    (`node_keys`), (x, b, y, type), and (x, i, x, type).

    At that join a change row of i meets b's rows only where y equals its x (a change row whose i
    is padded, NULL, equals nothing), so its term reads b there only within the change set's
    range of x (`keys.key_ranges`). So does the compensation's read of i's side before and after
    the change: the b rows a change row matched (X) have y in that range, and so has every row of
    i that matches them. `_Term._narrowed` applies each filter at its join only: elsewhere the
    same occurrences are read whole (a compensation higher up needs all of them).
    """
    keys: dict[int, list[tuple[str, str, str, str]]] = {}
    for source in plan.sources:
        for node in joins_above(plan.tree, source.index):
            for column, other, other_column, type_ in node_keys(plan, node, source.index):
                entries = keys.setdefault(source.index, [])
                for entry in ((column, other.alias, other_column, type_), (column, source.alias, column, type_)):
                    if entry not in entries:
                        entries.append(entry)
    return keys


def own_ranges(narrow: Mapping[str, Sequence[exp.Expr]], alias: str, columns: Collection[str]) -> list[exp.Expr]:
    """The changed occurrence `alias`'s filters among one change's `narrow`: the change set's
    pieces of its own columns in `columns` (`outer_join_keys`; each filter one column's BETWEEN,
    or its pieces' BETWEENs OR-ed, `keys.key_ranges`)."""
    return [f for f in narrow.get(alias, ()) if (b := f.find(exp.Between)) is not None and b.this.name in columns]
