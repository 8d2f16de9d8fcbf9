"""What a run reads of the catalog and of Delta's history, and nothing it writes: the sources'
descriptions, creation times and commits, the storage's properties and watermark, the session's
settings, row counts. Every function takes a `Database` and only queries."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp

from dbt_ivm import known_properties, render
from dbt_ivm.configuration import Configuration, recorded
from dbt_ivm.errors import SourceError, UnsupportedView
from dbt_ivm.history import changed_since
from dbt_ivm.ir import TableName, Upstream, ViewPlan
from dbt_ivm.metadata import PROP_FORMAT, Watermark, latest_watermark
from dbt_ivm.upstream import parse_upstream

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


ERROR_KIND = re.compile(r"(Runtime|Database|Compilation|Internal|Dbt\w*) Error")
# A JVM error through py4j (an embedded session) begins with the call; the error is on the next line.
PY4J_CALL = re.compile(r"An error occurred while calling [\w.]+")


class FeedOff(SourceError):
    """An upstream fast_mv's storage has no change data feed: the downstream turns it on (one
    commit that keeps every row) and reads the upstream's changes from then on."""

    def __init__(self, tables: tuple[TableName, ...]):
        self.tables = tables
        super().__init__(f"no change data feed on {', '.join(map(str, tables))}")


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
    view_text: str = ""  # a view's SELECT, as Spark keeps it

    @property
    def change_data_feed(self) -> bool:
        return self.properties.get("delta.enableChangeDataFeed", "").lower() == "true"


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
        raise SourceError(f"source {table} cannot be read ({first_line(e)}); create it before building") from e
    columns, details = parse_describe_extended(rows)
    return SourceInfo(
        table=table,
        columns=columns,
        provider=details.get("Provider", "").lower(),
        kind=details.get("Type", "").upper(),
        properties=parse_properties(details.get("Table Properties", "")),
        view_text=details.get("View Text", ""),
    )


def check_source(info: SourceInfo) -> None:
    t = info.table
    if info.kind == "VIEW":
        raise SourceError(
            f"source {t} is a view, and not a fast_mv's; fast_mv reads Delta change data feeds: if it is a "
            f"dbt model, make it materialized='ephemeral' (dbt inlines it) or 'fast_mv'; else select from "
            f"the Delta tables behind it, or use materialized='table'"
        )
    if info.provider != "delta":
        raise SourceError(
            f"source {t} is a {info.provider or 'non-Delta'} table, not Delta; "
            f"convert it (CONVERT TO DELTA {t.sql()}) or use materialized='table'"
        )
    if not info.change_data_feed:
        raise SourceError(
            f"source {t} has no change data feed; run: ALTER TABLE {t.sql()} "
            f"SET TBLPROPERTIES (delta.enableChangeDataFeed = true) (for a dbt model, set "
            f"tblproperties: {{'delta.enableChangeDataFeed': 'true'}} in its config)"
        )


def upstreams(infos: Sequence[SourceInfo]) -> dict[str, Upstream]:
    """The sources that are fast_mv views (`upstream.parse_upstream`), by key."""
    found = {}
    for info in infos:
        upstream = parse_upstream(info.table, info.view_text) if info.kind == "VIEW" else None
        if upstream is not None:
            found[info.table.key] = upstream
    return found


def checked_upstreams(db: Database, infos: Sequence[SourceInfo]) -> tuple[dict[str, Upstream], list[TableName]]:
    """`upstreams`, each one's storage checked to be a fast_mv's Delta table (else a SourceError),
    and the storages whose change data feed is off."""
    found, off = upstreams(infos), []
    for key, upstream in found.items():
        storage = describe_source(db, upstream.storage)
        if storage.provider != "delta" or PROP_FORMAT not in storage.properties:
            raise SourceError(
                f"source {key} reads {upstream.storage}, which is not a fast_mv's storage; "
                "select from Delta tables or fast_mv models"
            )
        if not storage.change_data_feed:
            off.append(upstream.storage)
    return found, off


def recent_history(db: Database, table: TableName, rows: int = HISTORY_ROWS) -> list[dict[str, Any]]:
    """The newest commits of a table, newest first: the first is the version a refresh pins."""
    return db.query(f"DESCRIBE HISTORY {table.sql()} LIMIT {rows}")


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalog shows of a table or view (SHOW TABLE EXTENDED's information)."""

    created: str  # creation time; another one means it was dropped and created again ('' where not shown)
    kind: str  # MANAGED, EXTERNAL, VIEW ('' where not shown)
    provider: str = ""  # delta, parquet, … ('' where not shown)


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
                created, kind = _information(info, "Created Time"), _information(info, "Type").upper()
                entries[t.key] = CatalogEntry(created, kind, _information(info, "Provider").lower())
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


def first_line(e: BaseException) -> str:
    """The first line of an error that says something: a connection's error (dbt's) begins with
    its kind alone ("Runtime Error", "Database Error"), the server's message on the lines after."""
    lines = [line.strip().removeprefix(": ") for line in str(e).strip().splitlines() if line.strip()]
    said = [line for line in lines if not ERROR_KIND.fullmatch(line) and not PY4J_CALL.fullmatch(line)]
    return (said or lines or [type(e).__name__])[0][:400]


def view_properties(db: Database, backing: TableName) -> dict[str, str]:
    rows = db.query(f"SHOW TBLPROPERTIES {backing.sql()}")
    return {r["key"]: r["value"] for r in rows}


@dataclass(frozen=True)
class Stored:
    """The view's storage as a run finds it: its properties and its newest watermark."""

    properties: Mapping[str, str]
    mark: Watermark | None  # None: no commit carries one (not built by fast_mv, or its history lost)
    latest: int  # the storage's latest version
    mark_commit: Mapping[str, Any] | None  # the history row of the commit that recorded `mark`
    # the storage's commits after the watermark's that may have changed its rows, named ('' when none did)
    changed: str
    configured: Configuration | None = None  # the configuration last recorded (`configuration.recorded`)


def read_stored(
    db: Database,
    backing: TableName,
    history: Sequence[Mapping[str, Any]] | None = None,
    guess: Mapping[str, str] | None = None,
) -> Stored:
    """The storage's properties and watermark.

    Every commit fast_mv writes carries a watermark, so a commit after the newest one was
    written by someone else: an OPTIMIZE keeps the rows the watermark describes, a RESTORE, a
    DELETE by hand or a schema change may not (`history.changed_since`). `history`: its newest
    VIEW_HISTORY_ROWS commits, when read already. The properties are read unless the watermark
    recorded them and they are `guess` (`known_properties.known`)."""
    mark, rows = _watermark(db, backing, history)
    latest = int(rows[0]["version"]) if rows else -1
    properties = known_properties.known(mark, latest, guess) or view_properties(db, backing)
    if mark is None or mark.commit_version is None:
        return Stored(properties, mark, latest, None, "")
    commit = next((r for r in rows if r.get("version") == mark.commit_version), None)
    changed = changed_since(rows, mark.commit_version, latest)
    return Stored(properties, mark, latest, commit, changed, recorded(rows))


def describe_query(db: Database, query: exp.Query) -> dict[str, str]:
    """The Spark type of each column of `query` (DESCRIBE QUERY: planned, not run)."""
    rows = db.query(f"DESCRIBE QUERY {render.sql(query)}")
    return {str(r.get("col_name")): str(r.get("data_type")) for r in rows}


def describe_together(
    db: Database, tables: Sequence[TableName], model: exp.Query
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Each of `tables`' columns and types, and the model's (as `describe_query` gives them), in
    one DESCRIBE QUERY: the tables' and the model's columns side by side, each part after a
    marker column (planned, not run: each table is read as no rows)."""
    markers = [f"__ivm_part_{n}" for n in range(len(tables) + 1)]
    parts: list[exp.Expr] = [exp.select("*").from_(t.to_table()).limit(0) for t in tables]
    parts.append(model)
    columns: list[exp.Expr] = []
    for marker, n in zip(markers, range(len(parts)), strict=True):
        columns += [
            exp.alias_(exp.Literal.number(1), marker),
            exp.Column(this=exp.Star(), table=exp.to_identifier(f"p{n}")),
        ]
    query = exp.select(*columns).from_(exp.Subquery(this=parts[0], alias=exp.TableAlias(this=exp.to_identifier("p0"))))
    for n, part in enumerate(parts[1:], 1):
        query = query.join(
            exp.Subquery(this=part, alias=exp.TableAlias(this=exp.to_identifier(f"p{n}"))), join_type="cross"
        )
    rows = db.query(f"DESCRIBE QUERY {render.sql(query)}")
    split: list[list[tuple[str, str]]] = []
    for row in rows:
        name, dtype = str(row.get("col_name")), str(row.get("data_type"))
        if len(split) < len(markers) and name == markers[len(split)]:
            split.append([])
        elif split:
            split[-1].append((name, dtype))
    assert len(split) == len(markers), rows  # every marker is a column of the query
    return {t.key: dict(cols) for t, cols in zip(tables, split, strict=False)}, dict(split[-1])


NAME_THEM = "name every column with AS (and report the model to dbt-ivm)"


def output_types(
    db: Database, plan: ViewPlan, model: exp.Query, described: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The Spark type of each of the view's columns, as Spark reads the model's SQL as written
    (`model`, the tree `analyze` read): SQL Spark rejects fails here with Spark's own error, even
    where the analysis read it (a SELECT alias used in a window's PARTITION BY or in WHERE).
    `described`: those types, described already (`describe_together`)."""
    types = dict(described) if described is not None else describe_query(db, model)
    if list(types) != [o.name for o in plan.outputs]:
        named = ", ".join(o.name for o in plan.outputs)
        raise UnsupportedView(f"columns Spark names {', '.join(types)} where the analysis read {named}", NAME_THEM)
    return types


def session_setting(db: Database, key: str) -> str:
    """The session's value of one setting, as `SET key` answers it: Spark's `<undefined>` for a
    key the session has no value of ('' when the answer has no row). `session_settings` records
    it as it is (a watermark compares it across refreshes); `session_overrides` reads
    `<undefined>` as unset."""
    found = db.query(f"SET {key}")
    return str(found[0].get("value")) if found else ""


# Setting -> its default, per Spark server (`_server`): a default cannot change while the server
# runs, so each process asks a server for them once (`session_settings`), or reads them from a
# watermark a run on the same server wrote (`server_defaults`).
_DEFAULTS: dict[str, dict[str, str]] = {}
# What names a server (a running Spark application) in `SET`'s answer: its id, which a local
# session makes of the clock's milliseconds, with its driver's address, which two at once do not share
SERVER_KEYS = ("spark.app.id", "spark.driver.host", "spark.driver.port")
SERVER = "__ivm.server"  # `session_settings`' answer: the server (`_server`)
SCRIPTING = "spark.sql.scripting.enabled"  # SQL scripts (BEGIN … END) run as one statement (`batch`)
# Spark skips a cached table's batch by its columns' bounds, and a DOUBLE or FLOAT column's bounds
# leave NaN out (SPARK-58482, open in 4.1): `x > 0.7` over a cached change set loses its NaN rows,
# which are greater than any number. A refresh turns it off before it caches (`before_caching`).
CACHE_PRUNING = "spark.sql.inMemoryColumnarStorage.partitionPruning"


def session_settings(db: Database, recorded: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The session's values of `MEANING_SETTINGS`, `SCRIPTING` and `CACHE_PRUNING`, in one `SET` (the settings
    the session has a value of; a setting it has none of has its default), and the server under
    `SERVER`. The defaults are known from an earlier run of this process on the server, or from
    `recorded` (`server_defaults` of a run on the same server, read from the storage's watermark);
    else this run learns them (`SET -v`, and `SET key` for the internal settings it does not list)
    and keeps them for the server's next runs."""
    explicit = _explicit(db)
    server = _server(explicit)
    keys = (*MEANING_SETTINGS, SCRIPTING)
    if server and recorded and recorded.get("srv") == server and isinstance(recorded.get("v"), Mapping):
        _DEFAULTS[server] = {**{str(k): str(v) for k, v in recorded["v"].items()}, **_DEFAULTS.get(server, {})}
    defaults = _DEFAULTS.get(server, {}) if server else {}
    if any(k not in explicit and k not in defaults for k in keys):
        defaults = {**defaults, **_defaults(db, [k for k in keys if k not in explicit])}
        if server:
            again = _explicit(db)  # another thread may have set one meanwhile (under `session`)
            _DEFAULTS[server] = {k: v for k, v in defaults.items() if k not in again}
    found = {k: explicit[k] if k in explicit else defaults[k] for k in keys}
    return found | {CACHE_PRUNING: explicit.get(CACHE_PRUNING, "true"), SERVER: server}  # unset: on


def server_defaults(settings: Mapping[str, str]) -> dict[str, Any] | None:
    """What a watermark records of the server's defaults that this process knows (`Watermark.defaults`),
    from `session_settings`' answer; None where it knows none."""
    server = settings.get(SERVER, "")
    known = _DEFAULTS.get(server) if server else None
    return {"srv": server, "v": dict(sorted(known.items()))} if known else None


def _explicit(db: Database) -> dict[str, str]:
    """The settings the session has a value of (`SET`)."""
    return {str(r.get("key")): str(r.get("value")) for r in db.query("SET")}


def _server(explicit: Mapping[str, str]) -> str:
    """The server `SET`'s answer names (`SERVER_KEYS`); '' without an application id."""
    return " ".join(explicit.get(k, "") for k in SERVER_KEYS) if explicit.get(SERVER_KEYS[0]) else ""


def _defaults(db: Database, keys: Sequence[str]) -> dict[str, str]:
    """The values of `keys`, settings the session has no value of: their defaults."""
    listed = {str(r.get("key")): str(r.get("value")) for r in db.query("SET -v")}
    return {k: listed[k] if k in listed else session_setting(db, k) for k in keys}


def meaning(settings: Mapping[str, str]) -> dict[str, str]:
    """The settings a build records (`MEANING_SETTINGS`), of `session_settings`' answer."""
    return {k: settings[k] for k in MEANING_SETTINGS if k in settings}


def scripts(settings: Mapping[str, str]) -> bool:
    """Whether the server runs SQL scripts, from `session_settings`' answer."""
    return settings.get(SCRIPTING, "").strip().lower() == "true"


def before_caching(settings: Mapping[str, str]) -> tuple[str, ...]:
    """What a refresh sets before it caches, from `session_settings`' answer: pruning by bounds off
    (`CACHE_PRUNING`) where the session has it on. For the session: a reset could race another
    thread's refresh, and off is only slower, on cached tables."""
    return () if settings.get(CACHE_PRUNING, "true").strip().lower() == "false" else (f"SET {CACHE_PRUNING}=false",)


def encode_settings(settings: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(settings.items())), separators=(",", ":"))


def settings_changed(recorded: str | None, current: Mapping[str, str]) -> str:
    """'key: old → new, …' for each recorded setting the session now has another value of; '' if none."""
    before = json.loads(recorded) if recorded else {}
    return ", ".join(
        f"{k} {before[k]!r} → {current[k]!r}" for k in sorted(before) if k in current and before[k] != current[k]
    )


def _watermark(
    db: Database, backing: TableName, history: Sequence[Mapping[str, Any]] | None = None
) -> tuple[Watermark | None, list[dict[str, Any]]]:
    """The storage's newest watermark and the history rows read for it (newest first): the last
    few commits (`history` when read already), or all of them when none of those carries one."""
    rows = [dict(r) for r in history] if history is not None else recent_history(db, backing, VIEW_HISTORY_ROWS)
    mark = latest_watermark(rows)
    if mark is None and len(rows) == VIEW_HISTORY_ROWS:
        rows = db.query(f"DESCRIBE HISTORY {backing.sql()}")
        mark = latest_watermark(rows)
    return mark, rows


def read_watermark(db: Database, backing: TableName) -> Watermark | None:
    return _watermark(db, backing)[0]


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


def row_counts(db: Database, tables: Mapping[str, exp.Table]) -> dict[str, int]:
    """`count(*)` of each table in one query (Delta answers it from its log, reading no data file)."""
    counts = [
        exp.select(exp.Count(this=exp.Star())).from_(table).subquery().as_(render.ident(f"n{i}"))
        for i, table in enumerate(tables.values())
    ]
    row = db.query(render.sql(exp.select(*counts)))[0]
    return {key: int(row[f"n{i}"] or 0) for i, key in enumerate(tables)}
