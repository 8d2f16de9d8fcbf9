"""The run's decision, from an inspection alone (`decide.decide`): a table of cases, no Spark."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dbt_ivm.analyze import analyze
from dbt_ivm.catalog import CatalogEntry, Stored, encode_settings
from dbt_ivm.classes import rules_for
from dbt_ivm.decide import Path, auto_choice, decide
from dbt_ivm.errors import StateError
from dbt_ivm.inspection import Inspection, Model, Moved
from dbt_ivm.ir import Span, TableName
from dbt_ivm.metadata import FORMAT_VERSION, PROP_DEFINITION_HASH, PROP_FORMAT, PROP_SETTINGS, PROP_STATE, Watermark

SCHEMA = {"db.o": {"id": "int", "amt": "double"}}
PLAN = analyze("select o.id, o.amt from db.o o where o.amt > 0", SCHEMA)
VIEW = TableName("db", "v")
SETTINGS = {"spark.sql.session.timeZone": "UTC"}
CREATED = {"db.o": "Thu Nov 26 10:00:00 UTC 2026"}


def commit(version: int, operation: str = "WRITE", blind: bool = True, rows: int = 3) -> dict[str, Any]:
    metrics = {"numOutputRows": str(rows), "numDeletedRows": str(rows), "numFiles": "1"}
    return {"version": version, "operation": operation, "isBlindAppend": blind, "operationMetrics": metrics}


def inspection(
    policy: str = "incremental",
    unique_key: tuple[str, ...] = (),
    history: list[dict[str, Any]] | None = None,
    sizes: dict[str, int] | None = None,
    pinned: int = 5,
    **stored: Any,
) -> Inspection:
    """A view built at db.o v3 (storage v7, the watermark's commit), db.o now at `pinned`; `history`
    holds db.o's commits after v3 (appends by default); `stored` overrides fields of `Stored`."""
    mark = Watermark({"db.o": 3}, PLAN.definition_hash, CREATED, token=1, run="r", commit_version=7)
    properties = {
        PROP_FORMAT: str(FORMAT_VERSION),
        PROP_DEFINITION_HASH: PLAN.definition_hash,
        PROP_STATE: PLAN.hidden_names,
        PROP_SETTINGS: encode_settings(SETTINGS),
    }
    found = Stored(properties, mark, 7, {"version": 7}, "")
    found = dataclasses.replace(found, **stored)
    history = [commit(v) for v in range(pinned, 3, -1)] if history is None else history
    moved = {"db.o": Moved(Span(3, pinned), history)} if found.mark and pinned > 3 else {}
    catalog = {"db.o": CatalogEntry(CREATED["db.o"], "MANAGED"), "db.v__ivm": CatalogEntry("", "MANAGED")}
    catalog["db.v"] = CatalogEntry("", "VIEW")
    model = Model(VIEW, "select …", refresh_policy=policy)
    rules = rules_for(PLAN)
    return Inspection(
        model, PLAN, rules, unique_key, (), {}, catalog, CREATED, SETTINGS, {"db.o": pinned}, found, moved, sizes
    )


def test_a_view_never_built_or_asked_to_rebuild_builds():
    i = inspection()
    assert decide(dataclasses.replace(i, stored=None)) == decide(dataclasses.replace(i, stored=None), True)
    never = dataclasses.replace(i, stored=None, catalog={k: v for k, v in i.catalog.items() if k != "db.v"})
    assert decide(never).reason == "first build"
    # the storage dropped, the view over it left: built again, saying so
    assert "db.v__ivm does not exist while the view does" in decide(dataclasses.replace(i, stored=None)).reason
    assert (decide(i, full_refresh=True).path, decide(i, full_refresh=True).reason) == (Path.BUILD, "full refresh")
    assert decide(inspection("full")).reason == "refresh_policy 'full'"


REBUILDS = {
    "no watermark in the stored view": {"mark": None},
    "the stored view has an older format": {"properties": {PROP_FORMAT: "0"}},
    "the model or its sources' columns changed": {
        "properties": {PROP_FORMAT: str(FORMAT_VERSION), PROP_DEFINITION_HASH: "another"}
    },
    "spark.sql.session.timeZone 'Asia/Tokyo' → 'UTC'": {
        "properties": {
            PROP_FORMAT: str(FORMAT_VERSION),
            PROP_DEFINITION_HASH: PLAN.definition_hash,
            PROP_STATE: PLAN.hidden_names,
            PROP_SETTINGS: encode_settings({"spark.sql.session.timeZone": "Asia/Tokyo"}),
        }
    },
    "changed by commits fast_mv did not write (RESTORE to version 2 at v8)": {
        "changed": "RESTORE to version 2 at v8",
        "latest": 8,
    },
}


@pytest.mark.parametrize("reason", sorted(REBUILDS))
def test_a_stored_view_that_cannot_be_refreshed_rebuilds_under_auto_and_fails_under_incremental(reason):
    decision = decide(inspection("auto", **REBUILDS[reason]))
    assert decision.path is Path.BUILD and reason in decision.reason
    with pytest.raises(StateError, match=r"cannot be refreshed incrementally.*--full-refresh"):
        decide(inspection("incremental", **REBUILDS[reason]))


def test_a_source_whose_history_cannot_be_replayed_rebuilds():
    i = inspection("auto")
    moved_back = dataclasses.replace(i, pinned={"db.o": 2}, moved={})
    assert "older than version 3" in decide(moved_back).reason
    recreated = dataclasses.replace(i, created={"db.o": "Fri Nov 27 10:00:00 UTC 2026"})
    assert "dropped and created again" in decide(recreated).reason
    with pytest.raises(StateError, match="dropped and created again"):
        decide(dataclasses.replace(recreated, model=Model(VIEW, "select …", refresh_policy="incremental")))
    # another creation time with the commit consumed still in its history: replaced, refreshed
    incremental = Model(VIEW, "select …", refresh_policy="incremental")
    renewed = dataclasses.replace(recreated, renewed=frozenset({"db.o"}), model=incremental)
    assert decide(renewed).path is Path.REFRESH


def test_another_creation_time_is_a_replace_where_the_commits_still_hold_the_one_consumed():
    """`inspection._identity`: Spark's in-memory catalog gives a replaced table a new creation
    time; its commits still hold the one the view consumed, a table created again does not."""
    from dbt_ivm.inspection import _identity
    from dbt_ivm.ir import Upstream
    from dbt_ivm.upstream import fingerprint

    at, later = "2026-11-26 10:00:00.123", "Fri Nov 27 10:00:00 UTC 2026"
    mark = Watermark({"db.o": 3}, PLAN.definition_hash, CREATED, commits={"db.o": at})
    table, catalog = TableName("db", "o"), {"db.o": CatalogEntry(later, "MANAGED")}
    kept = [{"version": 4, "timestamp": "2026-11-27 10:00:00.000"}, {"version": 3, "timestamp": at}]
    anew = [{"version": 3, "timestamp": "2026-11-27 09:00:00.000"}]
    assert _identity(catalog, table, None, mark, kept) == (later, True)
    assert _identity(catalog, table, None, mark, anew) == (later, False)
    assert _identity(catalog, table, None, dataclasses.replace(mark, commits={}), kept) == (later, False)
    same = {"db.o": CatalogEntry(CREATED["db.o"], "MANAGED")}
    assert _identity(same, table, None, mark, kept) == (CREATED["db.o"], False)  # not renewed: the same time
    assert _identity({}, table, None, mark, kept) == ("", False)  # not in the catalog
    # an upstream (another fast_mv): its storage's time and its view's fingerprint; a view that
    # reads the storage otherwise is another source even where the storage's commits continue
    storage = TableName("db", "u__ivm")
    view_text, other_text = "SELECT a FROM db.u__ivm", "SELECT a, b FROM db.u__ivm"
    upstream, other = Upstream(storage, view_text), Upstream(storage, other_text)
    recorded = {"db.o": f"{CREATED['db.o']} ({fingerprint(upstream)})"}
    chained = dataclasses.replace(mark, created=recorded)
    stored = {"db.u__ivm": CatalogEntry(later, "MANAGED")}
    assert _identity(stored, table, upstream, chained, kept) == (f"{later} ({fingerprint(upstream)})", True)
    assert _identity(stored, table, other, chained, kept) == (f"{later} ({fingerprint(other)})", False)


def test_nothing_moved_is_nothing_and_a_missing_view_is_created_again():
    i = inspection(pinned=3)
    assert decide(i).path is Path.NOTHING and not decide(i).recreate_view
    missing = dataclasses.replace(i, catalog={k: v for k, v in i.catalog.items() if k != "db.v"})
    decision = decide(missing)
    assert decision.recreate_view and decision.notices == ("creating the view over its stored rows again",)


def test_appends_to_a_monotone_view_with_a_unique_key_take_the_append_path():
    decision = decide(inspection(unique_key=("id",)))
    assert (decision.path, decision.appended) == (Path.APPEND, 6)
    assert decide(inspection()).path is Path.REFRESH  # no declared key
    deleted = [commit(5, "DELETE", blind=False), commit(4)]
    assert decide(inspection(unique_key=("id",), history=deleted)).path is Path.REFRESH
    missing = [commit(5)]  # v4 is not in the history read: not known to be an append
    assert decide(inspection(unique_key=("id",), history=missing)).path is Path.REFRESH


def test_auto_weighs_the_change_against_the_sizes():
    sizes = {"db.o": 10_000_000, "db.v__ivm": 10_000_000}
    small = decide(inspection("auto", sizes=sizes))
    assert small.path is Path.REFRESH and small.choice is not None and not small.choice.rebuild
    assert small.notices[-1].startswith("refresh_policy auto: incremental")
    large = [commit(5, "DELETE", blind=False, rows=9_000_000), commit(4, "DELETE", blind=False, rows=500_000)]
    big = decide(inspection("auto", history=large, sizes={"db.o": 1_000_000, "db.v__ivm": 1_000_000}))
    assert big.path is Path.BUILD and big.reason == "refresh_policy auto chose a rebuild for db.o v3..v5"


def test_a_replaced_source_rebuilds_under_auto_and_is_read_whole_under_incremental():
    history = [{"version": 5, "operation": "CREATE OR REPLACE TABLE AS SELECT"}, commit(4)]
    auto = decide(inspection("auto", history=history, sizes={"db.o": 10, "db.v__ivm": 10}))
    assert auto.path is Path.BUILD and "a source was replaced: db.o (CREATE OR REPLACE" in auto.notices[-1]
    incremental = decide(inspection("incremental", history=history))
    assert incremental.path is Path.REFRESH and "reading its whole change feed" in incremental.notices[0]


def test_auto_rebuilds_a_window_view_that_is_one_partition():
    """Its refresh recomputes the whole view from the sources, and then compares it with the stored
    rows: a rebuild does less. A view partitioned by a key is weighed as any other."""
    sizes = {"db.o": 10_000_000, "db.v__ivm": 10_000_000}
    for sql, rebuilds in (
        ("select o.id, row_number() over (order by o.amt, o.id) as pos from db.o o", True),
        ("select o.id, row_number() over (partition by o.id order by o.amt) as pos from db.o o", False),
    ):
        plan = analyze(sql, SCHEMA)
        i = dataclasses.replace(inspection("auto", sizes=sizes), plan=plan, rules=rules_for(plan))
        assert auto_choice(i).rebuild is rebuilds


def test_a_read_column_dropped_or_renamed_within_the_span_rebuilds_under_auto_and_fails_under_incremental():
    renamed = {"version": 4, "operation": "RENAME COLUMN", "operationParameters": {"oldColumnPath": "amt"}}
    history = [commit(5), renamed]
    assert decide(inspection("auto", history=history)).path is Path.BUILD
    assert "dropped or renamed" in decide(inspection("auto", history=history)).reason
    with pytest.raises(StateError, match=r"RENAME COLUMN at v4 \(amt\).*--full-refresh"):
        decide(inspection(history=history))
    unread = {**renamed, "operationParameters": {"oldColumnPath": "note"}}
    assert decide(inspection(history=[commit(5), unread])).path is Path.REFRESH


def test_commits_that_kept_every_row_advance_the_watermark_without_reading_the_feed():
    kept = [commit(5, "OPTIMIZE", blind=False), commit(4, "REORG", blind=False)]
    assert decide(inspection(history=kept)).path is Path.ADVANCE
    assert decide(inspection(history=[commit(5, "OPTIMIZE"), commit(4)])).path is Path.REFRESH  # v4 appended
    assert decide(inspection(history=[commit(5, "OPTIMIZE")])).path is Path.REFRESH  # v4 not in the history read
    renamed = [commit(5, "RENAME COLUMN", blind=False), commit(4, "OPTIMIZE", blind=False)]
    assert decide(inspection(history=renamed)).path is not Path.ADVANCE


def test_the_types_of_a_distributed_union_are_checked_before_every_build():
    """`inspection._built_anew`: a storage of this definition built under these meaning settings
    was checked by its build; another definition, no watermark, or other settings (a rebuild by
    `rebuild_reason`, which Spark may type otherwise) check again."""
    from dbt_ivm.inspection import _built_anew

    stored = inspection().stored
    assert stored is not None
    assert not _built_anew(PLAN, stored, SETTINGS)
    assert _built_anew(PLAN, None, SETTINGS)
    assert _built_anew(PLAN, dataclasses.replace(stored, mark=None), SETTINGS)
    other = analyze("select o.id from db.o o", SCHEMA)
    assert _built_anew(other, stored, SETTINGS)
    assert _built_anew(PLAN, stored, {"spark.sql.session.timeZone": "Europe/Paris"})
