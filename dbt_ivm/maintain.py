"""Drive a build or a refresh through anything that runs SQL (dbt's connection, a SparkSession).

The order of a refresh:
  1. inspect every source (Delta? change data feed on?) and pin its current version;
  2. analyze the model SQL into a plan (refusals happen here, before any write);
  3. read the watermark from the backing table's history; under refresh_policy auto, estimate
     from metadata whether a rebuild is cheaper (`dbt_ivm.policy`);
  4. when the moved sources only appended rows (their Delta history says so) to a monotone view
     with a declared unique key: append the view's new rows straight from the change feeds,
     one INSERT that also checks the key; otherwise
  5. evaluate the net change set once (CACHE TABLE) from the change feeds and
  6. apply it in ONE commit (MERGE, or INSERT when every changed identity is new)
     that records the pinned versions as the new watermark.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sqlglot import exp

from dbt_ivm import layout, render
from dbt_ivm.analyze import analyze, source_tables
from dbt_ivm.classes import NULL_KEY_FALLBACK, Appender, Refresh, ViewRules, Write, changes, rules_for
from dbt_ivm.errors import SourceError, StateError
from dbt_ivm.history import appended_rows, changed_rows, metric, rows_after
from dbt_ivm.ir import TableName, ViewPlan
from dbt_ivm.metadata import (
    FORMAT_VERSION,
    PROP_CLUSTER_BY,
    PROP_COLUMNS,
    PROP_DEFINITION,
    PROP_DEFINITION_HASH,
    PROP_FORMAT,
    PROP_FUNCTIONS,
    PROP_MODEL_SQL,
    PROP_SETTINGS,
    PROP_STATE,
    PROP_VIEW_CLASS,
    Watermark,
    latest_watermark,
)
from dbt_ivm.policy import Choice, Inputs, RefreshPolicy, choose, parse_policy
from dbt_ivm.session_lock import SESSION_LOCK

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
BACKING_SUFFIX = "__ivm"
# Commits of each source read when its version is pinned; they also tell a refresh whether
# the source only appended since (more commits than this are read again, up to MAX_APPEND_COMMITS).
# DESCRIBE HISTORY reads each commit it returns: 20 of a 10M-row fact's took 0.6-0.8 s, 5 0.4 s.
HISTORY_ROWS = 10
# Commits of the view's storage read for its watermark: the newest but for an OPTIMIZE or the like.
VIEW_HISTORY_ROWS = 5
MAX_APPEND_COMMITS = 100
# Appended change rows up to this many are broadcast to the joins (an unstaged feed has no size).
BROADCAST_ROWS = 100_000

LOST_HISTORY = re.compile(
    r"DELTA_MISSING_CHANGE_DATA|DELTA_UNSUPPORTED_TIME_TRAVEL|DELTA_CDC_START_VERSION_AFTER_LATEST|"
    r"DELTA_INVALID_CDC_RANGE|FileNotFoundException|DELTA_FILE_NOT_FOUND|"
    r"DELTA_TIME_TRAVEL|VersionNotFoundException|DELTA_CHANGE_DATA_FEED_NOT_ENABLED",
    re.IGNORECASE,
)


# Delta's optimistic concurrency: the write lost to a commit that landed after it read the table.
CONCURRENT_COMMIT = re.compile(
    r"Concurrent(Append|DeleteRead|DeleteDelete|Transaction|Write)Exception|MetadataChangedException|"
    r"ProtocolChangedException|DELTA_CONCURRENT_|DELTA_METADATA_CHANGED",
    re.IGNORECASE,
)
# Session settings that change what the model's SQL returns; recorded at build (see `session_settings`).
MEANING_SETTINGS = (
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.timestampType",
    "spark.sql.parser.escapedStringLiterals",
    "spark.sql.caseSensitive",
    "spark.sql.legacy.sizeOfNull",
    "spark.sql.decimalOperations.allowPrecisionLoss",
    "spark.sql.legacy.allowNegativeScaleOfDecimal",
    "spark.sql.legacy.castComplexTypesToString.enabled",
    "spark.sql.mapKeyDedupPolicy",
    "spark.sql.legacy.statisticalAggregate",
    "spark.sql.legacy.integerGroupingId",
)


class Database(Protocol):
    def execute(self, sql: str) -> None: ...

    def query(self, sql: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class SourceInfo:
    table: TableName
    columns: dict[str, str]
    provider: str
    kind: str
    properties: dict[str, str]

    @property
    def change_data_feed(self) -> bool:
        return self.properties.get("delta.enableChangeDataFeed", "").lower() == "true"


@dataclass(frozen=True)
class Outcome:
    action: str  # built | refreshed | no changes
    message: str
    path: str = ""  # how a refresh applied its changes: append | insert | merge
    inserted: int = 0
    deleted: int = 0
    versions: Mapping[str, int] = field(default_factory=dict)
    statements: tuple[str, ...] = ()


def backing_table(view: TableName) -> TableName:
    return TableName(view.db, view.name + BACKING_SUFFIX, view.catalog)


def parse_describe_extended(rows: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """(columns, details) from DESCRIBE TABLE EXTENDED rows."""
    columns: dict[str, str] = {}
    details: dict[str, str] = {}
    in_columns = True
    for row in rows:
        name, dtype = (row.get("col_name") or "").strip(), (row.get("data_type") or "").strip()
        if not name or name.startswith("#"):
            in_columns = False
            continue
        if in_columns:
            columns[name] = dtype
        else:
            details[name] = dtype
    return columns, details


def parse_properties(text: str) -> dict[str, str]:
    """'[a=1,b=2]' (DESCRIBE EXTENDED's Table Properties) -> {'a': '1', 'b': '2'}."""
    text = text.strip().strip("[]")
    out = {}
    for part in re.split(r",(?=[^,=]+=)", text):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def describe_source(db: Database, table: TableName) -> SourceInfo:
    try:
        rows = db.query(f"DESCRIBE TABLE EXTENDED {table.sql()}")
    except Exception as e:  # the database's own error type varies by connection
        raise SourceError(f"source {table} cannot be read ({_first_line(e)}); create it before building") from e
    columns, details = parse_describe_extended(rows)
    return SourceInfo(
        table=table,
        columns=columns,
        provider=details.get("Provider", "").lower(),
        kind=details.get("Type", "").upper(),
        properties=parse_properties(details.get("Table Properties", "")),
    )


def check_source(info: SourceInfo) -> None:
    t = info.table
    if info.kind == "VIEW":
        raise SourceError(
            f"source {t} is a view; fast_mv reads Delta change data feeds: "
            f"select from the Delta tables behind it, or use materialized='table'"
        )
    if info.provider != "delta":
        raise SourceError(
            f"source {t} is a {info.provider or 'non-Delta'} table, not Delta; "
            f"convert it (CONVERT TO DELTA {t.sql()}) or use materialized='table'"
        )
    if not info.change_data_feed:
        raise SourceError(
            f"source {t} has no change data feed; run: ALTER TABLE {t.sql()} "
            f"SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        )


def recent_history(db: Database, table: TableName, rows: int = HISTORY_ROWS) -> list[dict[str, Any]]:
    """The newest commits of a table, newest first: the first is the version a refresh pins."""
    return db.query(f"DESCRIBE HISTORY {table.sql()} LIMIT {rows}")


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalog shows of a table or view (SHOW TABLE EXTENDED's information)."""

    created: str  # creation time; another one means it was dropped and created again ('' where not shown)
    kind: str  # MANAGED, EXTERNAL, VIEW ('' where not shown)


def catalog_entries(db: Database, tables: Sequence[TableName]) -> dict[str, CatalogEntry]:
    """The catalog's entry of each of `tables` that exists (temporary views are not entries).

    One SHOW TABLE EXTENDED per database (catalog metadata only), so a refresh learns its
    sources' creation times and whether its view and storage exist in one statement. Not
    Delta's table id, which DESCRIBE DETAIL gives only after computing the table's whole state.
    """
    current = db.query("SELECT current_database() AS db")[0]["db"] if any(not t.db for t in tables) else ""
    by_db: dict[tuple[str | None, str], list[TableName]] = {}
    for t in tables:  # a source named without its database is in the connection's current one
        by_db.setdefault((t.catalog, t.db or current), []).append(t)
    entries = {}
    for (catalog, name), group in by_db.items():
        namespace = ".".join(render.sql(render.ident(p)) for p in (catalog, name) if p)
        pattern = "|".join(dict.fromkeys(_like(t.name) for t in group))
        rows = db.query(f"SHOW TABLE EXTENDED IN {namespace} LIKE '{pattern}'")
        found = {
            (r.get("tableName") or "").lower(): r.get("information") or ""
            for r in rows
            if str(r.get("isTemporary", "")).lower() not in ("true", "1")
        }
        for t in group:
            if t.name.lower() in found:
                info = found[t.name.lower()]
                entries[t.key] = CatalogEntry(_information(info, "Created Time"), _information(info, "Type").upper())
    return entries


def _information(text: str, item: str) -> str:
    line = re.search(rf"^{item}: (.+)$", text, re.MULTILINE)
    return line.group(1).strip() if line else ""


def created_times(db: Database, tables: Sequence[TableName]) -> dict[str, str]:
    """Each table's creation time in the catalog ('' where not shown): see `catalog_entries`."""
    entries = catalog_entries(db, tables)
    return {t.key: entries[t.key].created if t.key in entries else "" for t in tables}


def table_exists(db: Database, table: TableName) -> bool:
    rows = db.query(f"SHOW TABLES IN {render.sql(render.ident(table.db or 'default'))} LIKE '{_like(table.name)}'")
    return any((r.get("tableName") or "").lower() == table.name.lower() for r in rows)


def _like(name: str) -> str:
    # SHOW TABLES LIKE takes a pattern where * is the wildcard; names are matched case-insensitively.
    return re.sub(r"[^A-Za-z0-9_]", "*", name)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return type(e).__name__


def view_properties(db: Database, backing: TableName) -> dict[str, str]:
    rows = db.query(f"SHOW TBLPROPERTIES {backing.sql()}")
    return {r["key"]: r["value"] for r in rows}


def read_history(db: Database, backing: TableName) -> tuple[Watermark | None, int, Mapping[str, Any] | None]:
    """(the newest watermark, the table's latest version, the commit that recorded the watermark)."""
    rows = recent_history(db, backing, VIEW_HISTORY_ROWS)
    latest = int(rows[0]["version"]) if rows else -1
    mark = latest_watermark(rows)
    if mark is None and len(rows) == VIEW_HISTORY_ROWS:
        rows = db.query(f"DESCRIBE HISTORY {backing.sql()}")
        mark = latest_watermark(rows)
    commit = next((r for r in rows if mark is not None and r.get("version") == mark.commit_version), None)
    return mark, latest, commit


def describe_query(db: Database, query: exp.Select) -> dict[str, str]:
    """The Spark type of each column of `query` (DESCRIBE QUERY: planned, not run)."""
    rows = db.query(f"DESCRIBE QUERY {render.sql(query)}")
    return {str(r.get("col_name")): str(r.get("data_type")) for r in rows}


def output_types(db: Database, plan: ViewPlan) -> dict[str, str]:
    """The Spark type of each of the view's columns."""
    return describe_query(db, plan.query)


def session_setting(db: Database, key: str) -> str:
    """The session's value of one setting, as `SET key` answers it: Spark's `<undefined>` for a
    key the session has no value of ('' when the answer has no row). `session_settings` records
    it as it is (a watermark compares it across refreshes); `session_overrides` reads
    `<undefined>` as unset."""
    found = db.query(f"SET {key}")
    return str(found[0].get("value")) if found else ""


def session_settings(db: Database) -> dict[str, str]:
    """The session's values of `MEANING_SETTINGS` (one `SET -v` for all, defaults included)."""
    rows = db.query("SET -v")
    values = {str(r.get("key")): str(r.get("value")) for r in rows}
    out = {}
    for key in MEANING_SETTINGS:
        if key not in values:
            values[key] = session_setting(db, key)
        out[key] = values[key]
    return out


def encode_settings(settings: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(settings.items())), separators=(",", ":"))


def settings_changed(recorded: str | None, current: Mapping[str, str]) -> str:
    """'key: old → new, …' for each recorded setting the session now has another value of; '' if none."""
    before = json.loads(recorded) if recorded else {}
    return ", ".join(
        f"{k} {before[k]!r} → {current[k]!r}" for k in sorted(before) if k in current and before[k] != current[k]
    )


def read_watermark(db: Database, backing: TableName) -> Watermark | None:
    return read_history(db, backing)[0]


def covering_history(
    db: Database, table: TableName, start: int, end: int, pinned_history: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """Commits start..end of `table` (with some newer ones); None when more than MAX_APPEND_COMMITS.

    `pinned_history` (read when the version was pinned) usually holds those commits already.
    """
    if end - start + 1 > MAX_APPEND_COMMITS:
        return None
    if start < min((int(r["version"]) for r in pinned_history), default=start + 1):
        # Newest first; room for a few commits that landed after the version was pinned.
        return db.query(f"DESCRIBE HISTORY {table.sql()} LIMIT {end - start + 11}")
    return pinned_history


def source_appends(
    db: Database, table: TableName, start: int, end: int, pinned_history: list[dict[str, Any]]
) -> int | None:
    """Rows appended to `table` in versions start..end if it only appended there (see `history`)."""
    rows = covering_history(db, table, start, end, pinned_history)
    return None if rows is None else appended_rows(rows, start, end)


def row_counts(db: Database, tables: Mapping[str, exp.Table]) -> dict[str, int]:
    """`count(*)` of each table in one query (Delta answers it from its log, reading no data file)."""
    counts = [
        exp.select(exp.Count(this=exp.Star())).from_(table).subquery().as_(render.ident(f"n{i}"))
        for i, table in enumerate(tables.values())
    ]
    row = db.query(render.sql(exp.select(*counts)))[0]
    return {key: int(row[f"n{i}"] or 0) for i, key in enumerate(tables)}


@contextmanager
def session_overrides(db: Database, settings: Sequence[layout.Setting]) -> Iterator[None]:
    """Runs the block under `settings`, each from the session's own value, and restores the
    session's values after (unsets the ones it had not set: Spark reads them as `<undefined>`).
    No other statement on the session runs meanwhile (`SESSION_LOCK`)."""
    with SESSION_LOCK.exclusive():
        before = {s.key: session_setting(db, s.key).strip().replace("<undefined>", "") for s in settings}
        for s in settings:
            db.execute(f"SET {s.key}={s.value(before[s.key])}")
        try:
            yield
        finally:
            for key, value in before.items():
                db.execute(f"SET {key}={value}" if value else f"RESET {key}")


@contextmanager
def commit_metadata(db: Database, mark: Watermark, backing: TableName) -> Iterator[None]:
    """Record `mark` in the next commit, written idempotently with its token.

    The confs are session-wide: no other statement on the session runs while they are set
    (`SESSION_LOCK`, taken exclusively), so no other write, of another fast_mv or of any
    model of another dbt thread, is committed under them.

    Every write that records a watermark (a build, a refresh, a refresh whose changes net to
    nothing) sets Delta's idempotent-write pair: app id `dbt-ivm:<backing table>`, version
    `mark.token`. Delta skips a write whose version is not above the one last recorded for the
    app id, and rejects one that races a commit with the same app id. A refresh's token is the
    token of the watermark it read + 1 and a build's is larger than any token before it, so of
    two writers that read the same watermark only one commits: a change set is applied once,
    and a refresh that read the state before a rebuild cannot land on the rebuilt table.
    """
    confs = {
        USER_METADATA_CONF: mark.encode(),
        TXN_APP_CONF: f"dbt-ivm:{backing.key}",
        TXN_VERSION_CONF: str(mark.token),
    }
    with SESSION_LOCK.exclusive():
        for key, value in confs.items():
            db.execute(f"SET {key}={value}")
        try:
            yield
        finally:
            for key in confs:
                db.execute(f"RESET {key}")


class Maintainer:
    """One model's build or refresh. `log` receives progress lines for the run's log."""

    rules: ViewRules  # the view class's (see `classes`), set by `inspect`

    def __init__(
        self,
        db: Database,
        view: TableName,
        sql: str,
        log: Callable[[str], None] = lambda _: None,
        unique_key: str | Sequence[str] | None = None,
        functions: Sequence[str] = (),
        refresh_policy: str | None = None,
        cluster_by: str | Sequence[str] | None = None,
    ):
        self.db = db
        self.policy = parse_policy(refresh_policy)
        self.view = view
        self.backing = backing_table(view)
        self.sql = sql
        self.log = log
        self.unique_key_config = unique_key
        self.functions = tuple(functions)
        self.unique_key: tuple[str, ...] = ()
        self.cluster_by_config = cluster_by
        self.cluster_by: tuple[str, ...] = ()  # output columns, validated by `inspect` (see `layout`)
        self.statements: list[str] = []
        self.created: dict[str, str] = {}
        self.catalog: dict[str, CatalogEntry] = {}  # the sources', storage's and view's, read by `inspect`
        self.settings: dict[str, str] = {}
        self.read_version: int | None = None
        self.histories: dict[str, list[dict[str, Any]]] = {}
        self.run_id = uuid.uuid4().hex[:12]
        self.output_types: dict[str, str] = {}  # the view's column types, read by `inspect`
        self.auto_seconds = 0.0  # what refresh_policy auto's estimate took (its metadata queries)
        self.mark_commit: Mapping[str, Any] | None = None  # the history row of the watermark read
        # Rows of each source and of the storage (before this run's commit) as auto's estimate
        # took them; recorded in the new watermark (see `Watermark.rows`). None: not known.
        self.sizes: dict[str, int] | None = None
        # Called after the stored state is read and before the one write: tests force interleavings here.
        self.before_commit: Callable[[], None] = lambda: None

    def run(self, sql: str) -> None:
        self.statements.append(sql)
        self.db.execute(sql)

    # -- preparation -----------------------------------------------------------------

    def inspect(self) -> tuple[ViewPlan, dict[str, int], dict[str, str]]:
        """Validate sources and the model, and pin every source's version. Writes nothing."""
        tables = source_tables(self.sql)
        infos = [describe_source(self.db, t) for t in tables]
        for info in infos:
            check_source(info)
        plan = analyze(self.sql, {i.table.key: i.columns for i in infos}, self.functions)
        self.rules = rules_for(plan)
        self.output_types = output_types(self.db, plan)
        render.ensure_groupable(self.output_types)
        self.unique_key = render.output_columns(plan, self.unique_key_config, "unique_key")
        ranged = self.rules.ranged_columns(plan, self.output_types)
        self.cluster_by = layout.cluster_columns(plan, self.cluster_by_config, ranged, self.output_types)
        self.catalog = catalog_entries(self.db, [*plan.tables, self.backing, self.view])
        created = {t.key: self.catalog[t.key].created if t.key in self.catalog else "" for t in plan.tables}
        self.settings = session_settings(self.db)
        self.histories = {t.key: recent_history(self.db, t) for t in plan.tables}
        pinned = {key: int(rows[0]["version"]) for key, rows in self.histories.items()}
        return plan, pinned, created

    def materialize(self, full_refresh: bool = False) -> Outcome:
        plan, pinned, self.created = self.inspect()
        if self.backing.key not in self.catalog:
            return self.build(plan, pinned, "first build")
        props = view_properties(self.db, self.backing)
        mark, self.read_version, self.mark_commit = read_history(self.db, self.backing)
        if full_refresh:
            return self.build(plan, pinned, "full refresh", mark)
        reason = self._rebuild_reason(plan, props, mark)
        if reason:
            return self.rebuild(plan, pinned, reason, mark)
        if self.policy is RefreshPolicy.FULL:
            return self.build(plan, pinned, "refresh_policy 'full'", mark)
        if self.view.key not in self.catalog:  # the stored rows are sound: only the view over them is missing
            self.log(f"fast_mv {self.view}: creating the view over its stored rows again")
            user_view = self.rules.user_view(plan, self.backing, self._describe)
            self.run(render.sql(render.create_view(self.view, user_view)))
        assert mark is not None
        built_by = props.get(PROP_CLUSTER_BY, "")
        if built_by != ",".join(self.cluster_by):
            self.log(
                f"fast_mv {self.view}: cluster_by is ({', '.join(self.cluster_by)}), the stored rows are sorted by "
                f"({built_by.replace(',', ', ')}): the layout changes at the next build (--full-refresh)"
            )
        return self.refresh(plan, mark, pinned)

    def _rebuild_reason(self, plan: ViewPlan, props: Mapping[str, str], mark: Watermark | None) -> str:
        """Why the stored view cannot be refreshed, or ''."""
        if mark is None:
            return "no watermark in the stored view"
        if props.get(PROP_FORMAT) != str(FORMAT_VERSION):
            return "the stored view has an older format"
        if props.get(PROP_DEFINITION_HASH) != plan.definition_hash or mark.definition_hash != plan.definition_hash:
            return "the model or its sources' columns changed"
        if props.get(PROP_STATE, plan.state_before_recorded) != plan.hidden_names:
            return (
                "the stored view keeps other hidden columns than this version of dbt-ivm (it counts MIN/MAX's rows, "
                "and sums AVG of integers exactly)"
            )
        changed = settings_changed(props.get(PROP_SETTINGS), self.settings)
        return f"the session's settings differ from the build's: {changed}" if changed else ""

    def rebuild(self, plan: ViewPlan, pinned: Mapping[str, int], reason: str, mark: Watermark | None) -> Outcome:
        """A rebuild the run decided on (not asked for): refused under refresh_policy 'incremental'."""
        if self.policy is RefreshPolicy.INCREMENTAL:
            raise StateError(
                f"fast_mv {self.view} cannot be refreshed incrementally: {reason}; refresh_policy 'incremental' "
                "never rebuilds on its own: run dbt with --full-refresh for this model, or set refresh_policy "
                "to 'auto'"
            )
        return self.build(plan, pinned, reason, mark)

    # -- build -----------------------------------------------------------------------

    def build(
        self, plan: ViewPlan, pinned: Mapping[str, int], reason: str, previous: Watermark | None = None
    ) -> Outcome:
        """Create or replace the view's storage from the sources at the pinned versions.

        Its token is above every token before it (the clock in microseconds, and above the last
        watermark's), so a refresh that read the state before this build cannot commit after it.
        """
        self.log(f"fast_mv {self.view}: building ({reason}) at {_versions(pinned)}")
        token = max(time.time_ns() // 1000, (previous.token + 1) if previous else 0)
        sizes = self._build_sizes(plan, pinned, previous)
        mark = Watermark(dict(pinned), plan.definition_hash, self.created, token, self.run_id, rows=sizes)
        props = {
            PROP_FORMAT: str(FORMAT_VERSION),
            PROP_DEFINITION: plan.normalized_sql,
            PROP_DEFINITION_HASH: plan.definition_hash,
            PROP_VIEW_CLASS: plan.view_class.value,
            PROP_COLUMNS: ",".join(o.name for o in plan.outputs),
            PROP_MODEL_SQL: self.sql,
            PROP_SETTINGS: encode_settings(self.settings),
            PROP_FUNCTIONS: ",".join(plan.functions),
            PROP_CLUSTER_BY: ",".join(self.cluster_by),
            PROP_STATE: plan.hidden_names,
        }
        view = self.rules.user_view(plan, self.backing, self._describe)
        types = layout.stored_types(plan, self.output_types)
        rows = layout.clustered(self.rules.build_select(plan, pinned), self.cluster_by, types)
        create = render.create_backing(self.backing, rows.select, props)
        self.before_commit()
        with commit_metadata(self.db, mark, self.backing), session_overrides(self.db, rows.settings):
            self._write(render.sql(create))
        self._verify(mark)
        found = self.catalog.get(self.view.key)  # as `inspect` saw it
        if found and found.kind != "VIEW":
            self.log(f"fast_mv {self.view}: replacing the table of an earlier materialization with a view")
            self.run(f"DROP TABLE {self.view.sql()}")
        self.run(render.sql(render.create_view(self.view, view)))
        self.catalog[self.view.key] = CatalogEntry("", "VIEW")
        return Outcome(
            "built", f"built at {_versions(pinned)}", versions=dict(pinned), statements=tuple(self.statements)
        )

    # -- refresh ---------------------------------------------------------------------

    def refresh(self, plan: ViewPlan, mark: Watermark, pinned: Mapping[str, int]) -> Outcome:
        old = dict(mark.sources)
        for key, version in pinned.items():
            if key not in old:
                return self.rebuild(plan, pinned, f"no watermark for source {key}", mark)
            if mark.created.get(key) not in (None, "", self.created[key]):
                raise StateError(
                    f"source {key} was dropped and created again since fast_mv {self.view} last consumed it "
                    f"(created {mark.created[key]}, now {self.created[key] or 'unknown'}), so its change "
                    "history is gone; "
                    "run dbt with --full-refresh for this model"
                )
            if version < old[key]:
                raise StateError(
                    f"source {key} is at version {version}, older than version {old[key]} that fast_mv "
                    f"{self.view} already consumed (was it replaced or restored?); "
                    "run dbt with --full-refresh for this model"
                )
        moved = {k: (old[k], v) for k, v in pinned.items() if v > old[k]}
        if not moved:
            return Outcome("no changes", "no changes", versions=dict(pinned), statements=tuple(self.statements))
        ranges = ", ".join(f"{k} v{a}..v{b}" for k, (a, b) in moved.items())
        if self.policy is RefreshPolicy.AUTO:
            choice = self._auto(plan, mark, moved)
            self.log(f"fast_mv {self.view}: refresh_policy auto: {choice.reason}")
            if choice.rebuild:
                return self.build(plan, pinned, f"refresh_policy auto chose a rebuild for {ranges}", mark)
        sizes = self.sizes if self.sizes is not None else self._tracked_sizes(plan, mark, moved, self.histories)
        new_mark = Watermark(
            dict(pinned), plan.definition_hash, self.created, mark.token + 1, self.run_id, rows=sizes or {}
        )
        appended = self._appended(plan, moved)
        if appended is not None:
            outcome = self._append(plan, old, pinned, ranges, new_mark, appended)
            if outcome is not None:
                return outcome
        self.log(f"fast_mv {self.view}: reading changes from {ranges}")
        uid = uuid.uuid4().hex[:12]
        stage = self.rules.stages_changes(plan)
        staged = {s.index: f"__ivm_chg_{uid}_{s.index}" for s in plan.sources if stage and s.table.key in moved}
        temps = list(staged.values())

        def temp(role: str) -> str:
            temps.append(f"__ivm_{role}_{uid}")
            return temps[-1]

        try:
            self._stage_changes(plan, old, pinned, staged)
            refresh = Refresh(
                plan,
                self.backing,
                old,
                pinned,
                staged,
                temp,
                self.run,
                self.db.query,
                self._describe,
                self.unique_key,
                self._key_violation(),
                output_types=self.output_types,
                # a commit after the watermark's (an OPTIMIZE, a foreign write): its highs may be stale
                highs=mark.highs if mark.commit_version == self.read_version else None,
            )
            try:
                write = self.rules.apply(refresh)
            except Exception as e:  # the connection's error type varies; unstaged feeds are first read here
                self._raise_if_lost_history(e, ranges)
                raise
            if write.detail:
                self.log(f"fast_mv {self.view}: {write.detail}")
            self.before_commit()
            new_mark = replace(new_mark, highs=write.highs)
            with commit_metadata(self.db, new_mark, self.backing):
                self._write(render.sql(write.statement))
        finally:  # the newest first: a cached table's plan reads the ones cached before it
            for name in reversed(temps):
                self.db.execute(render.release(name))
        commit = self._verify(new_mark)
        if write.check_repeats and _matched_several(commit):
            self._repair_repeated_rows(plan, pinned, new_mark)
        if write.path == "empty":
            return Outcome(
                "no changes", f"no net changes from {ranges}", versions=dict(pinned), statements=tuple(self.statements)
            )
        inserted, deleted = _written(write, commit)
        if inserted == deleted == 0:  # e.g. an aggregate whose group deltas all cancel
            return Outcome(
                "no changes", f"no net changes from {ranges}", versions=dict(pinned), statements=tuple(self.statements)
            )
        return Outcome(
            "refreshed",
            f"refreshed: +{inserted}/-{deleted} rows from {ranges}",
            write.path,
            inserted,
            deleted,
            dict(pinned),
            tuple(self.statements),
        )

    def estimate(self) -> Choice | None:
        """What refresh_policy auto would choose if the view were refreshed now; None when no source
        moved or the view was never built. Writes nothing."""
        plan, pinned, self.created = self.inspect()
        if self.backing.key not in self.catalog:
            return None
        mark, self.read_version, self.mark_commit = read_history(self.db, self.backing)
        if mark is None:
            return None
        moved = {k: (mark.sources[k], v) for k, v in pinned.items() if v > mark.sources.get(k, v)}
        return self._auto(plan, mark, moved) if moved else None

    def _auto(self, plan: ViewPlan, mark: Watermark, moved: Mapping[str, tuple[int, int]]) -> Choice:
        """`refresh_policy` auto's choice, from metadata: the commits' metrics and the sizes."""
        started = time.time()
        try:
            return self._choose(plan, mark, moved)
        finally:
            self.auto_seconds = time.time() - started

    def _choose(self, plan: ViewPlan, mark: Watermark, moved: Mapping[str, tuple[int, int]]) -> Choice:
        histories = {
            key: covering_history(self.db, table, moved[key][0] + 1, moved[key][1], self.histories[key])
            for key, table in ((t.key, t) for t in plan.tables if t.key in moved)
        }
        # what was read again serves the append path's check of the same commits
        self.histories.update({key: rows for key, rows in histories.items() if rows is not None})
        changes = {
            key: None if rows is None else changed_rows(rows, a + 1, b)
            for key, rows in histories.items()
            for a, b in [moved[key]]
        }
        appended = all(
            rows is not None and appended_rows(rows, a + 1, b) is not None
            for key, rows in histories.items()
            for a, b in [moved[key]]
        )
        counts = self._tracked_sizes(plan, mark, moved, histories)
        if counts is None:  # a watermark without sizes, or a commit whose metrics do not say
            counts = self._counted_sizes(plan)
        self.sizes = counts
        rows = [counts[s.table.key] for s in plan.sources]
        joined = {key: sum(sum(rows) - rows[s.index] for s in plan.sources if s.table.key == key) for key in moved}
        return choose(
            Inputs(
                changes,
                joined,
                self.rules.INSERTS and appended,
                sum(rows),
                counts[self.backing.key],
                joins=len(plan.sources) > 1,
                compensates=plan.pads,
                removes=not appended,
                removes_extremes=plan.loses_extremes and not appended,
            )
        )

    def _build_sizes(self, plan: ViewPlan, pinned: Mapping[str, int], previous: Watermark | None) -> dict[str, int]:
        """The sizes a build records: the sources' as auto's estimate took them, or as the previous
        watermark carried them on to the pinned versions, or under auto counted at a first build
        (once in a view's life: from then on they are carried); the storage's start from none.
        {} if unknown."""
        sizes = self.sizes
        if sizes is None and previous is not None:
            moved = {k: (previous.sources[k], v) for k, v in pinned.items() if v > previous.sources.get(k, v)}
            sizes = self._tracked_sizes(plan, previous, moved, self.histories)
        elif sizes is None and self.policy is RefreshPolicy.AUTO:  # a first build: counted once
            sizes = self._counted_sizes(plan)
        return {**sizes, self.backing.key: 0} if sizes is not None else {}

    def _counted_sizes(self, plan: ViewPlan) -> dict[str, int]:
        """Every source's rows and the storage's (0 when it does not exist yet), in one query."""
        tables = {t.key: t.to_table() for t in plan.tables}
        if self.backing.key in self.catalog:
            tables[self.backing.key] = self.backing.to_table()
        return {self.backing.key: 0, **row_counts(self.db, tables)}

    def _tracked_sizes(
        self,
        plan: ViewPlan,
        mark: Watermark,
        moved: Mapping[str, tuple[int, int]],
        histories: Mapping[str, list[dict[str, Any]] | None],
    ) -> dict[str, int] | None:
        """Each source's rows at the pinned version and the storage's now, from the sizes `mark`
        recorded and the metrics of the commits since (`history.rows_after`), with no query;
        None when the mark recorded none or a commit's metrics do not say."""
        keys = [*(t.key for t in plan.tables), self.backing.key]
        if self.mark_commit is None or mark.commit_version is None or any(k not in mark.rows for k in keys):
            return None
        if any(t.key not in mark.sources for t in plan.tables):
            return None
        version = mark.commit_version
        sizes = {self.backing.key: rows_after(mark.rows[self.backing.key], [self.mark_commit], version, version)}
        for key in keys[:-1]:
            start, end = moved.get(key, (mark.sources[key], mark.sources[key]))
            sizes[key] = rows_after(mark.rows[key], histories.get(key) or [], start + 1, end)
        known = {k: v for k, v in sizes.items() if v is not None}
        return known if len(known) == len(sizes) else None

    def _repair_repeated_rows(self, plan: ViewPlan, pinned: Mapping[str, int], mark: Watermark) -> None:
        """A change row matched several stored rows: the declared key was broken by rows appended
        without a probe, and the MERGE just applied the change to each copy. Rebuild, then fail.

        Under every refresh_policy, `incremental` too: the commit is made, and only a rebuild makes
        the view right again; the run still fails, naming the key."""
        key = ", ".join(self.unique_key) or "(none)"
        self.build(plan, pinned, f"unique_key ({key}) repeats in the stored rows", mark)
        raise StateError(
            f"fast_mv {self.view}: unique_key ({key}) is not unique in the model's rows: an earlier refresh "
            "appended a row the view already held, and this refresh's change matched both copies. The view "
            "was rebuilt from the sources and is correct; fix the data so the key is unique, or drop "
            "unique_key from the model config"
        )

    def _describe(self, query: exp.Select) -> dict[str, str]:
        return describe_query(self.db, query)

    def _write(self, statement: str) -> None:
        """The one write of a build or refresh; losing a race to another writer fails loudly."""
        try:
            self.run(statement)
        except Exception as e:  # the connection's error type varies
            if CONCURRENT_COMMIT.search(str(e)):
                raise StateError(self._lost_race()) from e
            raise

    def _lost_race(self) -> str:
        return (
            f"another run of {self.view} (a refresh or a --full-refresh) committed first; this run wrote "
            "nothing and the view is consistent as of that run: run dbt again to catch up"
        )

    def _verify(self, mark: Watermark, rows: list[dict[str, Any]] | None = None) -> Mapping[str, Any]:
        """The history row of this run's commit. Delta skips a write whose token another writer
        already used: then the newest watermark is another run's, and this run fails loudly."""
        rows = rows or recent_history(self.db, self.backing, VIEW_HISTORY_ROWS)
        committed = latest_watermark(rows)
        if committed is None or committed.encode() != mark.encode():
            raise StateError(self._lost_race())
        return next(r for r in rows if r.get("version") == committed.commit_version)

    def _appended(self, plan: ViewPlan, moved: Mapping[str, tuple[int, int]]) -> int | None:
        """Rows the moved sources appended, when the append path applies (see `_append`); else None."""
        if not self.unique_key or not isinstance(self.rules, Appender):
            return None
        total = 0
        for key, (a, b) in moved.items():
            table = next(t for t in plan.tables if t.key == key)
            rows = source_appends(self.db, table, a + 1, b, self.histories[key])
            if rows is None:
                return None
            total += rows
        return total

    def _append(
        self,
        plan: ViewPlan,
        old: Mapping[str, int],
        pinned: Mapping[str, int],
        ranges: str,
        mark: Watermark,
        appended: int,
    ) -> Outcome | None:
        """Only appends since the watermark: one INSERT of the view's new rows, read from the feeds.

        Nothing is staged or netted and the stored rows are not read: the view is monotone, so
        appended source rows only add view rows, and the declared key makes them new rows. The
        INSERT checks the key over what it adds, and fails whole if it repeats. None, with nothing
        written, where an added row's key is NULL: the general path refreshes instead.
        """
        self.log(f"fast_mv {self.view}: appending the new rows of {ranges} (only appends since the last refresh)")
        violation = self._key_violation()
        assert isinstance(self.rules, Appender)  # `_appended` lets no other class here
        insert = self.rules.append_statement(
            plan, self.backing, old, pinned, self.unique_key, violation, broadcast=appended <= BROADCAST_ROWS
        )
        self.before_commit()
        with commit_metadata(self.db, mark, self.backing):
            try:
                self._write(render.sql(insert))
            except Exception as e:  # the connection's error type varies
                if violation in str(e):
                    raise StateError(violation) from e
                if NULL_KEY_FALLBACK in str(e):
                    self.log(
                        f"fast_mv {self.view}: an appended row's unique_key ({', '.join(self.unique_key)}) is NULL, "
                        "which the key does not cover; nothing was appended, refreshing through the general path"
                    )
                    return None
                self._raise_if_lost_history(e, ranges)
                raise
            history = recent_history(self.db, self.backing, VIEW_HISTORY_ROWS)
            # No commit at all (a write of nothing that Delta dropped): record the watermark.
            nothing_added = int(history[0]["version"]) == self.read_version
            if nothing_added:
                self._write(render.sql(render.empty_commit(self.backing)))
        commit = self._verify(mark, None if nothing_added else history)
        inserted = 0 if nothing_added else metric(commit, "numOutputRows") or 0
        if inserted == 0:  # the view's joins and filters kept none of the appended rows
            return Outcome(
                "no changes",
                f"no net changes from {ranges}",
                "append",
                versions=dict(pinned),
                statements=tuple(self.statements),
            )
        return Outcome(
            "refreshed",
            f"refreshed: +{inserted}/-0 rows from {ranges}",
            "append",
            inserted,
            0,
            dict(pinned),
            tuple(self.statements),
        )

    def _key_violation(self) -> str:
        return (
            f"fast_mv {self.view}: unique_key ({', '.join(self.unique_key)}) is not unique in the rows "
            "this refresh adds; nothing was written: fix the data or drop unique_key from the model config"
        )

    @staticmethod
    def _raise_if_lost_history(e: Exception, ranges: str) -> None:
        """A change feed that can no longer be read fails as the error that says what to do."""
        if LOST_HISTORY.search(str(e)):
            raise StateError(
                f"the change history of {ranges} is no longer readable ({_first_line(e)}): it was vacuumed, "
                "or change data feed was off for part of it; run dbt with --full-refresh for this model"
            ) from e

    def _stage_changes(
        self, plan: ViewPlan, old: Mapping[str, int], new: Mapping[str, int], staged: Mapping[int, str]
    ) -> None:
        """Evaluate each moved source's net change once; lost history fails loudly here."""
        for index, temp in staged.items():
            source = plan.sources[index]
            key = source.table.key
            try:
                self.run(render.cache_as(temp, changes.change_select(source, old[key] + 1, new[key])))
            except Exception as e:  # the connection's error type varies
                self._raise_if_lost_history(e, f"{key} v{old[key]}..v{new[key]}")
                raise


def _matched_several(commit: Mapping[str, Any]) -> bool:
    """A MERGE in which some source row matched more than one target row (from its metrics):
    every source row is either inserted or matches, so matches + inserts exceed the source rows."""
    source = metric(commit, "numSourceRows")
    matched = sum(metric(commit, m) or 0 for m in ("numTargetRowsMatchedUpdated", "numTargetRowsMatchedDeleted"))
    return source is not None and matched + (metric(commit, "numTargetRowsInserted") or 0) > source


def _written(write: Write, commit: Mapping[str, Any]) -> tuple[int, int]:
    """(rows inserted, rows deleted) of the view: the class's count, else the MERGE's metrics
    (an aggregate view's rows are its groups: a new group is inserted, an emptied one deleted)."""
    inserted = write.inserted if write.inserted is not None else metric(commit, "numTargetRowsInserted") or 0
    deleted = write.deleted if write.deleted is not None else metric(commit, "numTargetRowsDeleted") or 0
    updated = 0 if write.inserted is not None else metric(commit, "numTargetRowsUpdated") or 0
    return inserted + updated, deleted + updated


def _versions(versions: Mapping[str, int]) -> str:
    return ", ".join(f"{k} v{v}" for k, v in versions.items())


def materialize(
    db: Database,
    view: TableName,
    sql: str,
    full_refresh: bool = False,
    log: Callable[[str], None] = lambda _: None,
    unique_key: str | Sequence[str] | None = None,
    functions: Sequence[str] = (),
    refresh_policy: str | None = None,
    cluster_by: str | Sequence[str] | None = None,
) -> Outcome:
    maintainer = Maintainer(db, view, sql, log, unique_key, functions, refresh_policy, cluster_by)
    return maintainer.materialize(full_refresh)


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
    infos = [describe_source(db, t) for t in source_tables(stored.definition)]
    consumed = ", ".join(f"{k} v{v}" for k, v in stored.mark.sources.items())
    schema = {i.table.key: i.columns for i in infos}
    storage = f"storage: sorted by ({', '.join(stored.cluster_by)}) at its last build\n" if stored.cluster_by else ""
    return f"view: {view} (consumed {consumed})\n{storage}" + explain(stored.definition, schema, stored.functions)


def consistency_sql(db: Database, view: TableName) -> str:
    """The fast_mv_consistent test's query: rows where the view and the model's own SQL, run on
    the source versions the view last consumed, differ."""
    stored = stored_view(db, view)
    columns, _ = parse_describe_extended(db.query(f"DESCRIBE TABLE {view.sql()}"))
    return render.consistency_sql(view, render.pin_versions(stored.model_sql, stored.mark.sources), columns)
