"""The relations a change term is built from, and the builders that combine them: a source at a
pinned version with its row identities (`snapshot_relation`), the inputs of one telescoping term
(`TermInput`), table substitution, UNION ALL, and a change set's added and removed copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from sqlglot import exp

from dbt_ivm.ir import DELTA_COLUMN, HIDDEN_PREFIX, RID_COLUMN, Source
from dbt_ivm.render import col, func, ident, lit
from dbt_ivm.upstream import read_at

# changed occurrence -> the alias of another occurrence in its term -> filters on that occurrence
Narrowing = Mapping[int, Mapping[str, Sequence[exp.Expr]]]


@dataclass(frozen=True)
class TermInput:
    """What one telescoping term reads (`changes.delta_terms`): the changed occurrence, its net
    change as a relation under its alias, and each occurrence's version before and after it."""

    changed: Source
    change: exp.Expr
    before: Mapping[int, int]  # occurrence -> its version in this term (`changes.term_version`)
    after: Mapping[int, int]  # the same, with `changed` at its new version


def rid_expression(columns: tuple[tuple[str, str], ...], table: str | None = None) -> exp.Expr:
    """Row identity of a source row: a 64-bit hash of the columns the view uses, NULLs flagged.

    Delta withholds row ids from change-feed reads, so identity comes from content;
    rows equal on every used column are interchangeable duplicates (a multiplicity).
    A hash collision can only merge rows whose view columns are also equal, because
    every key below is (identities, view columns): the view's multiset stays exact.
    """
    if not columns:
        return exp.Literal.number(0)
    args: list[exp.Expr] = []
    for name, ctype in columns:
        c = col(name, table)
        args.append(func("to_json", c) if ctype.lower().startswith("map") else c)
    args += [exp.Is(this=col(name, table), expression=exp.Null()) for name, _ in columns]
    return func("xxhash64", *args)


def source_columns(source: Source) -> list[exp.Expr]:
    return [col(name) for name, _ in source.columns]


def snapshot_relation(source: Source, version: int, with_rid: bool = True, where: Sequence[exp.Expr] = ()) -> exp.Expr:
    """`(SELECT used columns, rid FROM t VERSION AS OF v [WHERE where]) AS alias` (`upstream.read_at`)."""
    table = read_at(source, version)
    select = exp.select(*source_columns(source)).from_(table)
    if not source.columns:
        select = exp.select(lit(1).as_(ident(f"{HIDDEN_PREFIX}one"))).from_(table)
    if with_rid:
        select = select.select(rid_expression(source.columns).as_(ident(RID_COLUMN)))
    if where:
        select = select.where(*[w.copy() for w in where])
    return select.subquery(ident(source.alias))


def copies() -> tuple[exp.Expr, exp.Expr]:
    """Per row of a change set, the copies it inserts and the copies it deletes (`__ivm_d` > 0,
    < 0), each 0 otherwise: summed, the rows a change adds and removes."""
    d = col(DELTA_COLUMN)
    inserted = exp.If(this=exp.GT(this=d.copy(), expression=lit(0)), true=d.copy(), false=lit(0))
    deleted = exp.If(this=exp.LT(this=d.copy(), expression=lit(0)), true=exp.Neg(this=d.copy()), false=lit(0))
    return inserted, deleted


def union_all(queries: list[exp.Select]) -> exp.Query:
    """`q1 UNION ALL q2 UNION ALL …` (one query: itself)."""
    return exp.union(*queries, distinct=False) if len(queries) > 1 else queries[0]


def substitute(query: exp.Select, relations: Mapping[str, exp.Expr]) -> exp.Select:
    """Copy of `query` with each source table replaced by the relation for its alias."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.alias_or_name in relations:
            relation = relations[node.alias_or_name].copy()
            if node.args.get("joins"):  # the first table of a parenthesized join carries its joins
                relation.set("joins", [join.transform(swap) for join in node.args["joins"]])
            return relation
        return node

    # swap replaces tables only, so the root stays the Select that transform types as any node
    return cast(exp.Select, query.copy().transform(swap))
