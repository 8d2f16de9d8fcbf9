"""The change terms of a view over outer joins, at any nesting: Nica's NS-compensation.

Each subtree of the join tree is evaluated as a relation with one struct column per source
alias (the source's used columns and its row identity `__ivm_rid`), so the model's own
predicates and expressions (`o.o_cust = c.c_id`) read it unchanged: Spark resolves `o.o_cust`
as the field `o_cust` of the column `o`. A source padded by an outer join has a NULL struct, so
its columns and its identity read NULL, as in the model's rows.

The terms telescope over the changed source occurrences as for inner joins
(`changes.delta_terms`); a term changes one occurrence, so its change climbs the tree from that
leaf, at each node by the rule of the side it arrives on (P the other side, C the side that
changed, from C to C' = C + dC; `on` the node's condition, any deterministic predicate):

- inner group: dC joined with the other members under the group's predicates (bilinear);
- the change arrives on a preserved side (LEFT's left, either side of FULL): dC LEFT JOIN P
  (a preserved row's rows depend on it and P only); else dC JOIN P;
- P is preserved (the change arrives on a null-supplied side, or on either side of FULL): the
  NULL-extended rows of the P rows a change row matches, X = P LEFT SEMI JOIN dC, are
  compensated: + those of X with no match in C', - those of X with no match in C. A padded row
  appears when a P row's last match goes and disappears when its first match comes, at every
  level of nesting, for duplicates as for unique keys. Where the change arrives on one source
  whose ON columns are unique for the change before and after it (checked each refresh,
  `decide_flips`), the compensation is the matched rows again, padded, with the opposite sign:
  Oracle's unique-key flip, which reads neither C nor X. Where C is one source and ON is key
  equalities plus conditions on one side (`counted_on`), X's matches are counted per key, in C
  before the change plus the change's own (`_Term._counted`): C is read once, not at both versions.

A join's change that a compensation reads twice is cached once per refresh (`_Term._once`).

Every rule holds for any ON predicate, NULL-tolerant or not, because each is SQL's own
definition of the join (matched rows, plus padded rows of the unmatched) applied to the slice
that can change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from sqlglot import exp

from dbt_ivm.analyze.join_tree import children, leaves
from dbt_ivm.classes import Refresh, Stage
from dbt_ivm.classes.changes import (
    Narrowing,
    changes_relation,
    copies,
    snapshot_relation,
    term_version,
    union_all,
)
from dbt_ivm.ir import (
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    RID_COLUMN,
    InnerGroup,
    JoinKind,
    JoinNode,
    Leaf,
    OuterJoin,
    Source,
    ViewPlan,
)
from dbt_ivm.render import col, func, ident, lit, sql
from dbt_ivm.verbatim import DIALECT


def has_outer_join(node: JoinNode) -> bool:
    if isinstance(node, Leaf):
        return False
    if isinstance(node, InnerGroup):
        return any(has_outer_join(c) for c in node.children)
    return True


def _path(node: JoinNode, index: int) -> Iterator[InnerGroup | OuterJoin]:
    """The joins above occurrence `index`, the root first."""
    if not isinstance(node, Leaf):
        yield node
        yield from _path(next(c for c in children(node) if index in leaves(c)), index)


def node_keys(plan: ViewPlan, node: InnerGroup | OuterJoin, index: int) -> list[tuple[str, Source, str, str]]:
    """(a column of occurrence `index`, an occurrence on another side of `node`, its column, their
    type) of each key equality (`joins.key_equalities`) of `node`'s condition between the two."""
    from dbt_ivm.classes.joins import key_equalities

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
    """`joins.join_keys` over outer joins: per occurrence i, for each key equality of a join above
    it between i's column x and a column y of an occurrence b on the join's other side
    (`node_keys`), (x, b, y, type), and (x, i, x, type).

    At that join a change row of i meets b's rows only where y equals its x (a change row whose i
    is padded, NULL, equals nothing), so its term reads b there only within the change set's
    range of x (`joins.key_ranges`). So does the compensation's read of i's side before and after
    the change: the b rows a change row matched (X) have y in that range, and so has every row of
    i that matches them. `_Term._narrowed` applies each filter at its join only: elsewhere the
    same occurrences are read whole (a compensation higher up needs all of them).
    """
    keys: dict[int, list[tuple[str, str, str, str]]] = {}
    for source in plan.sources:
        for node in _path(plan.tree, source.index):
            for column, other, other_column, type_ in node_keys(plan, node, source.index):
                entries = keys.setdefault(source.index, [])
                for entry in ((column, other.alias, other_column, type_), (column, source.alias, column, type_)):
                    if entry not in entries:
                        entries.append(entry)
    return keys


def _with_rid(source: Source, rids: bool) -> bool:
    """A source the view reads no column of keeps its identity (a constant) as its one field."""
    return rids or not source.columns


def _fields(source: Source, rids: bool) -> list[str]:
    return [name for name, _ in source.columns] + ([RID_COLUMN] if _with_rid(source, rids) else [])


def _struct(source: Source, rids: bool) -> exp.Expr:
    fields = [col(name, source.alias).as_(ident(name)) for name in _fields(source, rids)]
    return exp.Struct(expressions=fields).as_(ident(source.alias))


def _columns(plan: ViewPlan, node: JoinNode, delta: bool) -> list[exp.Expr]:
    """A node relation's columns: one struct per alias in occurrence order (and the multiplicity)."""
    names: list[exp.Expr] = [col(plan.sources[i].alias) for i in leaves(node)]
    return [*names, col(DELTA_COLUMN)] if delta else names


def _sub(select: exp.Select, name: str) -> exp.Expr:
    return select.subquery(ident(f"{HIDDEN_PREFIX}{name}"))


def climb_steps(plan: ViewPlan, node: JoinNode, index: int) -> list[str]:
    """What a change to occurrence `index` does at each join above it, innermost first."""
    if isinstance(node, Leaf):
        return []
    child = next(c for c in children(node) if index in leaves(c))
    steps = climb_steps(plan, child, index)
    if isinstance(node, InnerGroup):
        preds = " AND ".join(p.sql(dialect=DIALECT) for p in node.predicates) or "TRUE"
        return [*steps, f"inner join on {preds}: change rows joined with the other members"]
    on = node.on.sql(dialect=DIALECT)
    other = node.null_supplied if child is node.preserved else node.preserved
    names = ", ".join(plan.sources[i].alias for i in leaves(other))
    full = node.kind is JoinKind.FULL
    if child is node.preserved or full:
        steps.append(f"{node.kind.value} join on {on}: change rows left-joined with {names} (unmatched: padded)")
    else:
        steps.append(f"{node.kind.value} join on {on}: change rows joined with {names}")
    if child is node.null_supplied or full:
        steps.append(
            f"  NS-compensation: the padded rows of the {names} rows a change row matches: deleted when "
            "their first match comes, re-created when their last match goes"
        )
        counted = counted_on(plan, node, index)
        if counted is not None:
            alias = plan.sources[index].alias
            equal, own = counted
            matches = [exp.EQ(this=col(c, alias), expression=y) for c, y in equal] + own
            where = " AND ".join(m.sql(dialect=DIALECT) for m in matches)
            steps.append(
                f"  counted: a row's matches after the change are the {alias} rows where {where} before it, "
                f"plus the change's own; {alias} read once, for the change's values"
            )
        keys = flip_keys(plan).get(index) if child == Leaf(index) else None
        if keys:
            alias = plan.sources[index].alias
            steps.append(
                f"  unique-key flip instead when the change's ({', '.join(keys)}) values are unique in {alias} "
                f"before and after it (checked each refresh): each matched row's padded row with the opposite "
                f"sign, {alias} not read"
            )
    return steps


def _outer_parent(node: JoinNode, index: int) -> OuterJoin | None:
    """The outer join whose direct child is Leaf(`index`), when its other side is preserved."""
    if isinstance(node, Leaf):
        return None
    if isinstance(node, OuterJoin):
        for child in (node.preserved, node.null_supplied):
            if child == Leaf(index) and (child is node.null_supplied or node.kind is JoinKind.FULL):
                return node
        children: tuple[JoinNode, ...] = (node.preserved, node.null_supplied)
    else:
        children = node.children
    return next((found for c in children if (found := _outer_parent(c, index)) is not None), None)


def flip_keys(plan: ViewPlan) -> dict[int, tuple[str, ...]]:
    """{occurrence: its columns ON equates with the other side}, for each source that is the
    null-supplied side (or a FULL side) of an outer join, whose other side is preserved.

    When a change's values of these columns are unique in the source before and after it, a
    preserved row matches at most one of its rows, so its padded row flips with the match: the
    unique-key algorithm (Oracle's), without reading the source for the compensation.

    Only equalities of plain columns of one type count (`joins.key_equalities`): uniqueness is
    judged on the stored values, and it is the values the join compares only where Spark casts
    neither side. `a.id = p.code` with `code` a STRING compares `'1'` and `'01'` as the same
    number: two rows with distinct stored codes both match account 1.
    """
    from dbt_ivm.classes.joins import key_equalities

    out: dict[int, tuple[str, ...]] = {}
    for source in plan.sources:
        node = _outer_parent(plan.tree, source.index)
        if node is None:
            continue
        keys: list[str] = []
        for (a, a_column), (b, b_column), _ in key_equalities(plan, node.on):
            for (mine, column), other in (((a, a_column), b), ((b, b_column), a)):
                if mine.index == source.index and other.index != source.index and column not in keys:
                    keys.append(column)
        if keys:
            out[source.index] = tuple(keys)
    return out


def own_ranges(narrow: Mapping[str, Sequence[exp.Expr]], alias: str, columns: Collection[str]) -> list[exp.Expr]:
    """The changed occurrence `alias`'s filters among one change's `narrow`: the change set's
    pieces of its own columns in `columns` (`outer_join_keys`; each filter one column's BETWEEN,
    or its pieces' BETWEENs OR-ed, `joins.key_ranges`)."""
    return [f for f in narrow.get(alias, ()) if (b := f.find(exp.Between)) is not None and b.this.name in columns]


def counted_on(plan: ViewPlan, node: OuterJoin, index: int) -> tuple[list[tuple[str, exp.Expr]], list[exp.Expr]] | None:
    """ON of `node` split for the counted compensation of a change to occurrence `index`, a side
    of it whose matches the other side's padded rows depend on: (its columns ON equates with a
    column of the other side, each with that column), and ON's conjuncts over `index` alone.
    None when ON has no such equality, or a conjunct other than those equalities reads both
    sides (or a column of no occurrence on them).

    A row x of the other side then matches exactly the rows c of `index` with the same key values
    for which the one-sided conjuncts hold (those over x alone hold for every x a change row
    matched), so x's matches after the change are its matches before it plus the change's own."""
    from dbt_ivm.classes.joins import key_equalities

    compensates = node.kind is JoinKind.FULL or index in leaves(node.null_supplied)
    if node.on is None or not compensates:
        return None
    alias = plan.sources[index].alias
    mine_side = node.preserved if index in leaves(node.preserved) else node.null_supplied
    other_side = node.null_supplied if mine_side is node.preserved else node.preserved
    if mine_side != Leaf(index):
        return None
    others = {plan.sources[i].alias for i in leaves(other_side)}
    keys: list[tuple[str, exp.Expr]] = []
    own: list[exp.Expr] = []
    for conjunct in node.on.flatten() if isinstance(node.on, exp.And) else [node.on]:
        conjunct = conjunct.unnest()
        equal = [
            (mine[1], col(theirs[1], theirs[0].alias))
            for a, b, _ in key_equalities(plan, conjunct)
            for mine, theirs in ((a, b), (b, a))
            if mine[0].index == index and theirs[0].alias in others
        ]
        tables = {c.table for c in conjunct.find_all(exp.Column)}
        if equal:
            keys.append(equal[0])
        elif tables <= {alias} and tables:
            own.append(conjunct.copy())
        elif not tables <= others:
            return None
    return (keys, own) if keys else None


def _occurrences_with_rows(parts: Sequence[tuple[int, exp.Select]]) -> exp.Select:
    """Rows (i), one for each occurrence i whose query returns a row (each stops at its first)."""
    found = [exp.select(lit(i).as_("i")).from_(q.subquery(ident(f"{HIDDEN_PREFIX}k"))).limit(1) for i, q in parts]
    return exp.select(col("i")).distinct().from_(union_all(found).subquery(ident(f"{HIDDEN_PREFIX}dups")))


def duplicate_keys(
    plan: ViewPlan,
    keys: Mapping[int, tuple[str, ...]],
    versions: list[tuple[int, int, str]],
    narrow: Narrowing | None = None,
) -> exp.Select:
    """Occurrences whose change rows' key values (`staged`, non-NULL) repeat in the source at a
    version: rows (i) for each (occurrence i, version, staged change set) where some do. The
    source is read only within the change set's ranges of those keys that `narrow` has (its
    filters on the occurrence itself, `outer_join_keys`): a row that repeats a change row's key
    values lies in them."""
    parts = []
    for index, version, staged in versions:
        source = plan.sources[index]
        change = f"{HIDDEN_PREFIX}s"
        match = exp.and_(*[exp.EQ(this=col(k, source.alias), expression=col(k, change)) for k in keys[index]])
        where = own_ranges((narrow or {}).get(index, {}), source.alias, keys[index])
        dups = (
            exp.select(*[col(k, source.alias) for k in keys[index]])
            .from_(snapshot_relation(source, version, with_rid=False, where=where))
            .join(
                exp.Table(this=ident(staged), alias=exp.TableAlias(this=ident(change))), on=match, join_type="left semi"
            )
            .group_by(*[col(k, source.alias) for k in keys[index]])
            .having(exp.GT(this=exp.Count(this=exp.Star()), expression=lit(1)))
        )
        parts.append((index, dups))
    return _occurrences_with_rows(parts)


def repeated_in_change(plan: ViewPlan, keys: Mapping[int, tuple[str, ...]], staged: Mapping[int, str]) -> exp.Select:
    """Occurrences whose change itself repeats key values (`staged`, non-NULL): rows (i) for each
    i where the rows it inserts, or those it deletes, hold some key values more than once. Those
    values then repeat in the source after the change, or before it: the change set alone shows
    it, without reading the source (new orders with several lines each)."""
    parts = []
    for index, staged_rows in sorted(staged.items()):
        key = [col(k) for k in keys[index]]
        repeats = (
            exp.select(*key)
            .from_(exp.Table(this=ident(staged_rows)))
            .where(exp.and_(*[exp.not_(exp.Is(this=k.copy(), expression=exp.Null())) for k in key]))
            .group_by(*[k.copy() for k in key])
            .having(exp.or_(*[exp.GT(this=exp.Sum(this=c), expression=lit(1)) for c in copies()]))
        )
        parts.append((index, repeats))
    return _occurrences_with_rows(parts)


def decide_flips(refresh: Refresh, narrow: Narrowing) -> tuple[frozenset[int], str]:
    """The changed occurrences that take the unique-key flip in this refresh, and a log detail:
    those whose change rows' key values are unique in the source at both versions. The change
    sets are asked first (`repeated_in_change`); the sources, narrowed by `narrow`, only for the
    occurrences whose change repeats no key values (`duplicate_keys`)."""
    plan = refresh.plan
    keys = flip_keys(plan)
    candidates = [i for i in keys if i in refresh.staged]
    if not candidates:
        return frozenset(), ""
    check = repeated_in_change(plan, keys, {i: refresh.staged[i] for i in candidates})
    repeated = {int(row["i"]) for row in refresh.query(sql(check))}
    versions = [
        (i, version, refresh.staged[i])
        for i in candidates
        if i not in repeated
        for version in (refresh.old[plan.sources[i].table.key], refresh.new[plan.sources[i].table.key])
    ]
    if versions:
        repeated |= {int(row["i"]) for row in refresh.query(sql(duplicate_keys(plan, keys, versions, narrow)))}
    flips = frozenset(i for i in candidates if i not in repeated)
    said = [f"{plan.sources[i].alias} ({', '.join(keys[i])}) unique: padded rows flipped" for i in sorted(flips)]
    said += [f"{plan.sources[i].alias} ({', '.join(keys[i])}) repeats: general compensation" for i in sorted(repeated)]
    return flips, "; ".join(said)


class _Term:
    """The relations of one telescoping term: occurrence `changed` moves from `before` to `after`."""

    def __init__(
        self,
        plan: ViewPlan,
        changed: Source,
        old: Mapping[str, int],
        new: Mapping[str, int],
        staged: str | None,
        rids: bool,
        signed: bool,
        flip: bool = False,
        stage: Stage | None = None,
        narrow: Mapping[str, Sequence[exp.Expr]] | None = None,
    ):
        self.plan, self.changed, self.rids, self.flip, self.stage = plan, changed, rids, flip, stage
        self.narrow = narrow or {}  # alias -> filters (`outer_join_keys`), each for one join (`_narrowed`)
        key = changed.table.key
        self.versions = {
            s.index: term_version(s.index, changed.index, old[s.table.key], new[s.table.key]) for s in plan.sources
        }
        self.after = {**self.versions, changed.index: new[key]}
        self.change = changes_relation(changed, old[key] + 1, new[key], staged, signed)

    def state(
        self, node: JoinNode, versions: Mapping[int, int], narrow: Mapping[int, Sequence[exp.Expr]] | None = None
    ) -> exp.Select:
        """`node`'s rows with its sources at `versions` (struct columns), each occurrence read
        only where its filters of `narrow` hold (`_narrowed`)."""
        plan, narrow = self.plan, narrow or {}
        if isinstance(node, Leaf):
            source = plan.sources[node.source]
            where = narrow.get(source.index, ())
            relation = snapshot_relation(source, versions[source.index], _with_rid(source, self.rids), where)
            return exp.select(_struct(source, self.rids)).from_(relation)
        if isinstance(node, InnerGroup):
            children = [self.state(c, versions, narrow) for c in node.children]
            return self._inner(node, children, delta=False)
        left, right = self.state(node.preserved, versions, narrow), self.state(node.null_supplied, versions, narrow)
        side = "full" if node.kind is JoinKind.FULL else "left"
        return (
            exp.select(*_columns(plan, node, False))
            .from_(_sub(left, "l"))
            .join(_sub(right, "r"), on=node.on.copy(), join_type=side)
        )

    def _inner(self, node: InnerGroup, children: list[exp.Select], delta: bool) -> exp.Select:
        select = exp.select(*_columns(self.plan, node, delta)).from_(_sub(children[0], "j0"))
        for k, child in enumerate(children[1:], start=1):
            select = select.join(_sub(child, f"j{k}"), join_type="cross")
        if node.predicates:
            select = select.where(exp.and_(*[p.copy() for p in node.predicates]))
        return select

    def _narrowed(self, node: InnerGroup | OuterJoin, side: JoinNode) -> dict[int, Sequence[exp.Expr]]:
        """The filters of `self.narrow` that hold for `side` where this term's change meets it at
        `node`: another side's occurrences by the change's ranges of the keys they equal there
        (each occurrence meets the change at one join only); the changed side's own occurrence by
        its columns `node` equates, for the compensation's reads of that side."""
        i = self.changed
        if i.index not in leaves(side):
            aliases = [(b, self.plan.sources[b].alias) for b in leaves(side)]
            return {b: self.narrow[alias] for b, alias in aliases if alias in self.narrow}
        columns = {column for column, *_ in node_keys(self.plan, node, i.index)}
        own = own_ranges(self.narrow, i.alias, columns)
        return {i.index: own} if own else {}

    def delta(self, node: JoinNode) -> exp.Select:
        """`node`'s change in this term: struct columns and the signed multiplicity `__ivm_d`."""
        plan = self.plan
        if isinstance(node, Leaf):
            return exp.select(_struct(self.changed, self.rids), col(DELTA_COLUMN)).from_(self.change.copy())
        if isinstance(node, InnerGroup):
            children = [
                self.delta(c)
                if self.changed.index in leaves(c)
                else self.state(c, self.versions, self._narrowed(node, c))
                for c in node.children
            ]
            return self._inner(node, children, delta=True)
        arrives_on_left = self.changed.index in leaves(node.preserved)
        changed, other = (
            (node.preserved, node.null_supplied) if arrives_on_left else (node.null_supplied, node.preserved)
        )
        full = node.kind is JoinKind.FULL
        kind = "left" if full or arrives_on_left else "inner"  # a change to a preserved side keeps its rows
        compensates = full or not arrives_on_left
        change = self._once(self.delta(changed)) if compensates and not isinstance(changed, Leaf) else None
        others = self.state(other, self.versions, self._narrowed(node, other))
        flows = (
            exp.select(*_columns(plan, node, True))
            .from_(change.copy() if change is not None else _sub(self.delta(changed), "c"))
            .join(_sub(others.copy(), "p"), on=node.on.copy(), join_type=kind)
        )
        if not compensates:
            return flows  # the other side is null-supplied: no padded row of it depends on the change
        if self.flip and changed == Leaf(self.changed.index):
            return self._flipped(node, flows, other)
        terms = union_all([flows, *self._compensation(node, changed, other, others, change)])
        return exp.select(*_columns(plan, node, True)).from_(terms.subquery(ident(f"{HIDDEN_PREFIX}u")))

    def _flipped(self, node: OuterJoin, flows: exp.Select, other: JoinNode) -> exp.Select:
        """The unique-key flip (`flip_keys`): each row the change matches, and with the opposite
        sign its preserved row's padded row, from the one join; the source itself is not read."""
        plan = self.plan
        flow = ident(f"{HIDDEN_PREFIX}flow")
        lateral = exp.Lateral(
            this=exp.Explode(this=exp.Array(expressions=[exp.true(), exp.false()])),
            view=True,
            alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[flow]),
        )
        alias = self.changed.alias
        padded = exp.If(this=exp.false(), true=col(alias), false=exp.Null())  # NULL of the struct's type
        columns = [
            exp.If(this=exp.column(flow), true=col(alias), false=padded).as_(ident(alias)) if c.name == alias else c
            for c in _columns(plan, node, False)
        ]
        d = exp.If(this=exp.column(flow), true=col(DELTA_COLUMN), false=exp.Neg(this=col(DELTA_COLUMN)))
        matched = exp.not_(
            exp.and_(*[exp.Is(this=col(plan.sources[i].alias), expression=exp.Null()) for i in leaves(other)])
        )
        select = exp.select(*columns, d.as_(ident(DELTA_COLUMN))).from_(_sub(flows, "m"))
        select.set("laterals", [lateral])
        return select.where(exp.or_(exp.column(flow), matched))

    def _once(self, change: exp.Select) -> exp.Expr:
        """A change read twice (by the matched rows and by the compensation), as a relation `c`:
        cached when the refresh can (`stage`), so each level is computed once and a statement
        stays linear in the nesting, not doubling with every compensating join."""
        if self.stage is None:
            return _sub(change, "c")
        return exp.Table(this=ident(self.stage(change)), alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}c")))

    def _compensation(
        self, node: OuterJoin, changed: JoinNode, other: JoinNode, others: exp.Select, change: exp.Expr | None = None
    ) -> list[exp.Select]:
        """The padded rows of the `other` (preserved) rows a change row matches (`others`: that
        side's state): + with no match after the change, - with no match before it."""
        plan = self.plan
        change = change if change is not None else _sub(self.delta(changed), "c")
        matched = (
            exp.select(*_columns(plan, other, False))
            .from_(_sub(others.copy(), "p"))
            .join(change.copy(), on=node.on.copy(), join_type="left semi")
        )
        narrow = self._narrowed(node, changed)
        counted = counted_on(plan, node, self.changed.index) if changed == Leaf(self.changed.index) else None
        if counted is not None:
            return [self._counted(node, matched, change, narrow, *counted)]
        padded = exp.and_(*[exp.Is(this=col(plan.sources[i].alias), expression=exp.Null()) for i in leaves(changed)])
        sides = []
        for versions, sign in ((self.after, 1), (self.versions, -1)):
            select = (
                exp.select(*_columns(plan, node, False), lit(sign).as_(ident(DELTA_COLUMN)))
                .from_(_sub(matched, "x"))
                .join(_sub(self.state(changed, versions, narrow), "c"), on=node.on.copy(), join_type="left")
                .where(padded.copy())
            )
            sides.append(select)
        return sides

    def _counted(
        self,
        node: OuterJoin,
        matched: exp.Select,
        change: exp.Expr,
        narrow: Mapping[int, Sequence[exp.Expr]],
        keys: list[tuple[str, exp.Expr]],
        own: list[exp.Expr],
    ) -> exp.Select:
        """The compensation of a change to a source C that is one side of `node`, when ON is key
        equalities and conditions on one side (`counted_on`): each row x of X (`matched`) has n
        matches in C before the change, C's rows with x's key values that meet the conditions,
        and n + dn after it, dn the change's own rows of those (with their multiplicity). Its
        padded row is +1 where n + dn = 0 and -1 where n = 0. C is read once, at its version
        before the change and only for the change's key values, where the general compensation
        joins X with all of C at both versions."""
        plan, alias = self.plan, self.changed.alias
        key = [f"{HIDDEN_PREFIX}k{j}" for j in range(len(keys))]
        mine = [col(column, alias) for column, _ in keys]

        def named() -> list[exp.Expr]:
            return [m.copy().as_(ident(k)) for m, k in zip(mine, key, strict=True)]

        def by_key(relation: exp.Expr, *aggregates: exp.Expr) -> exp.Select:
            """`relation`'s rows that meet the one-sided conditions, per key value."""
            select = exp.select(*named(), *aggregates).from_(relation).group_by(*[m.copy() for m in mine])
            return select.where(*[c.copy() for c in own]) if own else select

        def matching(columns: Sequence[exp.Expr], table: str) -> exp.Expr:
            return exp.and_(
                *[exp.EQ(this=c.copy(), expression=col(k, table)) for c, k in zip(columns, key, strict=True)]
            )

        state = self.state(Leaf(self.changed.index), self.versions, narrow)
        change_keys = exp.select(*named()).from_(change.copy())
        before = by_key(_sub(state, "c"), exp.Count(this=exp.Star()).as_(ident(f"{HIDDEN_PREFIX}n"))).join(
            _sub(change_keys, "ck"), on=matching(mine, f"{HIDDEN_PREFIX}ck"), join_type="left semi"
        )
        changed = by_key(
            change.copy(),
            exp.Sum(this=col(DELTA_COLUMN)).as_(ident(f"{HIDDEN_PREFIX}dn")),
            func("any_value", col(alias)).as_(ident(alias)),
        )
        n = exp.Coalesce(this=col(f"{HIDDEN_PREFIX}n", f"{HIDDEN_PREFIX}n"), expressions=[lit(0)])
        dn = exp.Coalesce(this=col(f"{HIDDEN_PREFIX}dn", f"{HIDDEN_PREFIX}dn"), expressions=[lit(0)])
        unmatched = [exp.EQ(this=count, expression=lit(0)) for count in (exp.Add(this=n.copy(), expression=dn), n)]
        sign = exp.Sub(
            this=exp.If(this=unmatched[0], true=lit(1), false=lit(0)),
            expression=exp.If(this=unmatched[1], true=lit(1), false=lit(0)),
        )
        padded = exp.If(this=exp.false(), true=col(alias, f"{HIDDEN_PREFIX}dn"), false=exp.Null())  # NULL of its type
        columns = [padded.as_(ident(alias)) if c.name == alias else c for c in _columns(plan, node, False)]
        others = [y for _, y in keys]
        rows = (
            exp.select(*columns, sign.as_(ident(DELTA_COLUMN)))
            .from_(_sub(matched, "x"))
            .join(_sub(before, "n"), on=matching(others, f"{HIDDEN_PREFIX}n"), join_type="left")
            .join(_sub(changed, "dn"), on=matching(others, f"{HIDDEN_PREFIX}dn"), join_type="left")
        )
        return exp.select("*").from_(_sub(rows, "s")).where(exp.NEQ(this=col(DELTA_COLUMN), expression=lit(0)))


def outer_delta_terms(
    plan: ViewPlan,
    query: exp.Select,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    rids: bool = True,
    signed: bool = False,
    flips: frozenset[int] = frozenset(),
    stage: Stage | None = None,
    narrow: Narrowing | None = None,
) -> Iterator[tuple[Source, exp.Select]]:
    """`changes.delta_terms` for a join tree with outer joins: each term is `query`'s projections
    and WHERE over the term's change of the whole tree (struct columns), with `__ivm_d`.
    `flips`: occurrences whose change takes the unique-key flip (see `flip_keys`); `stage`
    caches a query and names the cached table (see `_Term._once`); `narrow`: per changed
    occurrence, its term's filters by alias (`outer_join_keys`)."""
    for changed in plan.sources:
        key = changed.table.key
        if new[key] == old[key]:
            continue
        staged_rows = (staged or {}).get(changed.index)
        filters = (narrow or {}).get(changed.index)
        term = _Term(plan, changed, old, new, staged_rows, rids, signed, changed.index in flips, stage, filters)
        select = query.copy()
        select.set("joins", None)
        select = select.from_(_sub(term.delta(plan.tree), "v"), copy=False)
        yield changed, select.select(col(DELTA_COLUMN), copy=False)
