"""What a source's Delta history says about its changes, before any change row is read.

DESCRIBE HISTORY is metadata: one row per commit, read from the log without scanning data.
A refresh uses it to learn that a source only appended rows since the view last consumed it,
which lets the view's new rows be appended straight from the change feed (see
`joins.append_statement`) instead of staging, netting and merging them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# Commits that change no rows, so they add nothing to the change feed.
NO_DATA_OPERATIONS = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})


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
    """A WRITE's save mode (append, overwrite), from its parameters: a map, or text over thrift."""
    params = row.get("operationParameters")
    if isinstance(params, Mapping):
        return str(params.get("mode") or "").lower()
    found = re.search(r'"?mode"?\s*(?:->|:|=)\s*"?(\w+)', str(params or ""))
    return found.group(1).lower() if found else ""


# Operations that replace the whole table: its rows after are their output rows.
_REPLACING = frozenset({"CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"})


def rows_after(before: int, history: Iterable[Mapping[str, Any]], start: int, end: int) -> int | None:
    """A table's rows after versions start..end, from its rows `before` them and the commits'
    metrics; None when a commit is missing from `history` or its metrics do not say.

    For `refresh_policy: auto`'s sizes (`Maintainer._sizes`), never for correctness. Appends
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
