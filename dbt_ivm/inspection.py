"""What a run learns before it decides, read once into one immutable `Inspection`.

`inspect` validates the sources and the model, pins every source's version, reads the storage's
properties and watermark, and for each source that moved since the view last consumed it, the
commits over the versions it moved (which tell whether it only appended, how many rows changed,
whether it was replaced) and the sizes `refresh_policy: auto` weighs. Only queries: nothing is
written. `decide.decide` then chooses from the inspection alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlglot import exp

from dbt_ivm import known_properties, layout, render
from dbt_ivm.analyze import analyze, parse, source_tables
from dbt_ivm.analyze.union_join import check_types
from dbt_ivm.catalog import (
    CatalogEntry,
    Database,
    FeedOff,
    SourceInfo,
    Stored,
    backing_table,
    before_caching,
    catalog_entries,
    check_source,
    checked_upstreams,
    covering_history,
    describe_query,
    describe_source,
    describe_together,
    encode_settings,
    meaning,
    output_types,
    read_stored,
    recent_history,
    row_counts,
    scripts,
    server_defaults,
    session_settings,
    settings_changed,
)
from dbt_ivm.classes import ViewRules, rules_for
from dbt_ivm.history import (
    appended_rows,
    changed_rows,
    commit_time,
    holds_commit,
    keeps_properties,
    keeps_rows,
    replaced,
    rows_after,
)
from dbt_ivm.ir import Span, TableName, Upstream, ViewPlan
from dbt_ivm.metadata import PROP_SETTINGS, Watermark, latest_watermark
from dbt_ivm.policy import RefreshPolicy, parse_policy
from dbt_ivm.render import CHANGE_FEED
from dbt_ivm.upstream import fingerprint, with_upstreams

History = list[dict[str, Any]]  # DESCRIBE HISTORY rows, newest first


@dataclass(frozen=True)
class Model:
    """A fast_mv model as dbt passes it: its relation, compiled SQL and config."""

    view: TableName
    sql: str
    unique_key: str | Sequence[str] | None = None
    functions: tuple[str, ...] = ()  # UDFs declared deterministic
    refresh_policy: str | None = None
    cluster_by: str | Sequence[str] | None = None
    enable_change_feed: bool = False  # turn on the change data feed of a Delta source without one

    def __post_init__(self) -> None:
        parse_policy(self.refresh_policy)  # a bad refresh_policy fails before anything is read

    @property
    def policy(self) -> RefreshPolicy:
        return parse_policy(self.refresh_policy)

    @property
    def backing(self) -> TableName:
        return backing_table(self.view)


@dataclass(frozen=True)
class Known:
    """What `quick.check` read, for the full inspection to reuse instead of asking again."""

    settings: Mapping[str, str] | None = None  # `session_settings`' answer
    storage: Sequence[Mapping[str, Any]] | None = None  # the storage's newest commits
    histories: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)  # a source's newest commits
    pinned: Mapping[str, int] = field(default_factory=dict)  # sources shown still at the version consumed


@dataclass(frozen=True)
class Moved:
    """A source that moved since the view last consumed it, as its commits over the span tell."""

    span: Span
    history: History | None  # its commits over the span (and some newer); None: more than MAX_APPEND_COMMITS

    @cached_property
    def appended(self) -> int | None:
        """Rows appended over the span when it only appended; else None (`history.appended_rows`)."""
        return None if self.history is None else appended_rows(self.history, self.span.first, self.span.pinned)

    @cached_property
    def changed(self) -> int | None:
        """Its change rows over the span, when its commits' metrics say (`history.changed_rows`)."""
        return None if self.history is None else changed_rows(self.history, self.span.first, self.span.pinned)

    @cached_property
    def kept(self) -> bool:
        """Every commit over the span kept the source's rows (`history.keeps_rows`)."""
        return self.history is not None and keeps_rows(self.history, self.span.first, self.span.pinned)

    @cached_property
    def replaced(self) -> str:
        """The commits over the span that replaced its rows wholesale, named; '' when none."""
        return "" if self.history is None else replaced(self.history, self.span.first, self.span.pinned)


@dataclass(frozen=True)
class Inspection:
    """Everything a run's decision is made from; immutable, read once."""

    model: Model
    plan: ViewPlan
    rules: ViewRules
    unique_key: tuple[str, ...]  # output columns
    cluster_by: tuple[str, ...]  # output columns (see `layout`)
    output_types: Mapping[str, str]  # the view's column types
    catalog: Mapping[str, CatalogEntry]  # the sources', the storage's and the view's entries
    created: Mapping[str, str]  # source key -> creation time in the catalog ('' where not shown)
    settings: Mapping[str, str]  # the session's values of the settings that change the SQL's meaning
    pinned: Mapping[str, int]  # source key -> the version this run reads
    stored: Stored | None  # None: the storage does not exist
    moved: Mapping[str, Moved]  # the sources whose version moved past the watermark's
    # Rows of each source (at the pinned version) and of the storage (before this run's write), as
    # the watermark carried them on or, where `auto` needs them and they are not known, counted.
    sizes: Mapping[str, int] | None
    auto_seconds: float = 0.0  # what reading the moved sources' commits and the sizes took
    scripts: bool = False  # the server runs SQL scripts: statements go in fewer round trips (`batch`)
    before_caching: tuple[str, ...] = ()  # settings a refresh sets before it caches (`catalog.before_caching`)
    defaults: Mapping[str, Any] | None = None  # the server's defaults, as a watermark records them (`server_defaults`)
    # the storage's columns and types, described with the sources' (`_early`); None: not described
    storage_types: Mapping[str, str] | None = None
    commits: Mapping[str, str] = field(default_factory=dict)  # source key -> its pinned commit's time
    # sources the catalog shows created at another time than recorded whose commits still hold the
    # one consumed: replaced, not dropped and created again (`_identity`)
    renewed: frozenset[str] = frozenset()

    @property
    def view(self) -> TableName:
        return self.model.view

    @property
    def backing(self) -> TableName:
        return self.model.backing

    @property
    def policy(self) -> RefreshPolicy:
        return self.model.policy

    @property
    def view_missing(self) -> bool:
        """The view over the storage is not in the catalog (dropped, or never created)."""
        return self.view.key not in self.catalog

    @property
    def mark(self) -> Watermark | None:
        return self.stored.mark if self.stored else None

    @property
    def ranges(self) -> str:
        """'shop.orders v4..v6, …': the moved sources' spans, for the log."""
        return ", ".join(f"{key} {m.span}" for key, m in self.moved.items())


def inspect(db: Database, model: Model, known: Known | None = None) -> Inspection:
    """Validate the sources and the model, pin every source's version, read the stored state
    (`known`: what `quick.check` read of it already)."""
    known = known or Known()
    tree = parse(model.sql)  # once: the sources and the plan are read from the same tree
    early = _early(db, model, tree, known)
    infos = early.infos if early else [describe_source(db, t) for t in source_tables(tree)]
    chained, off = checked_upstreams(db, infos)
    for info in infos:
        if info.table.key in chained:
            continue
        if model.enable_change_feed and info.kind != "VIEW" and info.provider == "delta" and not info.change_data_feed:
            off.append(info.table)
        else:
            check_source(info)
    if off:  # the caller turns their feeds on, and inspects again
        raise FeedOff(tuple(off))
    plan = with_upstreams(analyze(tree, {i.table.key: i.columns for i in infos}, model.functions), chained)
    rules = rules_for(plan)
    types = output_types(db, plan, tree, early.types if early else None)
    render.ensure_groupable(types)
    unique_key = render.output_columns(plan, model.unique_key, "unique_key")
    cluster_by = layout.cluster_columns(plan, model.cluster_by, rules.ranged_columns(plan, types), types)
    versioned = plan.versioned
    entries = [*plan.tables, *(u.storage for u in chained.values()), model.backing, model.view]
    catalog = early.catalog if early and not chained else catalog_entries(db, entries)
    answered = dict(known.settings) if known.settings is not None else session_settings(db, _recorded(known))
    histories = early.histories if early else {t.key: _history(db, known, t.key, versioned[t.key]) for t in plan.tables}
    pinned = {key: known.pinned.get(key, int(rows[0]["version"]) if rows else -1) for key, rows in histories.items()}
    guess = known_properties.expected(plan, encode_settings(meaning(answered)), cluster_by)
    stored = read_stored(db, model.backing, known.storage, guess) if model.backing.key in catalog else None
    mark = stored.mark if stored else None
    identities = {t.key: _identity(catalog, t, chained.get(t.key), mark, histories[t.key]) for t in plan.tables}
    created = {key: found for key, (found, _) in identities.items()}
    if _built_anew(plan, stored, meaning(answered)):
        check_types(plan, lambda query: describe_query(db, query))  # before a build of this definition
    started = time.time()
    moved = moved_sources(db, plan, pinned, histories, stored)
    sizes = _sizes(db, model, plan, stored, moved)
    return Inspection(
        model,
        plan,
        rules,
        unique_key,
        cluster_by,
        types,
        catalog,
        created,
        meaning(answered),
        pinned,
        stored,
        moved,
        sizes,
        time.time() - started,
        scripts(answered),
        before_caching(answered),
        server_defaults(answered),
        early.storage_types if early else None,
        _commit_times(pinned, histories, mark),
        frozenset(key for key, (_, renewed) in identities.items() if renewed),
    )


def _built_anew(plan: ViewPlan, stored: Stored | None, settings: Mapping[str, str]) -> bool:
    """Whether the storage was built by no run with this definition and these meaning settings
    (which type what the analysis cannot: a run under others may build, `decide.rebuild_reason`)."""
    if stored is None or stored.mark is None or stored.mark.definition_hash != plan.definition_hash:
        return True
    return bool(settings_changed(stored.properties.get(PROP_SETTINGS), settings))


def _recorded(known: Known) -> Mapping[str, Any] | None:
    """The server's defaults the storage's watermark records (`Watermark.defaults`), if any."""
    mark = latest_watermark(known.storage) if known.storage else None
    return mark.defaults if mark is not None else None


@dataclass(frozen=True)
class _Early:
    """What a run over a watermark reads before the sources' descriptions (the catalog's entries,
    the sources' newest commits), and those descriptions, mostly from one statement."""

    catalog: dict[str, CatalogEntry]
    histories: dict[str, History]
    infos: list[SourceInfo]
    types: dict[str, str]  # the model's columns
    storage_types: dict[str, str] | None  # the storage's columns; None: not a Delta table in the catalog


def _early(db: Database, model: Model, tree: exp.Query, known: Known) -> _Early | None:
    """The sources' descriptions where the storage's watermark (`known.storage`) consumed every
    source: a source the catalog shows as the Delta table created when it was consumed, whose
    commits since cannot have changed its properties (`_as_consumed`), is as that run checked it
    (a Delta table with a change feed), so only its columns are asked, with the model's, in one
    DESCRIBE QUERY (`describe_together`), and so are the storage's (an aggregate's refresh reads
    its stored state's types from them); any other is described as a first build does. None
    where there is no such watermark, a source is missing or a view (a chain), or that query
    fails: the full path then reads and says why."""
    mark = latest_watermark(known.storage) if known.storage else None
    tables = source_tables(tree)
    if mark is None or not isinstance(mark.quick, Mapping) or {t.key for t in tables} != set(mark.sources):
        return None  # `quick.record`: no chain
    catalog = catalog_entries(db, [*tables, model.backing, model.view])
    if any(catalog.get(t.key) is None or catalog[t.key].kind in ("", "VIEW") for t in tables):
        return None
    histories = {t.key: _history(db, known, t.key, t) for t in tables}
    trusted = [t for t in tables if _as_consumed(t.key, catalog[t.key], mark, histories[t.key], known)]
    storage = catalog.get(model.backing.key)
    stored = [model.backing] if storage is not None and storage.provider == "delta" else []
    try:
        columns, types = describe_together(db, [*trusted, *stored], tree)
    except Exception:  # the database's error type varies: a source or the model Spark rejects
        return None
    infos = [
        SourceInfo(t, columns[t.key], "delta", catalog[t.key].kind, {CHANGE_FEED: "true"})
        if t.key in columns
        else describe_source(db, t)
        for t in tables
    ]
    return _Early(catalog, histories, infos, types, columns.get(model.backing.key))


def _as_consumed(key: str, entry: CatalogEntry, mark: Watermark, history: History, known: Known) -> bool:
    """The source is the Delta table `mark` consumed (its creation time), and at that version or
    moved since only by commits that change no table property (`history.keeps_properties`), so
    its change data feed is on as it was then (the feed's read fails loudly where it was not)."""
    if entry.provider != "delta":
        return False
    if not mark.created.get(key):
        return False
    if entry.created != mark.created[key] and not _holds_consumed(key, mark, history):
        return False
    if key in known.pinned:  # `quick`'s probe showed it at the version consumed
        return True
    consumed, latest = mark.sources[key], int(history[0]["version"]) if history else -1
    return latest >= consumed and keeps_properties(history, consumed + 1, latest)


def _history(db: Database, known: Known, key: str, table: TableName) -> History:
    """A source's newest commits (none read where `quick.check` showed it at the version consumed)."""
    if key in known.pinned:
        return []
    return list(known.histories[key]) if key in known.histories else recent_history(db, table)


def _identity(
    catalog: Mapping[str, CatalogEntry],
    table: TableName,
    upstream: Upstream | None,
    mark: Watermark | None,
    history: History,
) -> tuple[str, bool]:
    """A source's creation time ('' where not shown), and whether it was replaced rather than
    dropped and created again. An upstream's time is its storage's, with its view's
    `fingerprint`: another view over the storage is another source too.

    Hive's metastore keeps a table's creation time through CREATE OR REPLACE; Spark's in-memory
    catalog (and any catalog that writes the entry anew) gives it a new one. So a time other than
    the one `mark` recorded means a replace where the source's commits still hold the commit
    consumed (`_holds_consumed`), and a table dropped and created again otherwise."""
    key = upstream.storage.key if upstream else table.key
    created = catalog[key].created if key in catalog else ""
    found = f"{created} ({fingerprint(upstream)})" if upstream else created
    recorded = mark.created.get(table.key, "") if mark else ""
    if not created or not recorded or recorded == found or mark is None:
        return found, False
    suffix = found[len(created) :]  # an upstream's view must be the one recorded
    return found, recorded.endswith(suffix) and _holds_consumed(table.key, mark, history)


def _holds_consumed(key: str, mark: Watermark, history: History) -> bool:
    """The source's commits still hold the one `mark` consumed, made when it recorded (`history.holds_commit`)."""
    return holds_commit(history, mark.sources.get(key), mark.commits.get(key, ""))


def _commit_times(
    pinned: Mapping[str, int], histories: Mapping[str, History], mark: Watermark | None
) -> dict[str, str]:
    """The time of each source's pinned commit (`history.commit_time`): from its commits read, or
    as `mark` recorded it where none were read (the source still at the version consumed)."""
    times = {}
    for key, version in pinned.items():
        row = next((r for r in histories.get(key, ()) if int(r["version"]) == version), None)
        if row is not None:
            times[key] = commit_time(row)
        elif mark is not None and mark.sources.get(key) == version and mark.commits.get(key):
            times[key] = mark.commits[key]
    return times


def moved_sources(
    db: Database, plan: ViewPlan, pinned: Mapping[str, int], histories: Mapping[str, History], stored: Stored | None
) -> dict[str, Moved]:
    """Each source whose pinned version is past the one the watermark consumed, with its commits
    over the span (the ones read at pinning when they cover it, else read again)."""
    consumed = stored.mark.sources if stored and stored.mark else {}
    moved = {}
    for table in plan.tables:
        key = table.key
        if key in consumed and pinned[key] > consumed[key]:
            span = Span(consumed[key], pinned[key])
            history = covering_history(db, plan.versioned[key], span.first, span.pinned, histories[key])
            moved[key] = Moved(span, history)
    return moved


def _sizes(
    db: Database, model: Model, plan: ViewPlan, stored: Stored | None, moved: Mapping[str, Moved]
) -> dict[str, int] | None:
    """The sizes the watermark carries on to now; under `auto`, counted where those are not known
    and a first build or a refresh will weigh them (once in a view's life, then carried)."""
    sizes = tracked_sizes(plan, model.backing, stored, moved) if stored else None
    first = stored is None or stored.mark is None
    if sizes is None and model.policy is RefreshPolicy.AUTO and (first or moved):
        sizes = counted_sizes(db, plan, model.backing, exists=stored is not None)
    return sizes


def counted_sizes(db: Database, plan: ViewPlan, backing: TableName, exists: bool) -> dict[str, int]:
    """Every source's rows and the storage's (0 when it does not exist yet), in one query."""
    tables = {t.key: t.to_table() for t in plan.tables}
    if exists:
        tables[backing.key] = backing.to_table()
    return {backing.key: 0, **row_counts(db, tables)}


def tracked_sizes(
    plan: ViewPlan, backing: TableName, stored: Stored, moved: Mapping[str, Moved]
) -> dict[str, int] | None:
    """Each source's rows at the pinned version and the storage's now, from the sizes the
    watermark recorded and the metrics of the commits since (`history.rows_after`), with no query;
    None when the watermark recorded none or a commit's metrics do not say."""
    mark = stored.mark
    keys = [*(t.key for t in plan.tables), backing.key]
    if mark is None or stored.mark_commit is None or mark.commit_version is None:
        return None
    if any(k not in mark.rows for k in keys) or any(t.key not in mark.sources for t in plan.tables):
        return None
    version = mark.commit_version
    sizes = {backing.key: rows_after(mark.rows[backing.key], [stored.mark_commit], version, version)}
    for key in keys[:-1]:
        found = moved.get(key)
        span = found.span if found else Span(mark.sources[key], mark.sources[key])
        history = found.history if found and found.history is not None else []
        sizes[key] = rows_after(mark.rows[key], history, span.first, span.pinned)
    known = {k: v for k, v in sizes.items() if v is not None}
    return known if len(known) == len(sizes) else None
