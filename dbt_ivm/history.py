"""What a source's Delta history says about its changes, before any change row is read.

DESCRIBE HISTORY is metadata: one row per commit, read from the log without scanning data.
A refresh uses it to learn that a source only appended rows since the view last consumed it,
which lets the view's new rows be appended straight from the change feed (see
`joins.append_statement`) instead of staging, netting and merging them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

# Commits that change no rows, so they add nothing to the change feed.
NO_DATA_OPERATIONS = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})
# Commits that keep every row of a table as it was: they rewrite files (dataChange=false) or
# change its metadata only. A schema change is not one (the rows' columns change), nor DROP
# FEATURE (it may truncate the history), nor any operation not named here.
KEEPS_ROWS = NO_DATA_OPERATIONS | frozenset(
    {
        "REORG",
        "SET TBLPROPERTIES",
        "UNSET TBLPROPERTIES",
        "ADD CONSTRAINT",
        "DROP CONSTRAINT",
        "UPGRADE PROTOCOL",
        "COMPUTE STATS",
        "CLUSTER BY",
        "EMPTY COMMIT",
    }
)


def metric(row: Mapping[str, Any], name: str) -> int | None:
    """An operation metric of a DESCRIBE HISTORY row: a map in a Spark session, text over thrift."""
    metrics = row.get("operationMetrics")
    if isinstance(metrics, Mapping):
        value = metrics.get(name)
    else:
        found = re.search(rf'"?{re.escape(name)}"?\s*(?:->|:|=)\s*"?(\d+)', str(metrics or ""))
        value = found.group(1) if found else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def commit_time(row: Mapping[str, Any]) -> str:
    """A DESCRIBE HISTORY row's commit time, to the millisecond Delta records (a datetime in a
    Spark session, text over thrift: the same text either way)."""
    value = row.get("timestamp")
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    return value.isoformat(sep=" ", timespec="milliseconds") if isinstance(value, datetime) else ""


def holds_commit(history: Iterable[Mapping[str, Any]], version: int | None, at: str) -> bool:
    """Whether `history` holds commit `version` made at time `at` (`commit_time`): the same Delta
    table as the one that made it. A replace (CREATE OR REPLACE, REPLACE … AS SELECT) keeps a
    table's commits; a table dropped and created again under the name starts new ones."""
    return bool(at) and any(int(r["version"]) == version and commit_time(r) == at for r in history)


def _is_true(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def _commits(history: Iterable[Mapping[str, Any]], start: int, end: int) -> list[Mapping[str, Any]] | None:
    """The commits of versions start..end, or None when `history` misses one."""
    commits = {int(r["version"]): r for r in history if start <= int(r["version"]) <= end}
    return list(commits.values()) if len(commits) == end - start + 1 else None


def appended_rows(history: Iterable[Mapping[str, Any]], start: int, end: int) -> int | None:
    """Rows appended in versions start..end when every commit there only appended; else None.

    A blind append (Delta's `isBlindAppend`) only adds files and read nothing of the table, so
    its change rows are all inserts. Commits that change no rows (OPTIMIZE, VACUUM) add none.
    Anything else (UPDATE, DELETE, MERGE, overwrite, an append that read the table, a commit
    missing from `history`) may remove rows: None, and the refresh takes the general path.
    """
    commits = _commits(history, start, end)
    if commits is None:
        return None
    total = 0
    for row in commits:
        if _is_true(row.get("isBlindAppend")):
            rows = metric(row, "numOutputRows")
            if rows is None:
                return None
            total += rows
        elif str(row.get("operation") or "").upper() not in NO_DATA_OPERATIONS:
            return None
    return total


# Per operation, the metrics that count its change rows (an updated row is a pre and a post image).
_CHANGE_METRICS: Mapping[str, tuple[tuple[str, int], ...]] = {
    "DELETE": (("numDeletedRows", 1),),
    "UPDATE": (("numUpdatedRows", 2),),
    "MERGE": (
        ("numTargetRowsInserted", 1),
        ("numTargetRowsUpdated", 2),
        ("numTargetRowsDeleted", 1),
    ),
}


def changed_rows(history: Iterable[Mapping[str, Any]], start: int, end: int) -> int | None:
    """Change-feed rows of versions start..end as the commits' metrics count them; None if unknown.

    An estimate for `refresh_policy: auto`, never for correctness: appends count their output
    rows, deletes, updates and merges the rows they removed and rewrote. A commit missing from
    `history`, or one whose metrics do not say (a whole-table delete that dropped files, an
    overwrite), leaves the size unknown.
    """
    commits = _commits(history, start, end)
    if commits is None:
        return None
    total = 0
    for row in commits:
        operation = str(row.get("operation") or "").upper()
        if operation in NO_DATA_OPERATIONS:
            continue
        parts = (("numOutputRows", 1),) if _appends(row, operation) else _CHANGE_METRICS.get(operation, ())
        counted = _weighted(row, parts) if parts else None
        if counted is None:
            return None
        total += counted
    return total


def keeps_rows(history: Iterable[Mapping[str, Any]], start: int, end: int) -> bool:
    """Every commit of versions start..end kept the table's rows as they were (`KEEPS_ROWS`: an
    OPTIMIZE, a ZORDER, a REORG … PURGE, a property set), so its change feed over them is empty;
    False when `history` misses one."""
    return _only(history, start, end, KEEPS_ROWS)


# Commits that change rows, or none, and never a table property (so neither its change data feed):
# what may move a source whose description a run takes from its watermark (`inspection`).
KEEPS_PROPERTIES = NO_DATA_OPERATIONS | frozenset({"WRITE", "MERGE", "UPDATE", "DELETE", "STREAMING UPDATE", "REORG"})


def keeps_properties(history: Iterable[Mapping[str, Any]], start: int, end: int) -> bool:
    """Every commit of versions start..end is one of `KEEPS_PROPERTIES`; False when `history`
    misses one."""
    return _only(history, start, end, KEEPS_PROPERTIES)


def _only(history: Iterable[Mapping[str, Any]], start: int, end: int, operations: frozenset[str]) -> bool:
    commits = _commits(history, start, end)
    return commits is not None and all(_operation(c) in operations for c in commits)


def matched_several(commit: Mapping[str, Any]) -> bool:
    """A MERGE in which some source row matched more than one target row (from its metrics):
    every source row is either inserted or matches, so matches + inserts exceed the source rows."""
    source = metric(commit, "numSourceRows")
    matched = sum(metric(commit, m) or 0 for m in ("numTargetRowsMatchedUpdated", "numTargetRowsMatchedDeleted"))
    return source is not None and matched + (metric(commit, "numTargetRowsInserted") or 0) > source


def written(commit: Mapping[str, Any], inserted: int | None, deleted: int | None) -> tuple[int, int]:
    """(rows inserted, rows deleted) of a view by its write's `commit`: the class's counts where
    it knows them, else the MERGE's metrics (an aggregate view's rows are its groups: a new group
    is inserted, an emptied one deleted; an updated row counts as one deleted and one inserted)."""
    added = inserted if inserted is not None else metric(commit, "numTargetRowsInserted") or 0
    removed = deleted if deleted is not None else metric(commit, "numTargetRowsDeleted") or 0
    updated = 0 if inserted is not None else metric(commit, "numTargetRowsUpdated") or 0
    return added + updated, removed + updated


def _appends(row: Mapping[str, Any], operation: str) -> bool:
    """A commit that only added rows: a blind append, or a WRITE in append mode (INSERT … SELECT)."""
    return _is_true(row.get("isBlindAppend")) or (operation == "WRITE" and _mode(row) == "append")


def _weighted(row: Mapping[str, Any], parts: Iterable[tuple[str, int]]) -> int | None:
    """The sum of each metric times its weight; None when a metric is missing."""
    total = 0
    for name, weight in parts:
        value = metric(row, name)
        if value is None:
            return None
        total += weight * value
    return total


def _mode(row: Mapping[str, Any]) -> str:
    """A WRITE's save mode (append, overwrite), from its parameters."""
    return _parameter(row, "mode").lower()


def _parameter(row: Mapping[str, Any], name: str) -> str:
    """An operation parameter of a DESCRIBE HISTORY row ('' when absent or null): a map in a
    Spark session, text over thrift."""
    params = row.get("operationParameters")
    if isinstance(params, Mapping):
        value = params.get(name)
        return "" if value is None else str(value).strip('"')
    found = re.search(rf'"?{re.escape(name)}"?\s*(?:->|:|=)\s*"?([\w:.+ -]*\w)', str(params or ""))
    return found.group(1) if found and found.group(1) not in ("null", "None") else ""


def _overwrites_all(row: Mapping[str, Any]) -> bool:
    """A WRITE that overwrote the whole table (no replaceWhere predicate)."""
    params = row.get("operationParameters")
    if isinstance(params, Mapping):
        partial = params.get("predicate") is not None
    else:
        partial = re.search(r'"?predicate"?\s*(?:->|:|=)', str(params or "")) is not None
    return _mode(row) == "overwrite" and not partial


def _operation(row: Mapping[str, Any]) -> str:
    return str(row.get("operation") or "").upper()


def _describe(row: Mapping[str, Any]) -> str:
    """'DELETE at v8', 'RESTORE to version 3 at v9': a commit as a log line names it."""
    operation, version = _operation(row), int(row["version"])
    if operation == "RESTORE":
        target = _parameter(row, "version") or _parameter(row, "timestamp")
        return f"RESTORE to {'version ' if _parameter(row, 'version') else ''}{target} at v{version}"
    if operation == "WRITE":
        return f"WRITE ({_mode(row) or 'unknown mode'}) at v{version}"
    return f"{operation or 'an unnamed commit'} at v{version}"


def commits_after(history: Iterable[Mapping[str, Any]], version: int) -> str:
    """The commits of `history` after `version`, oldest first, named ('OPTIMIZE at v7, …')."""
    rows = sorted((r for r in history if int(r["version"]) > version), key=lambda r: int(r["version"]))
    return ", ".join(_describe(r) for r in rows)


def changed_since(history: Iterable[Mapping[str, Any]], version: int, latest: int) -> str:
    """The commits after `version` up to `latest` that may have left the table's rows other than
    they were at `version`, named ('DELETE at v8, …'); '' when its rows at `latest` are those of
    `version`.

    A commit that keeps every row (`KEEPS_ROWS`) keeps them as they were; a RESTORE to a version
    whose rows were those of `version` brings them back. Anything else may have changed them:
    a write, a delete, an update, a merge, a schema change, a RESTORE to another version or by
    timestamp, an operation not known here, a commit missing from `history`.
    """
    commits = {int(r["version"]): r for r in history if version < int(r["version"]) <= latest}
    same = {version}  # versions whose rows are those of `version`
    for v in range(version + 1, latest + 1):
        row = commits.get(v)
        if row is None:
            continue
        operation = _operation(row)
        restored = _parameter(row, "version") if operation == "RESTORE" else ""
        if (operation in KEEPS_ROWS and v - 1 in same) or (restored.isdigit() and int(restored) in same):
            same.add(v)
    if latest in same:
        return ""
    since = max(same)
    named = [
        _describe(commits[v]) if v in commits else f"v{v} (not in the history read)"
        for v in range(since + 1, latest + 1)
        if v not in commits or _operation(commits[v]) not in KEEPS_ROWS
    ]
    return ", ".join(named)


# Operations that replace a table's rows wholesale: the change feed of such a commit holds every
# row before it (deleted) and every row after it (inserted).
_REPLACES_ROWS = frozenset(
    {
        "CREATE OR REPLACE TABLE AS SELECT",
        "REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE",
        "REPLACE TABLE",
        "TRUNCATE",
        "RESTORE",
    }
)


def replaced(history: Iterable[Mapping[str, Any]], start: int, end: int) -> str:
    """The commits of versions start..end that replaced the table's rows wholesale (a CREATE OR
    REPLACE, a REPLACE, an overwrite of the whole table, a TRUNCATE, a RESTORE), named; '' when
    none in `history` did."""
    named = [
        _describe(r)
        for r in sorted(history, key=lambda r: int(r["version"]))
        if start <= int(r["version"]) <= end
        and (_operation(r) in _REPLACES_ROWS or (_operation(r) == "WRITE" and _overwrites_all(r)))
    ]
    return ", ".join(named)


# Operations that replace the whole table: its rows after are their output rows.
_REPLACING = frozenset({"CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"})


def rows_after(before: int, history: Iterable[Mapping[str, Any]], start: int, end: int) -> int | None:
    """A table's rows after versions start..end, from its rows `before` them and the commits'
    metrics; None when a commit is missing from `history` or its metrics do not say.

    For `refresh_policy: auto`'s sizes (`inspection.tracked_sizes`), never for correctness. Appends
    add their output rows, deletes take their deleted rows, updates change no count, merges add
    their inserted and take their deleted rows, a CREATE OR REPLACE … AS SELECT sets them; an
    overwrite, a RESTORE, a TRUNCATE or anything else leaves the count unknown.
    """
    commits = _commits(history, start, end)
    if commits is None:
        return None
    rows = before
    for row in sorted(commits, key=lambda r: int(r["version"])):
        operation = str(row.get("operation") or "").upper()
        if operation in NO_DATA_OPERATIONS or operation == "UPDATE":
            continue
        parts: tuple[tuple[str, int], ...] = ()
        if operation in _REPLACING:
            rows, parts = 0, (("numOutputRows", 1),)
        elif _appends(row, operation):
            parts = (("numOutputRows", 1),)
        elif operation == "DELETE":
            parts = (("numDeletedRows", -1),)
        elif operation == "MERGE":
            parts = (("numTargetRowsInserted", 1), ("numTargetRowsDeleted", -1))
        added = _weighted(row, parts) if parts else None
        if added is None:
            return None
        rows += added
    return rows


# Schema changes after which a column's name may stand for other values than the change feed says:
# a dropped column added back reads NULL in every row, a renamed one another column's values, and
# neither commit writes a change row.
_RESHAPES = frozenset({"DROP COLUMNS", "RENAME COLUMN", "REPLACE COLUMNS"})


def reshaped(history: Iterable[Mapping[str, Any]], start: int, end: int, columns: Iterable[str]) -> str:
    """The commits of versions start..end that dropped or renamed one of `columns` (the columns a
    view reads), named with the column ('DROP COLUMNS at v5 (amt)'); '' when none in `history` did.

    Conservative: a column is taken as touched when its name appears among the commit's
    parameters (a map in a Spark session, text over thrift), case-insensitively."""
    named = []
    for row in sorted(history, key=lambda r: int(r["version"])):
        if not start <= int(row["version"]) <= end or _operation(row) not in _RESHAPES:
            continue
        params = row.get("operationParameters")
        text = " ".join(map(str, params.values())) if isinstance(params, Mapping) else str(params or "")
        touched = [c for c in columns if re.search(rf"(?<![\w$]){re.escape(c)}(?![\w$])", text, re.IGNORECASE)]
        if touched or _operation(row) == "REPLACE COLUMNS":
            named.append(f"{_describe(row)} ({', '.join(touched) or 'every column'})")
    return ", ".join(named)
