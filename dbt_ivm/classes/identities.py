"""Stored rows found by the identities of a change set's rows: the identity filter the MERGE
writes as literals (up to `MAX_FILTER_IDENTITIES`), the identities it is read from, and the probe
whether any stored row mentions a changed source row (none: the change set only appends).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt_ivm.classes.relations import union_all
from dbt_ivm.classes.rules import Refresh
from dbt_ivm.ir import HIDDEN_PREFIX, RID_COLUMN, TableName, ViewPlan
from dbt_ivm.render import col, ident, lit, sql, temp_table

# Up to this many changed identities are written into the MERGE as literals (see identity_filter);
# the cost model prices a MERGE with and without the filter (`policy.Costs.filter_limit`).
MAX_FILTER_IDENTITIES = 10_000


def changed_identities(staged: Mapping[int, str]) -> exp.Select:
    """(occurrence, identity) of every change row."""
    parts = [
        exp.select(lit(i).as_("i"), col(RID_COLUMN)).distinct().from_(temp_table(name))
        for i, name in sorted(staged.items())
    ]
    return exp.select("*").from_(union_all(parts).subquery(ident(f"{HIDDEN_PREFIX}ids")))


def read_identities(refresh: Refresh, query: exp.Select) -> dict[int, list[int]] | None:
    """{occurrence: identities} from `query`'s (i, identity) rows, or None past the filter's limit."""
    rows = refresh.query(sql(query.limit(MAX_FILTER_IDENTITIES + 1)))
    if len(rows) > MAX_FILTER_IDENTITIES:
        return None
    identities: dict[int, list[int]] = {i: [] for i in refresh.staged}
    for row in rows:
        identities.setdefault(int(row["i"]), []).append(int(row[RID_COLUMN]))
    return identities


def identity_filter(plan: ViewPlan, identities: Mapping[int, list[int]], table: str | None = None) -> exp.Expr:
    """Stored rows a change set can reach: a changed occurrence's identity column holds a change row's.

    Every key of the change set carries, in the column of the occurrence whose term produced it,
    the identity of one of that occurrence's change rows; so this is implied by the MERGE's match
    and adding it to ON changes no match. Delta evaluates it inside the target scan, so the
    MERGE's joins see only these rows instead of the whole view. (Delta prunes files for an IN
    list by its min..max only, which scattered hashes defeat: this filters rows, not files.)
    """
    parts = [
        exp.In(
            this=col(plan.sources[index].rid, table), expressions=[exp.Literal.number(v) for v in sorted(set(values))]
        )
        for index, values in sorted(identities.items())
        if values
    ]
    return exp.paren(exp.or_(*parts)) if parts else exp.false()


def existing_identities(
    plan: ViewPlan, backing: TableName, staged: Mapping[int, str], ranges: Sequence[exp.Expr] = ()
) -> exp.Select:
    """How many stored rows mention a changed source row (0: every changed key is new, append).

    Reads one bigint column of the view per changed occurrence: every key of the change set
    carries the identity of a change row in that occurrence's column. `ranges` (`value_ranges`
    over `t`) narrow it to the stored rows a change row can match, so on a storage laid out along
    them (`layout`) new rows beyond the stored ones read no file.
    """
    probes = []
    for i, name in sorted(staged.items()):
        target = backing.to_table()
        target.set("alias", exp.TableAlias(this=ident("t")))
        changed = exp.select(col(RID_COLUMN)).from_(temp_table(name)).subquery()
        found = exp.In(this=col(plan.sources[i].rid, "t"), query=changed)
        probes.append(exp.select(lit(1).as_("one")).from_(target).where(exp.and_(found, *[r.copy() for r in ranges])))
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(union_all(probes).subquery(ident(f"{HIDDEN_PREFIX}p")))
