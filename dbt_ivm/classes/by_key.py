"""Recompute by key: the refresh of a view whose rows each depend on the rows of their key only,
window views by partition (`windows`) and semi-join views by correlation key (`semijoins`).

Stored row: the class's columns, the value of each key (`__ivm_p_<i>`) and a multiplicity
(`__ivm_count`). The class finds the keys a change touches and caches them; here, from the change
terms' rows netted per source row (`net_rows`), their rows recomputed at the new versions
(`+count`) and their stored rows (`-count`) summed per stored row (`delta_select`), and one MERGE
that applies the counts that changed (`merge_statement`, `apply_difference`): rows that did not
change are not rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp

from dbt_ivm.classes.change_stats import change_size
from dbt_ivm.classes.changes import delta_terms
from dbt_ivm.classes.joins import count_clauses
from dbt_ivm.classes.relations import Narrowing, union_all
from dbt_ivm.classes.rules import Refresh, Write, WritePath
from dbt_ivm.ir import COUNT_COLUMN, DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Source, TableName, ViewPlan
from dbt_ivm.render import cache_as, col, empty_commit, func, ident, lit, sql, temp_table

TOUCHED = f"{HIDDEN_PREFIX}t"  # the alias of the touched keys


def counted(rows: exp.Query, columns: Sequence[str], measure: exp.Expr, name: str) -> exp.Select:
    """One row per distinct stored row (`columns`) of `rows`, with `measure` as `name`."""
    cols = [col(c) for c in columns]
    return (
        exp.select(*cols, measure.as_(ident(name)))
        .from_(rows.subquery(ident(f"{HIDDEN_PREFIX}v")))
        .group_by(*[c.copy() for c in cols])
    )


def semi_join(touched: str, values: Sequence[exp.Expr], keys: Sequence[str], where: exp.Expr | None = None) -> exp.Join:
    """`LEFT SEMI JOIN touched ON value_i <=> touched.key_i …`: NULL keys match NULL keys;
    `where`: only the touched rows it holds for (over `TOUCHED`'s columns)."""
    on = exp.and_(
        *[exp.NullSafeEQ(this=v.copy(), expression=col(k, TOUCHED)) for v, k in zip(values, keys, strict=True)],
        *([where] if where is not None else []),
    )
    return exp.Join(this=temp_table(touched).as_(TOUCHED), side="LEFT", kind="SEMI", on=on)


def row_columns(sources: Sequence[Source], rid: Callable[[Source], str]) -> list[exp.Expr]:
    """Each occurrence's identity (named `rid(source)`) and columns: a change term's rows netted
    per source row. A map as its JSON text (maps cannot be grouped)."""
    row: list[exp.Expr] = []
    for s in sources:
        row.append(col(RID_COLUMN, s.alias).as_(ident(rid(s))))
        for j, (name, spark_type) in enumerate(s.columns):
            value: exp.Expr = col(name, s.alias)
            if spark_type.lower().startswith("map"):
                value = func("to_json", value)
            row.append(value.as_(ident(f"{HIDDEN_PREFIX}c_{s.index}_{j}")))
    return row


def net_rows(
    plan: ViewPlan,
    query: exp.Select,
    names: Sequence[str],
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None,
    narrow: Narrowing | None = None,
    with_count: bool = False,
) -> exp.Select | None:
    """The rows of `query`'s change terms (`changes.delta_terms`) whose copies do not cancel, as
    their `names` columns (`with_count`: and their net count, `DELTA_COLUMN`): an update of a column
    `query` does not read changes nothing. None when no source moved."""
    terms = [term for _, term in delta_terms(plan, query, old, new, staged, narrow=narrow)]
    if not terms:
        return None
    total = exp.Sum(this=col(DELTA_COLUMN))
    measures = [total.copy().as_(ident(DELTA_COLUMN))] if with_count else []
    return (
        exp.select(*[col(n) for n in names], *measures)
        .from_(union_all(terms).subquery(ident(f"{HIDDEN_PREFIX}c")))
        .group_by(*[col(n) for n in names])
        .having(exp.NEQ(this=total, expression=lit(0)))
    )


def delta_select(
    recomputed: exp.Query, columns: Sequence[str], keys: Sequence[str], backing: TableName, touched: str | None
) -> exp.Select:
    """The touched keys' rows recomputed (`recomputed`, +count) and as stored (-count), summed per
    stored row (`columns`, the `keys` among them): the rows whose multiplicity changes, by how
    much. `touched` None, or no key: every stored row."""
    rows = counted(recomputed, columns, exp.Count(this=exp.Star()), DELTA_COLUMN)
    stored = exp.select(*[col(c) for c in columns], exp.Neg(this=col(COUNT_COLUMN)).as_(DELTA_COLUMN))
    stored = stored.from_(backing.to_table().as_(f"{HIDDEN_PREFIX}s"))
    if touched is not None and keys:
        stored.append("joins", semi_join(touched, [col(k, f"{HIDDEN_PREFIX}s") for k in keys], keys))
    total = exp.Sum(this=col(DELTA_COLUMN))
    summed = counted(union_all([rows, stored]), columns, total, DELTA_COLUMN)
    return summed.having(exp.NEQ(this=total.copy(), expression=lit(0)))


def merge_statement(columns: Sequence[str], backing: TableName, delta: str, recomputed: str) -> exp.Merge:
    """Apply the changed multiplicities, matching every stored column NULL-safe: delete at 0,
    update, insert; a count that would go negative is corrupt state, loudly (`recomputed`: what
    the message says was recomputed, "keys" or "partitions")."""
    t, s = "t", "s"
    corrupt = (
        f"fast_mv {backing}: the recomputed {recomputed} remove rows the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    on = exp.and_(*[exp.NullSafeEQ(this=col(c, t), expression=col(c, s)) for c in columns])
    whens = exp.Whens(expressions=count_clauses(columns, corrupt, t, s))
    return exp.Merge(this=target, using=temp_table(delta).as_(s), on=on, whens=whens)


def apply_difference(
    refresh: Refresh, delta: exp.Select, columns: Sequence[str], recomputed: str, detail: str
) -> Write:
    """Cache `delta` (a `delta_select` over the stored `columns`), read its size, and write nothing
    when it is empty, else its `merge_statement`."""
    name = refresh.temp("delta")
    refresh.run(cache_as(name, delta))
    row = refresh.query(sql(change_size(name)))[0]
    if int(row["n"]) == 0:
        return Write(WritePath.EMPTY, empty_commit(refresh.backing), 0, 0, detail)
    merge = merge_statement(columns, refresh.backing, name, recomputed)
    return Write(WritePath.MERGE, merge, int(row["inserted"]), int(row["deleted"]), detail)
