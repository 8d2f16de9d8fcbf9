"""A built fast_mv as its storage records it (its definition, the model's SQL, its watermark),
read for `fast_mv_explain` and the `fast_mv_consistent` test: reads only, no write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dbt_ivm import consistency
from dbt_ivm.analyze import source_tables
from dbt_ivm.catalog import (
    Database,
    SourceInfo,
    backing_table,
    describe_source,
    parse_describe_extended,
    read_watermark,
    table_exists,
    upstreams,
    view_properties,
)
from dbt_ivm.errors import StateError
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import (
    FORMAT_VERSION,
    PROP_CLUSTER_BY,
    PROP_DEFINITION,
    PROP_FORMAT,
    PROP_FUNCTIONS,
    PROP_MODEL_SQL,
    Watermark,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from dbt_ivm.ir import Upstream


@dataclass(frozen=True)
class StoredView:
    """What a build recorded about a fast_mv, and its current watermark."""

    definition: str  # the normalized SQL
    model_sql: str  # the model's SQL as dbt compiled it
    functions: tuple[str, ...]
    mark: Watermark
    cluster_by: tuple[str, ...] = ()  # what the last build sorted the stored rows by


def stored_view(db: Database, view: TableName) -> StoredView:
    backing = backing_table(view)
    if not table_exists(db, backing):
        raise StateError(f"{view} has not been built by fast_mv yet; run dbt run for it first")
    props = view_properties(db, backing)
    mark = read_watermark(db, backing)
    if mark is None or PROP_DEFINITION not in props:
        raise StateError(f"{view} is not a fast_mv built by dbt-ivm (no watermark); run dbt run for it first")
    if PROP_MODEL_SQL not in props or props.get(PROP_FORMAT) != str(FORMAT_VERSION):
        raise StateError(f"{view} was built by an older dbt-ivm; run dbt run for it first (it rebuilds once)")
    functions = tuple(f for f in props.get(PROP_FUNCTIONS, "").split(",") if f)
    cluster_by = tuple(c for c in props.get(PROP_CLUSTER_BY, "").split(",") if c)
    return StoredView(props[PROP_DEFINITION], props[PROP_MODEL_SQL], functions, mark, cluster_by)


def explain_view(db: Database, view: TableName) -> str:
    from dbt_ivm.explain import explain

    stored = stored_view(db, view)
    infos = _stored_sources(db, stored)
    chained = upstreams(infos)
    consumed = ", ".join(
        f"{k} v{v}" + (f" (fast_mv: of its storage {chained[k].storage})" if k in chained else "")
        for k, v in stored.mark.sources.items()
    )
    schema = {i.table.key: i.columns for i in infos}
    storage = f"storage: sorted by ({', '.join(stored.cluster_by)}) at its last build\n" if stored.cluster_by else ""
    return f"view: {view} (consumed {consumed})\n{storage}" + explain(stored.definition, schema, stored.functions)


def pinned_model_sql(db: Database, stored: StoredView, chained: Mapping[str, Upstream] | None = None) -> str:
    """The model's own SQL on the source versions the view last consumed (`consistency.pin_versions`),
    each upstream fast_mv read through its own view's select over its storage; `chained`: those
    upstreams (`stored_upstreams`) where the caller already has them."""
    if chained is None:
        chained = stored_upstreams(db, stored)
    return consistency.pin_versions(stored.model_sql, stored.mark.sources, chained)


def stored_upstreams(db: Database, stored: StoredView) -> dict[str, Upstream]:
    """The view's sources that are fast_mv views, as the catalog describes them now."""
    return upstreams(_stored_sources(db, stored))


def _stored_sources(db: Database, stored: StoredView) -> list[SourceInfo]:
    """Each source of the stored definition as the catalog describes it now."""
    return [describe_source(db, t) for t in source_tables(stored.definition)]


def consistency_sql(db: Database, view: TableName) -> str:
    """The fast_mv_consistent test's query: rows where the view and the model's own SQL, run on
    the source versions the view last consumed, differ."""
    stored = stored_view(db, view)
    columns, _ = parse_describe_extended(db.query(f"DESCRIBE TABLE {view.sql()}"))
    return consistency.consistency_sql(view, pinned_model_sql(db, stored), columns)
