"""The one place that tells inner change terms from outer ones (`terms_for`).

A view's join tree without outer joins has bilinear terms: the model's query over the changed
occurrence's change and the other occurrences' snapshots (`InnerTerms`). One with an outer join
has terms that climb the tree with NS-compensation of the padded rows (`OuterTerms`, see
`outer_terms`), its join keys are those of each join on an occurrence's way to the root, and a
change may take the unique-key flip (`flips`). Every class reads its terms, join keys, flips and
the steps `explain` prints from the object `terms_for` gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp

from dbt_ivm.classes.flips import decide_flips
from dbt_ivm.classes.jointree import has_outer_join, outer_join_keys
from dbt_ivm.classes.keys import JoinKeys, inner_join_keys
from dbt_ivm.classes.outer_terms import climb_steps, outer_term
from dbt_ivm.classes.relations import Narrowing, TermInput, snapshot_relation, substitute
from dbt_ivm.classes.rules import Refresh, Stage
from dbt_ivm.ir import DELTA_COLUMN, ViewPlan
from dbt_ivm.render import col, ident


class Terms(Protocol):
    """How a view's change terms are built, for its join tree."""

    def term(
        self,
        query: exp.Select,
        term: TermInput,
        rids: bool,
        flip: bool,
        stage: Stage | None,
        narrow: Mapping[str, Sequence[exp.Expr]],
    ) -> exp.Select:
        """One telescoping term: `query` over `term`'s change, selecting the multiplicity `__ivm_d`.
        `rids`: snapshots carry their row identities; `narrow`: filters on the other occurrences
        by alias; `flip`, `stage`: see `outer_terms.outer_term`."""
        ...

    def join_keys(self) -> JoinKeys:
        """Per occurrence, the join keys a term's other occurrences are narrowed by (`keys`)."""
        ...

    def flips(
        self, refresh: Refresh, narrow: Narrowing, answered: frozenset[int] | None = None
    ) -> tuple[frozenset[int], str]:
        """The occurrences that take the unique-key flip in this refresh, and a log detail
        (`answered`: `flips.repeats_check`'s answer, where read already)."""
        ...

    def climb_steps(self, index: int) -> list[str]:
        """What a change to occurrence `index` does at each join above it, for `explain`."""
        ...


@dataclass(frozen=True)
class InnerTerms:
    plan: ViewPlan

    def term(
        self,
        query: exp.Select,
        term: TermInput,
        rids: bool,
        flip: bool,
        stage: Stage | None,
        narrow: Mapping[str, Sequence[exp.Expr]],
    ) -> exp.Select:
        changed = term.changed
        rels: dict[str, exp.Expr] = {}
        for other in self.plan.sources:
            if other.index == changed.index:
                rels[other.alias] = term.change
            else:
                where = narrow.get(other.alias, ())
                rels[other.alias] = snapshot_relation(other, term.before[other.index], with_rid=rids, where=where)
        select = substitute(query, rels)
        return select.select(col(DELTA_COLUMN, changed.alias).as_(ident(DELTA_COLUMN)), copy=False)

    def join_keys(self) -> JoinKeys:
        return inner_join_keys(self.plan)

    def flips(
        self, refresh: Refresh, narrow: Narrowing, answered: frozenset[int] | None = None
    ) -> tuple[frozenset[int], str]:
        return frozenset(), ""  # no outer join: no padded row to flip

    def climb_steps(self, index: int) -> list[str]:
        return []  # the change is joined with the other occurrences as in the view


@dataclass(frozen=True)
class OuterTerms:
    plan: ViewPlan

    def term(
        self,
        query: exp.Select,
        term: TermInput,
        rids: bool,
        flip: bool,
        stage: Stage | None,
        narrow: Mapping[str, Sequence[exp.Expr]],
    ) -> exp.Select:
        return outer_term(self.plan, query, term, rids, flip, stage, narrow)

    def join_keys(self) -> JoinKeys:
        return outer_join_keys(self.plan)

    def flips(
        self, refresh: Refresh, narrow: Narrowing, answered: frozenset[int] | None = None
    ) -> tuple[frozenset[int], str]:
        return decide_flips(refresh, narrow, answered)

    def climb_steps(self, index: int) -> list[str]:
        return climb_steps(self.plan, self.plan.tree, index)


def terms_for(plan: ViewPlan) -> Terms:
    """The view's terms: outer ones when its join tree has an outer join, else inner ones."""
    return OuterTerms(plan) if has_outer_join(plan.tree) else InnerTerms(plan)
