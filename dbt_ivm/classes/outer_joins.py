"""Views over outer joins (LEFT, RIGHT, FULL, nested, mixed with inner joins), without aggregation.

Stored as join views are (`joins`): the view's columns, each occurrence's row identity and a
multiplicity; a row padded by an outer join has NULL identities for its padded sources, matched
NULL-safely wherever stored rows are found by identity (the MERGE's key, the identity filter,
the append probe). The change set comes from `outer_terms` (the change climbs the join tree,
with NS-compensation of the padded rows at every level), and is applied in the one MERGE.
Not monotone: a row added to a null-supplied side removes the padded rows it now matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt_ivm.classes.identities import read_identities
from dbt_ivm.classes.joins import IdentityRules, key_match
from dbt_ivm.classes.outer_terms import climb_steps
from dbt_ivm.classes.rules import Refresh
from dbt_ivm.ir import HIDDEN_PREFIX, RID_COLUMN, Side, TableName, ViewPlan
from dbt_ivm.render import col, ident, lit, sql, temp_table


def stored_identities(plan: ViewPlan, delta: str) -> exp.Select:
    """(occurrence, identity) per change-set row: its first non-NULL identity.

    Every row of the view has one (a padded row still has its preserved side's); a stored row
    the MERGE matches has the same identities, so it holds this one in that column.
    """
    order = sorted(plan.sources, key=lambda s: s.side is not Side.PRESERVED)
    which = exp.Case(
        ifs=[exp.If(this=exp.not_(exp.Is(this=col(s.rid), expression=exp.Null())), true=lit(s.index)) for s in order]
    )
    first = exp.Coalesce(this=col(order[0].rid), expressions=[col(s.rid) for s in order[1:]])
    rows = exp.select(which.as_("i"), first.as_(ident(RID_COLUMN))).from_(temp_table(delta))
    return exp.select("*").from_(rows.subquery(ident(f"{HIDDEN_PREFIX}ids"))).distinct()


def stored_matches(plan: ViewPlan, backing: TableName, delta: str, ranges: Sequence[exp.Expr] = ()) -> exp.Select:
    """How many stored rows have the key of a change-set row (NULL-safe): 0 means an append.
    `ranges`: the change set's value ranges over `t` (`change_stats.value_ranges`), so Delta skips the
    files no change row can match."""
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident("t")))
    found = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(target)
    found = found.join(temp_table(delta).as_("s"), on=key_match(plan, "t", "s"), join_type="left semi")
    return found.where(exp.and_(*[r.copy() for r in ranges])) if ranges else found


class OuterJoinRules(IdentityRules):
    """Not an `Appender`: a row added to a null-supplied side can remove the padded rows it matches."""

    def changed_identities(self, refresh: Refresh, delta: str) -> dict[int, list[int]] | None:
        return read_identities(refresh, stored_identities(refresh.plan, delta))

    def all_new(self, refresh: Refresh, delta: str, ranges: Sequence[exp.Expr] = ()) -> bool:
        rows = refresh.query(sql(stored_matches(refresh.plan, refresh.backing, delta, ranges)))
        return int(rows[0]["n"]) == 0

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        lines = []
        for table in plan.tables:
            lines.append(f"  change to {table}:")
            for s in (s for s in plan.sources if s.table.key == table.key):
                lines.append(f"    {s.alias} ({s.side.value}): net change feed per row identity")
                lines += [f"      {step}" for step in climb_steps(plan, plan.tree, s.index)]
        lines.append(
            "    apply: one MERGE on the identity tuple, NULL-safe for padded rows (count += delta, "
            "delete at 0), or one INSERT when no changed key is stored; no changes: no write"
        )
        return lines


RULES = OuterJoinRules()
