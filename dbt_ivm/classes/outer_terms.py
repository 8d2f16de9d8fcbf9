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

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt_ivm.analyze.join_tree import children, leaves
from dbt_ivm.classes.flips import flip_keys
from dbt_ivm.classes.jointree import node_keys, own_ranges
from dbt_ivm.classes.keys import key_equalities
from dbt_ivm.classes.relations import TermInput, snapshot_relation, union_all
from dbt_ivm.classes.rules import Stage
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
from dbt_ivm.render import col, conjuncts, func, ident, lit
from dbt_ivm.verbatim import DIALECT


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


def counted_on(plan: ViewPlan, node: OuterJoin, index: int) -> tuple[list[tuple[str, exp.Expr]], list[exp.Expr]] | None:
    """ON of `node` split for the counted compensation of a change to occurrence `index`, a side
    of it whose matches the other side's padded rows depend on: (its columns ON equates with a
    column of the other side, each with that column), and ON's conjuncts over `index` alone.
    None when ON has no such equality, or a conjunct other than those equalities reads both
    sides (or a column of no occurrence on them).

    A row x of the other side then matches exactly the rows c of `index` with the same key values
    for which the one-sided conjuncts hold (those over x alone hold for every x a change row
    matched), so x's matches after the change are its matches before it plus the change's own."""
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
    for conjunct in conjuncts(node.on):
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


class _Term:
    """The relations of one telescoping term: occurrence `changed` moves from `before` to `after`."""

    def __init__(
        self,
        plan: ViewPlan,
        term: TermInput,
        rids: bool,
        flip: bool = False,
        stage: Stage | None = None,
        narrow: Mapping[str, Sequence[exp.Expr]] | None = None,
    ):
        self.plan, self.changed, self.rids, self.flip, self.stage = plan, term.changed, rids, flip, stage
        self.narrow = narrow or {}  # alias -> filters (`outer_join_keys`), each for one join (`_narrowed`)
        self.versions, self.after, self.change = term.before, term.after, term.change

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


def outer_term(
    plan: ViewPlan,
    query: exp.Select,
    term: TermInput,
    rids: bool = True,
    flip: bool = False,
    stage: Stage | None = None,
    narrow: Mapping[str, Sequence[exp.Expr]] | None = None,
) -> exp.Select:
    """One telescoping term (`changes.delta_terms`) of a join tree with outer joins: `query`'s
    projections and WHERE over the term's change of the whole tree (struct columns), with
    `__ivm_d`. `flip`: the change takes the unique-key flip (see `flips.flip_keys`); `stage`
    caches a query and names the cached table (see `_Term._once`); `narrow`: the term's filters
    by alias (`outer_join_keys`)."""
    delta = _Term(plan, term, rids, flip, stage, narrow).delta(plan.tree)
    select = query.copy()
    select.set("joins", None)
    select = select.from_(_sub(delta, "v"), copy=False)
    return select.select(col(DELTA_COLUMN), copy=False)
