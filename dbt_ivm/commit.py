"""What a run writes with: the session settings around the one commit of a build or refresh
(its watermark and Delta's idempotent-write pair, a clustered build's layout), and how a failed
write is named (a concurrent commit, a change feed that can no longer be read)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any

from dbt_ivm import batch, layout, render
from dbt_ivm.catalog import VIEW_HISTORY_ROWS, Database, first_line, recent_history, session_setting
from dbt_ivm.errors import LostHistory
from dbt_ivm.history import commits_after
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import Watermark, latest_watermark
from dbt_ivm.session_lock import SESSION_LOCK

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"

LOST_HISTORY = re.compile(
    r"DELTA_MISSING_CHANGE_DATA|DELTA_UNSUPPORTED_TIME_TRAVEL|DELTA_CDC_START_VERSION_AFTER_LATEST|"
    r"DELTA_INVALID_CDC_RANGE|FileNotFoundException|DELTA_FILE_NOT_FOUND|"
    r"DELTA_TIME_TRAVEL|VersionNotFoundException|DELTA_CHANGE_DATA_FEED_NOT_ENABLED",
    re.IGNORECASE,
)


# Delta's optimistic concurrency: the write lost to a commit that landed after it read the table.
# Runs a write: sends its second argument (the first when None), records the first.
Runner = Callable[[str, str | None], None]

CONCURRENT_COMMIT = re.compile(
    r"Concurrent(Append|DeleteRead|DeleteDelete|Transaction|Write)Exception|MetadataChangedException|"
    r"ProtocolChangedException|DELTA_CONCURRENT_|DELTA_METADATA_CHANGED",
    re.IGNORECASE,
)


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
def session_confs(db: Database, confs: Mapping[str, str]) -> Iterator[None]:
    """Runs the block with `confs` set on the session, and resets them after, even when it
    fails. The confs are session-wide: no other statement on the session runs meanwhile
    (`SESSION_LOCK`, taken exclusively), so no write of another thread commits under them."""
    with SESSION_LOCK.exclusive():
        for key, value in confs.items():
            db.execute(f"SET {key}={value}")
        try:
            yield
        finally:
            for key in confs:
                db.execute(f"RESET {key}")


@contextmanager
def commit_metadata(
    db: Database,
    mark: Watermark,
    backing: TableName,
    run: Runner | None = None,
    scripts: bool = False,
    after: list[str] | None = None,
) -> Iterator[Callable[[str], None]]:
    """Record `mark` in the next commit, written idempotently with its token: the block writes
    with the function it is given.

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

    `run(statement, sent)` runs the block's writes (by default `db.execute`): it sends `sent`
    (`statement` itself when None) and records `statement`. `scripts`: the server runs SQL
    scripts (`batch`): each write is then one statement that sets the confs, writes and resets
    them, and runs the statements of `after` (releases of the refresh's cached tables), emptying
    it; after a write that failed, which may have left them set, they are reset one by one.
    """
    confs = {
        USER_METADATA_CONF: mark.encode(),
        TXN_APP_CONF: f"dbt-ivm:{backing.key}",
        TXN_VERSION_CONF: str(mark.token),
    }
    sets = [f"SET {key}={value}" for key, value in confs.items()]
    if scripts and all(batch.plain(s) for s in sets):
        resets = [f"RESET {key}" for key in confs]
        with SESSION_LOCK.exclusive():
            yield from _batched(db, run or (lambda _, sent: db.execute(sent or _)), sets, resets, after)
        return
    with session_confs(db, confs):
        yield (lambda statement: run(statement, None)) if run else db.execute


def _batched(
    db: Database, run: Runner, sets: list[str], resets: list[str], after: list[str] | None
) -> Iterator[Callable[[str], None]]:
    """`commit_metadata`'s block with each write in one script between the confs' SETs and
    RESETs, followed by `after`'s statements (emptied once they ran)."""
    unsettled = False

    def write(statement: str) -> None:
        nonlocal unsettled
        unsettled = True  # until the script has run to its end
        then = list(after or [])
        run(statement, batch.script([*map(batch.immediate, sets), statement, *map(batch.immediate, resets), *then]))
        unsettled = False
        if after is not None:
            del after[: len(then)]

    try:
        yield write
    except BaseException:
        with suppress(Exception):  # the write's own error is the one to tell (a cut connection)
            for statement in resets if unsettled else []:
                db.execute(statement)
        raise
    for statement in resets if unsettled else []:
        db.execute(statement)


# a statement whose connection was lost: the client cannot tell whether the server ran it
CONNECTION_LOST = re.compile(
    r"Connection lost|ConnectionResetError|BrokenPipeError|EOFError|TTransportException|TSocket read 0 bytes",
    re.IGNORECASE,
)


def fence(read: Watermark | None, mark: Watermark, error: Exception) -> Watermark | None:
    """What settles a refresh's write (`mark`, written over the watermark it `read`) whose
    connection was lost (`error`): `read`'s state under `mark`'s token and run, which records that
    no change was applied (None where the write was no refresh or its connection was not lost).
    What was known only of the rows the write would have changed (`highs`) or of a commit with
    nothing to do (`quick`) is left out."""
    lost = CONNECTION_LOST.search(f"{type(error).__name__}: {error}")
    if read is None or not lost or mark.token != read.token + 1:
        return None
    return replace(read, token=mark.token, run=mark.run, highs=None, quick=None, commit_version=None)


def settled(
    db: Database, backing: TableName, mark: Watermark, read: Watermark | None, error: Exception, scripts: bool
) -> str:
    """What to log when this run's failed write (`mark`; `read`: the watermark a refresh read,
    None for a build; `error`: what it failed with) committed after all (`landed`), "" when it
    did not: asked once the server can no longer commit it later. A refresh's write whose
    connection was lost may still run on the server: first the fence (`fence`: nothing applied,
    recorded with the write's own token) is committed under the same idempotent-write pair.
    Delta skips the fence when the write has committed, and rejects the write when the fence
    commits first; so the storage's newest watermark then tells what happened for good, and no
    change set is applied twice (nor lost: the fence records the state the write read)."""
    said = f"the write's answer was lost ({first_line(error)}); it landed on its first submission"
    if landed(db, backing, mark):
        return said + " (a copy sent again was skipped or rejected)"
    if (fenced := fence(read, mark, error)) is None:
        return ""
    with suppress(Exception), commit_metadata(db, fenced, backing, scripts=scripts) as write:
        write(render.sql(render.empty_commit(backing)))
    return said + " (it was still running when the connection was cut)" if landed(db, backing, mark) else ""


def landed(db: Database, backing: TableName, mark: Watermark) -> bool:
    """The storage's newest watermark is `mark`: the write that records it committed, whatever
    its statement answered (a statement of its script after the write failed, or the connection
    was lost once the server had finished)."""
    try:
        committed = latest_watermark(recent_history(db, backing, VIEW_HISTORY_ROWS))
    except Exception:  # the connection's error type varies; the write's own error is the one to raise
        return False
    return committed is not None and committed.encode() == mark.encode()


# A change feed read across a schema change of the source that Delta cannot reconcile.
FEED_SCHEMA_CHANGED = re.compile(r"DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_(DATA_)?SCHEMA", re.IGNORECASE)


def lost_history(e: Exception, ranges: str) -> None:
    """A change feed that can no longer be read fails as the error that says what to do
    (`LostHistory`: under `auto` the run rebuilds); any other error is left to the caller."""
    if FEED_SCHEMA_CHANGED.search(str(e)):
        raise LostHistory(
            f"the change feed of {ranges} cannot be read across a change of the source's columns "
            f"({first_line(e)}); run dbt with --full-refresh for this model",
            f"the change feed of {ranges} cannot be read across a change of the source's columns",
        ) from e
    if LOST_HISTORY.search(str(e)):
        raise LostHistory(
            f"the change history of {ranges} is no longer readable ({first_line(e)}): it was vacuumed, "
            "or change data feed was off for part of it; run dbt with --full-refresh for this model",
            f"the change history of {ranges} is no longer readable ({first_line(e)})",
        ) from e


def lost_race(
    view: TableName,
    backing: TableName,
    history: Sequence[Mapping[str, Any]] = (),
    read_version: int | None = None,
    conflict: Exception | None = None,
) -> str:
    """What committed first: another fast_mv run, or (on a `conflict` Delta reported) what the
    storage's `history` shows after the version this run read, when no fast_mv run wrote it."""
    later = [r for r in history if read_version is not None and int(r["version"]) > read_version]
    if conflict is not None and read_version is not None and later and latest_watermark(later) is None:
        return (
            f"{commits_after(later, read_version)} committed to {backing} while this run was writing it, and "
            f"Delta rejected this run's write ({first_line(conflict)}); this run wrote nothing and the view is as "
            f"its last refresh left it: run dbt again, and run maintenance of {backing} (OPTIMIZE, VACUUM) "
            "outside dbt runs"
        )
    return (
        f"another run of {view} (a refresh or a --full-refresh) committed first; this run wrote "
        "nothing and the view is consistent as of that run: run dbt again to catch up"
    )
