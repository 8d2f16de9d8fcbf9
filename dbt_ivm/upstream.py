"""A source that is another fast_mv (a chain): read through its storage.

`ref('stg')` of a fast_mv is a view over `stg__ivm`, the storage: its rows are a function of
each stored row alone (a join's row repeated its multiplicity times, an aggregate's group
computed from its state and kept where HAVING holds). So the view's select, run over the
storage at a version, is `stg` at that version; run over the storage's change feed, pre-images
and post-images alike, it is `stg`'s change, each copy a row of its own, and netting per row
identity (`classes.changes.change_select`) cancels a rewritten row whose values did not change.
The downstream reads the storage's versions and feed in the view's place, and sees only the
view's columns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import cast

import sqlglot
from sqlglot import exp

from dbt_ivm.ir import HIDDEN_PREFIX, Source, TableName, Upstream, ViewPlan
from dbt_ivm.render import col, func, ident, lit
from dbt_ivm.verbatim import DIALECT

STORAGE_SUFFIX = "__ivm"  # the storage of fast_mv `x` is `x__ivm` (`catalog.backing_table`)
CHANGE_TYPE = "_change_type"
READ_ALIAS = f"{HIDDEN_PREFIX}up"


def parse_upstream(view: TableName, text: str) -> Upstream | None:
    """The fast_mv whose view `view` is, from the view's text: a select of exactly one table,
    `view`'s storage; None for any other view."""
    try:
        select = sqlglot.parse_one(text, read=DIALECT)
    except Exception:  # a view text sqlglot cannot read is not one fast_mv wrote
        return None
    if not isinstance(select, exp.Select):
        return None
    tables = list(select.find_all(exp.Table))
    if len(tables) != 1 or tables[0].name.lower() != f"{view.name}{STORAGE_SUFFIX}".lower():
        return None
    table = tables[0]
    if table.db and view.db and table.db.lower() != view.db.lower():
        return None
    storage = TableName(table.db or view.db, table.name, table.catalog or view.catalog)
    return Upstream(storage, text)


def fingerprint(upstream: Upstream) -> str:
    """Changes when the upstream's view reads its storage otherwise (another class, columns or
    HAVING): the change feed of the old stored rows then means something else."""
    return hashlib.sha256(upstream.select.encode()).hexdigest()[:12]


def _select(upstream: Upstream) -> tuple[exp.Select, exp.Table]:
    select = cast(exp.Select, sqlglot.parse_one(upstream.select, read=DIALECT))
    return select, next(select.find_all(exp.Table))


def _as_of(table: exp.Table, version: int) -> exp.Table:
    """`table VERSION AS OF version` (in place)."""
    table.set("version", exp.Version(this="VERSION", kind="AS OF", expression=lit(version)))
    return table


def table_as_of(table: TableName, version: int) -> exp.Table:
    """`table VERSION AS OF version`."""
    return _as_of(table.to_table(), version)


def _changes(table: TableName, start: int, end: int) -> exp.Table:
    """`table_changes('table', start, end)`: Delta's change feed over those versions."""
    return exp.Table(this=func("table_changes", lit(table.sql()), lit(start), lit(end)))


def at_version(upstream: Upstream, version: int) -> exp.Select:
    """The upstream's rows at a version of its storage."""
    select, table = _select(upstream)
    _as_of(table, version)
    return select


def feed(upstream: Upstream, start: int, end: int) -> exp.Select:
    """The upstream's change rows over versions `start`..`end` of its storage, with the storage's
    `_change_type`: each stored row's pre- or post-image as the view shows it."""
    select, table = _select(upstream)
    changes = _changes(upstream.storage, start, end)
    table.replace(changes)
    # each SELECT from the feed out carries it (a window view's query over its rows' derived table)
    node: exp.Expr | None = changes.parent
    while node is not None:
        if isinstance(node, exp.Select):
            node.select(col(CHANGE_TYPE), copy=False)
        node = node.parent
    return select


def read_at(source: Source, version: int) -> exp.Table | exp.Subquery:
    """What a read of `source` at `version` selects from: the table `VERSION AS OF` it, or an
    upstream's rows at that version of its storage."""
    if source.upstream is not None:
        return at_version(source.upstream, version).subquery(ident(READ_ALIAS))
    return _as_of(source.table.to_table(), version)


def read_feed(source: Source, start: int, end: int) -> exp.Table | exp.Subquery:
    """What a read of `source`'s change feed over `start`..`end` selects from (with `_change_type`)."""
    if source.upstream is not None:
        return feed(source.upstream, start, end).subquery(ident(READ_ALIAS))
    return _changes(source.table, start, end)


def with_upstreams(plan: ViewPlan, upstreams: Mapping[str, Upstream]) -> ViewPlan:
    """`plan` with each source that is a fast_mv's view read through its storage."""
    if not upstreams:
        return plan
    sources = tuple(replace(s, upstream=upstreams.get(s.table.key)) for s in plan.sources)
    return replace(plan, sources=sources)
