"""Drive a build or a refresh through anything that runs SQL (dbt's connection, a SparkSession).

A run is three steps:
  1. `inspection.inspect` reads once what the run needs (the sources, the model's plan, each
     source's pinned version, the storage's watermark, the moved sources' commits, the sizes);
  2. `decide.decide` chooses from that alone: build (and why), nothing, append, or refresh;
  3. `Maintainer` runs the chosen path: a build's one CREATE OR REPLACE; an append's one INSERT
     of the view's new rows straight from the change feeds (the moved sources only appended, the
     view is monotone and declares a unique key); or a refresh, which evaluates each moved
     source's net change once (CACHE TABLE) and applies the view class's one write (MERGE, or
     INSERT when every changed identity is new). Each records the pinned versions as the new
     watermark in the same Delta commit (`commit.commit_metadata`).
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from dbt_ivm import batch, known_properties, layout, quick, reconfigure, render
from dbt_ivm.analyze import parse
from dbt_ivm.catalog import (
    VIEW_HISTORY_ROWS,
    Database,
    FeedOff,
    describe_query,
    encode_settings,
    first_line,
    recent_history,
)
from dbt_ivm.classes import NULL_KEY_FALLBACK, Appender, Refresh, Write, WritePath, changes
from dbt_ivm.commit import CONCURRENT_COMMIT, commit_metadata, lost_history, lost_race, session_overrides, settled
from dbt_ivm.configuration import Configuration, Docs, OnChange, view_comments
from dbt_ivm.decide import Decision, Path, auto_choice, decide
from dbt_ivm.empty import unlimited
from dbt_ivm.errors import LostHistory, StateError
from dbt_ivm.history import matched_several, metric, written
from dbt_ivm.inspection import Inspection, Known, Model, inspect
from dbt_ivm.ir import TableName
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
from dbt_ivm.policy import Choice, RefreshPolicy
from dbt_ivm.storage import Storage, layout_properties, location_property, table_properties
from dbt_ivm.stored_view import StoredView, consistency_sql, explain_view, pinned_model_sql, stored_view

# explain and the consistency test read a built view (`stored_view`): re-exported here
__all__ = ["StoredView", "consistency_sql", "explain_view", "pinned_model_sql", "stored_view"]

# Appended change rows up to this many are broadcast to the joins (an unstaged feed has no size).
BROADCAST_ROWS = 100_000


class Action(str, enum.Enum):
    BUILT = "built"
    REFRESHED = "refreshed"
    NO_CHANGES = "no changes"


@dataclass(frozen=True)
class Outcome:
    action: Action
    message: str
    path: WritePath = WritePath.NONE
    inserted: int = 0
    deleted: int = 0
    versions: Mapping[str, int] = field(default_factory=dict)
    statements: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # for dbt to warn with
    config_change: str = ""  # 'continue': configuration changes were found and left as they are


class Maintainer:
    """One model's build or refresh. `log` receives progress lines for the run's log."""

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
        change_feed: bool = False,
        storage: Storage | None = None,
        enable_change_feed: bool = False,
        on_change: OnChange = OnChange.APPLY,
        docs: Docs | None = None,
    ):
        self.db, self.log = db, log
        self.change_feed = change_feed  # a fast_mv reads this one: its storage keeps a change data feed
        self.model = Model(view, sql, unique_key, tuple(functions), refresh_policy, cluster_by, enable_change_feed)
        self.storage = storage or Storage()  # file_format, tblproperties, partition_by, liquid_clustered_by
        self.on_change, self.docs = on_change, docs  # on_configuration_change, persist_docs (see `reconfigure`)
        self.configuration = Configuration.of(self.storage, docs)
        self.warnings: list[str] = []  # for dbt to warn with
        self.config_change = ""  # 'continue': configuration changes were found and left as they are
        self.run_id = uuid.uuid4().hex[:12]
        self.statements: list[str] = []  # every statement this run executed, in order
        self.auto_seconds = 0.0  # what refresh_policy auto's estimate took (its metadata queries)
        self.view_created = False  # this run created the view (replacing a table of an earlier materialization)
        # Called after the stored state is read and before the one write: tests force interleavings here.
        self.before_commit: Callable[[], None] = lambda: None

    @property
    def view(self) -> TableName:
        return self.model.view

    @property
    def backing(self) -> TableName:
        return self.model.backing

    def run(self, sql: str, sent: str | None = None) -> None:
        """Runs `sql` (by sending `sent`, a script holding it, when given: `commit_metadata`)."""
        self.statements.append(sql)
        self.db.execute(sent or sql)

    def inspect(self, known: Known | None = None) -> Inspection:
        """Validate sources and the model, pin every source's version, read the stored state."""
        found = inspect(self.db, self.model, known)
        self.auto_seconds = found.auto_seconds
        return found

    def materialize(self, full_refresh: bool = False) -> Outcome:
        known = Known() if full_refresh else quick.check(self.db, self.model, self.change_feed, self.configuration)
        if isinstance(known, quick.Unchanged):  # nothing to do, told in a few statements (`quick`)
            self.warnings += reconfigure.docs_warnings(self.view, self.docs, known.columns)
            return Outcome(Action.NO_CHANGES, "no changes", versions=dict(known.versions))
        i = self._inspect_upstreams(known)
        self._layout(i)  # a bad partition_by fails every run, not only the next build
        decision = decide(i, full_refresh)
        self.warnings += reconfigure.docs_warnings(self.view, self.docs, [o.name for o in i.plan.outputs])
        defaults = {**render.BACKING_PROPERTIES, **self._feed(i)[0]}  # fast_mv's, where the model sets none
        found = reconfigure.reconfigure(i, decision, self.configuration, self.on_change, defaults)
        decision, self.config_change = found.decision, found.mode
        for notice in decision.notices:
            self.log(f"fast_mv {self.view}: {notice}")
        stored = i.stored
        if self.change_feed and decision.path is not Path.BUILD and stored and not _feeds(stored.properties):
            self.log(f"fast_mv {self.view}: turning on the change data feed of {self.backing}: a fast_mv reads it")
            self.run(render.enable_change_feed(self.backing))
        if found.changes is not None:
            table_properties(self.storage, {}, *self._feed(i))  # a conflict with a needed property fails first
        try:
            outcome = self._follow(i, decision)
        except LostHistory as e:  # nothing was written: a rebuild brings the view up to date
            if i.policy is RefreshPolicy.INCREMENTAL:
                raise
            return self.build(i, e.reason)
        if found.changes is not None:  # after the data's commit: its watermark keeps the old record
            self.log(f"Applying ALTER to: {self.view}")
            reconfigure.alter(self, found.changes, lambda: self._view(i))
        return outcome

    def _view(self, i: Inspection) -> None:
        """Create the view over the storage, with the comments of persist_docs."""
        user_view = render.ordered(i.rules.user_view(i.plan, self.backing, self._describe), i.plan.order)
        self.run(render.sql(view_comments(render.create_view(self.view, user_view), self.docs)))

    def _quick(self, i: Inspection, built: bool) -> dict[str, Any] | None:
        return quick.record(i, self.change_feed, self.configuration, built)

    def _inspect_upstreams(self, known: Known | None = None) -> Inspection:
        """`inspect`, turning on the change data feed of each upstream fast_mv's storage that has
        none (and, with `enable_change_feed`, of each Delta source): one commit that keeps every
        row, after which this view reads its changes (it builds at a version after it, so no
        change goes unread; a refresh over versions without a feed finds its history lost)."""
        try:
            return self.inspect(known)
        except FeedOff as e:
            for table in e.tables:
                self.log(
                    f"fast_mv {self.view}: turning on the change data feed of {table}, which this view reads "
                    "(it records the changes from this commit on: this view reads the versions after it)"
                )
                self.run(render.enable_change_feed(table))
            return self.inspect()

    def materialize_empty(self, limited_sql: str) -> Outcome:
        """`dbt run --empty`, whose `limited_sql` reads every source as no rows (`empty`): the model
        (`self.model.sql`, the limits taken out) is validated as a build validates it, and a view
        built before, or a table of an earlier materialization, is left as it is. A view never
        built becomes a plain view of `limited_sql`: the model's columns, no rows, no storage, so
        the next run builds it."""
        i = self.inspect()
        self._layout(i)
        found = i.catalog.get(self.view.key)
        if i.stored is not None or (found is not None and found.kind != "VIEW"):
            what = "its built storage" if i.stored is not None else "the table of an earlier materialization"
            self.log(f"fast_mv {self.view}: --empty: nothing written, {what} is left as it is")
            return self._outcome(i, Action.NO_CHANGES, f"skipped (--empty): {what} is left as it is")
        rows = parse(limited_sql)
        assert isinstance(rows, exp.Query)  # `parse` returns a query or raises
        self.run(render.sql(render.create_view(self.view, rows)))
        return self._outcome(i, Action.BUILT, "built empty (--empty): the next run builds it")

    def _follow(self, i: Inspection, decision: Decision) -> Outcome:
        if decision.path is Path.BUILD:
            return self.build(i, decision.reason)
        if decision.recreate_view:
            self._view(i)
        if decision.path is Path.NOTHING:
            return self._outcome(i, Action.NO_CHANGES, "no changes")
        assert i.mark is not None and i.stored is not None
        config = (i.stored.configured or self.configuration).encode()  # an alter records a new one
        mark = Watermark(
            dict(i.pinned),
            i.plan.definition_hash,
            i.created,
            i.mark.token + 1,
            self.run_id,
            rows=i.sizes or {},
            config=config,
            quick=self._quick(i, built=False),
            props=known_properties.record(i.stored.properties, i.stored.latest, self.change_feed),
            defaults=i.defaults,
            commits=i.commits,
        )
        if decision.path is Path.ADVANCE:
            return self._advance(i, mark)
        if decision.path is Path.APPEND:
            outcome = self._append(i, mark, decision.appended)
            if outcome is not None:
                return outcome
        return self.refresh(i, mark)

    def estimate(self) -> Choice | None:
        """What refresh_policy auto would choose if the view were refreshed now; None when no source
        moved or the view was never built. Writes nothing."""
        i = self.inspect()
        return auto_choice(i) if i.mark is not None and i.moved else None

    def _outcome(
        self,
        i: Inspection,
        action: Action,
        message: str,
        path: WritePath = WritePath.NONE,
        inserted: int = 0,
        deleted: int = 0,
    ) -> Outcome:
        statements = tuple(self.statements)
        return Outcome(action, message, path, inserted, deleted, versions=dict(i.pinned), statements=statements)

    # -- build -----------------------------------------------------------------------

    def build(self, i: Inspection, reason: str, previous: Watermark | None = None) -> Outcome:
        """Create or replace the view's storage from the sources at the pinned versions.

        Its token is above every token before it (the clock in microseconds, and above the last
        watermark's: `previous`, by default the one read), so a refresh that read the state before
        this build cannot commit after it.
        """
        self.log(f"fast_mv {self.view}: building ({reason}) at {_versions(i.pinned)}")
        if i.stored is not None or self.view.key in i.catalog:
            self.log(f"Applying REPLACE to: {self.view}")  # dbt's line for a rebuilt relation
        previous = previous or i.mark
        token = max(time.time_ns() // 1000, (previous.token + 1) if previous else 0)
        sizes = {**i.sizes, self.backing.key: 0} if i.sizes is not None else {}
        types = layout.stored_types(i.plan, i.output_types)
        rows = layout.clustered(i.rules.build_select(i.plan, i.pinned, i.output_types), i.cluster_by, types)
        props = table_properties(self.storage, self._properties(i), *self._feed(i))
        cfg, known = self.configuration.encode(), known_properties.record({**render.BACKING_PROPERTIES, **props})
        mark = Watermark(dict(i.pinned), i.plan.definition_hash, i.created, token, self.run_id, rows=sizes, config=cfg)
        mark = replace(mark, quick=self._quick(i, built=True), props=known, defaults=i.defaults, commits=i.commits)
        create = render.create_backing(self.backing, rows.select, props, self._layout(i))
        self._move(i)
        self.before_commit()
        with commit_metadata(self.db, mark, self.backing), session_overrides(self.db, rows.settings):
            self._write(render.sql(create), i, mark=mark)
        self._verify(mark)
        found = i.catalog.get(self.view.key)  # as `inspect` saw it
        if found and found.kind != "VIEW" and not self.view_created:
            self.log(f"fast_mv {self.view}: replacing the table of an earlier materialization with a view")
            self.run(f"DROP TABLE {self.view.sql()}")
        self._view(i)
        self.view_created = True
        return self._outcome(i, Action.BUILT, f"built at {_versions(i.pinned)}")

    def _move(self, i: Inspection) -> None:
        """Delta replaces a table only at its own location: a changed `location_root` drops the
        storage before the build creates it at the new one (its history goes with it)."""
        before = i.stored.configured if i.stored is not None else None
        if before is not None and before.location_root != self.configuration.location_root:
            self.log(f"fast_mv {self.view}: location_root changed: dropping {self.backing} to build it at the new one")
            self.run(f"DROP TABLE IF EXISTS {self.backing.sql()}")

    def _layout(self, i: Inspection) -> list[exp.Expr]:
        """The storage's PARTITIONED BY or CLUSTER BY, over the columns a build stores."""
        layout = layout_properties(self.storage, i.plan, i.rules.build_select(i.plan, i.pinned).named_selects)
        return layout + location_property(self.storage, self.backing)

    def _properties(self, i: Inspection) -> dict[str, str]:
        """What a build records on the storage (`metadata.PROP_*`)."""
        return {
            PROP_FORMAT: str(FORMAT_VERSION),
            PROP_DEFINITION: i.plan.normalized_sql,
            PROP_DEFINITION_HASH: i.plan.definition_hash,
            PROP_VIEW_CLASS: i.plan.view_class.value,
            PROP_COLUMNS: ",".join(o.name for o in i.plan.outputs),
            PROP_MODEL_SQL: self.model.sql,
            PROP_SETTINGS: encode_settings(i.settings),
            PROP_FUNCTIONS: ",".join(i.plan.functions),
            PROP_CLUSTER_BY: ",".join(i.cluster_by),
            PROP_STATE: i.plan.hidden_names,
        }

    def _feed(self, i: Inspection) -> tuple[dict[str, str], str]:
        """The change data feed a build keeps on, and why: a fast_mv reads this one (the dbt graph
        says so), or its storage had it on (a reader may not be in this run's graph)."""
        if self.change_feed:
            return {render.CHANGE_FEED: "true"}, "another fast_mv model reads this one"
        if i.stored is not None and _feeds(i.stored.properties):
            return {
                render.CHANGE_FEED: "true"
            }, "its storage keeps a change data feed for the fast_mv models that read it"
        return {}, ""

    # -- refresh ---------------------------------------------------------------------

    def refresh(self, i: Inspection, mark: Watermark) -> Outcome:
        """Stage each moved source's net change, and apply the class's one write."""
        assert i.stored is not None and i.mark is not None
        self.log(f"fast_mv {self.view}: reading changes from {i.ranges}")
        with self._temporaries(i.scripts) as (temp, releases):
            staged = {
                s.index: temp(f"chg{s.index}")
                for s in i.plan.sources
                if i.rules.stages_changes(i.plan) and s.table.key in i.moved
            }
            db = self.db  # each CACHE TABLE goes in the script of the query after it (`batch`)
            deferred = batch.Deferred(self.statements.append, db.execute, db.query, i.scripts, i.before_caching)
            self._stage_changes(i, staged, deferred.run)
            refresh = Refresh(
                i.plan,
                self.backing,
                i.mark.sources,
                i.pinned,
                staged,
                temp,
                deferred.run,
                deferred.query,
                deferred.flushing(self._describe),
                unique_key=i.unique_key,
                key_violation=self._key_violation(i),
                output_types=i.output_types,
                storage_types=i.storage_types,
                # a commit after the watermark's (an OPTIMIZE, a foreign write): its highs may be stale
                highs=i.mark.highs if i.mark.commit_version == i.stored.latest else None,
            )
            write = self._apply(i, refresh, deferred.flush)
            mark = replace(mark, highs=write.highs)
            self.before_commit()
            with commit_metadata(self.db, mark, self.backing, self.run, i.scripts, releases) as committing:
                self._write(render.sql(write.statement), i, committing, mark)
        commit = self._verify(mark)
        if write.check_repeats and matched_several(commit):
            self._repair_repeated_rows(i, mark)
        inserted, deleted = (0, 0) if write.path is WritePath.EMPTY else written(commit, write.inserted, write.deleted)
        if inserted == deleted == 0:  # e.g. an aggregate whose group deltas all cancel
            return self._outcome(i, Action.NO_CHANGES, f"no net changes from {i.ranges}")
        message = f"refreshed: +{inserted}/-{deleted} rows from {i.ranges}"
        return self._outcome(i, Action.REFRESHED, message, write.path, inserted, deleted)

    @contextmanager
    def _temporaries(self, scripts: bool = False) -> Iterator[tuple[Callable[[str], str], list[str]]]:
        """A maker of fresh temporary table names for one refresh (`Refresh.temp`), and the
        statements that release them, newest first (a cached table's plan reads the ones cached
        before it); the ones left in the list are run after the refresh (`scripts`: in one
        statement, `batch`). The refresh's write may run them in its own script and empty it."""
        uid = uuid.uuid4().hex[:12]
        releases: list[str] = []

        def temp(role: str) -> str:
            name = f"__ivm_{role}_{uid}"
            releases.insert(0, render.release(name))
            return name

        def sent() -> list[str]:  # the releases as sent: one script where the server runs scripts
            return [batch.script(releases)] if scripts and releases else releases

        try:
            yield temp, releases
        except BaseException:
            with suppress(Exception):  # the refresh's own error is the one to tell (a cut connection)
                for statement in sent():
                    self.db.execute(statement)
            raise
        for statement in sent():
            try:
                self.db.execute(statement)
            except Exception as e:  # a temporary view outlives this run's session at worst
                self.log(f"fast_mv {self.view}: releasing the refresh's cached changes failed: {first_line(e)}")

    def _apply(self, i: Inspection, refresh: Refresh, flush: Callable[[], None]) -> Write:
        """The class's write; `flush` sends the statements it left deferred (`batch.Deferred`)."""
        try:
            write = i.rules.apply(refresh)
            flush()
        except Exception as e:  # the connection's error type varies; unstaged feeds are first read here
            lost_history(e, i.ranges)
            raise
        if write.detail:
            self.log(f"fast_mv {self.view}: {write.detail}")
        return write

    def _stage_changes(self, i: Inspection, staged: Mapping[int, str], run: Callable[[str], None]) -> None:
        """Evaluate each moved source's net change once; lost history fails loudly here (or, when
        `run` defers the statement, at the class's first query: `_apply`)."""
        for index, temp in staged.items():
            source = i.plan.sources[index]
            span = i.moved[source.table.key].span
            try:
                run(render.cache_as(temp, changes.change_select(source, span.first, span.pinned)))
            except Exception as e:  # the connection's error type varies
                lost_history(e, f"{source.table.key} {span}")
                raise

    def _repair_repeated_rows(self, i: Inspection, mark: Watermark) -> None:
        """A change row matched several stored rows: the declared key was broken by rows appended
        without a probe, and the MERGE just applied the change to each copy. Rebuild, then fail.

        Under every refresh_policy, `incremental` too: the commit is made, and only a rebuild makes
        the view right again; the run still fails, naming the key."""
        key = ", ".join(i.unique_key) or "(none)"
        self.build(i, f"unique_key ({key}) repeats in the stored rows", previous=mark)
        raise StateError(
            f"fast_mv {self.view}: unique_key ({key}) is not unique in the model's rows: an earlier refresh "
            "appended a row the view already held, and this refresh's change matched both copies. The view "
            "was rebuilt from the sources and is correct; fix the data so the key is unique, or drop "
            "unique_key from the model config"
        )

    def _advance(self, i: Inspection, mark: Watermark) -> Outcome:
        """The moved sources' commits kept every row (`Moved.kept`): nothing is read, and the
        watermark moves to the pinned versions in an empty commit."""
        assert i.stored is not None and i.mark is not None
        self.log(f"fast_mv {self.view}: {i.ranges} changed no row (OPTIMIZE, REORG or the like): recording them")
        mark = replace(mark, highs=i.mark.highs if i.mark.commit_version == i.stored.latest else None)
        self.before_commit()
        with commit_metadata(self.db, mark, self.backing, self.run, i.scripts) as committing:
            self._write(render.sql(render.empty_commit(self.backing)), i, committing, mark)
        self._verify(mark)
        return self._outcome(i, Action.NO_CHANGES, f"no row changed in {i.ranges}")

    # -- append ----------------------------------------------------------------------

    def _append(self, i: Inspection, mark: Watermark, appended: int) -> Outcome | None:
        """Only appends since the watermark: one INSERT of the view's new rows, read from the feeds.

        Nothing is staged or netted and the stored rows are not read: the view is monotone, so
        appended source rows only add view rows, and the declared key makes them new rows. The
        INSERT checks the key over what it adds, and fails whole if it repeats. None, with nothing
        written, where an added row's key is NULL: the general path refreshes instead.
        """
        assert i.mark is not None and i.stored is not None
        self.log(f"fast_mv {self.view}: appending the new rows of {i.ranges} (only appends since the last refresh)")
        violation = self._key_violation(i)
        assert isinstance(i.rules, Appender)  # `decide.appended_rows` lets no other class here
        insert = i.rules.append_statement(
            i.plan,
            self.backing,
            i.mark.sources,
            i.pinned,
            i.unique_key,
            violation,
            broadcast=appended <= BROADCAST_ROWS,
        )
        self.before_commit()
        with commit_metadata(self.db, mark, self.backing, self.run, i.scripts) as committing:
            try:
                self._write(render.sql(insert), i, committing, mark)
            except Exception as e:  # the connection's error type varies
                if violation in str(e):
                    raise StateError(violation) from e
                if NULL_KEY_FALLBACK in str(e):
                    self.log(
                        f"fast_mv {self.view}: an appended row's unique_key ({', '.join(i.unique_key)}) is NULL, "
                        "which the key does not cover; nothing was appended, refreshing through the general path"
                    )
                    return None
                lost_history(e, i.ranges)
                raise
            history = recent_history(self.db, self.backing, VIEW_HISTORY_ROWS)
            # No commit at all (a write of nothing that Delta dropped): record the watermark.
            nothing_added = int(history[0]["version"]) == i.stored.latest
            if nothing_added:
                self._write(render.sql(render.empty_commit(self.backing)), i, committing, mark)
        commit = self._verify(mark, None if nothing_added else history)
        inserted = 0 if nothing_added else metric(commit, "numOutputRows") or 0
        if inserted == 0:  # the view's joins and filters kept none of the appended rows
            return self._outcome(i, Action.NO_CHANGES, f"no net changes from {i.ranges}", WritePath.APPEND)
        message = f"refreshed: +{inserted}/-0 rows from {i.ranges}"
        return self._outcome(i, Action.REFRESHED, message, WritePath.APPEND, inserted, 0)

    def _key_violation(self, i: Inspection) -> str:
        return (
            f"fast_mv {self.view}: unique_key ({', '.join(i.unique_key)}) is not unique in the rows "
            "this refresh adds; nothing was written: fix the data or drop unique_key from the model config"
        )

    # -- the one write ---------------------------------------------------------------

    def _describe(self, query: Any) -> dict[str, str]:
        return describe_query(self.db, query)

    def _write(
        self, statement: str, i: Inspection, run: Callable[[str], None] | None = None, mark: Watermark | None = None
    ) -> None:
        """The one write of a build or refresh (by `run`, `commit_metadata`'s); losing a race to another
        writer fails loudly. A write whose answer was lost (the connection cut, a re-submitted copy
        failed, a later statement of its script failed) stands as `commit.settled` settles it."""
        try:
            (run or self.run)(statement)
        except Exception as e:  # the connection's error type varies
            said = settled(self.db, self.backing, mark, i.mark if run else None, e, i.scripts) if mark else ""
            if said:
                self.log(f"fast_mv {self.view}: {said}")
                return
            if CONCURRENT_COMMIT.search(str(e)):
                read = i.stored.latest if i.stored else None
                later = [] if read is None else recent_history(self.db, self.backing, VIEW_HISTORY_ROWS)
                raise StateError(lost_race(self.view, self.backing, later, read, e)) from e
            raise

    def _verify(self, mark: Watermark, rows: list[dict[str, Any]] | None = None) -> Mapping[str, Any]:
        """The history row of this run's commit. Delta skips a write whose token another writer
        already used: then the newest watermark is another run's, and this run fails loudly."""
        rows = rows or recent_history(self.db, self.backing, VIEW_HISTORY_ROWS)
        committed = latest_watermark(rows)
        if committed is None or committed.encode() != mark.encode():
            raise StateError(lost_race(self.view, self.backing))
        return next(r for r in rows if r.get("version") == committed.commit_version)


def _feeds(properties: Mapping[str, str]) -> bool:
    """The storage keeps a change data feed (a fast_mv reads it, or did)."""
    return properties.get(render.CHANGE_FEED, "").lower() == "true"


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
    storage: Storage | None = None,
    empty: bool = False,
    change_feed: bool = False,
    enable_change_feed: bool = False,
    on_change: OnChange = OnChange.APPLY,
    docs: Docs | None = None,
) -> Outcome:
    """Build or refresh the view; `empty`: dbt's --empty (see `Maintainer.materialize_empty`)."""
    model_sql = unlimited(sql) if empty else sql
    maintainer = Maintainer(
        db,
        view,
        model_sql,
        log,
        unique_key,
        functions,
        refresh_policy,
        cluster_by,
        change_feed,
        storage,
        enable_change_feed,
        on_change,
        docs,
    )
    outcome = maintainer.materialize_empty(sql) if empty else maintainer.materialize(full_refresh)
    return replace(outcome, warnings=tuple(maintainer.warnings), config_change=maintainer.config_change)
