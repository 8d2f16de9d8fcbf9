"""Pure pieces of the stored state: the consistency test's pinned model SQL, the watermark's
token, the recorded session settings, the MERGE metrics that reveal a broken unique key."""

from __future__ import annotations

import datetime
from dataclasses import replace
from types import SimpleNamespace

import pytest

from dbt_ivm import consistency, render
from dbt_ivm.catalog import settings_changed
from dbt_ivm.classes import joins
from dbt_ivm.commit import TXN_VERSION_CONF, USER_METADATA_CONF, fence, lost_race, settled
from dbt_ivm.history import matched_several
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer
from dbt_ivm.metadata import Watermark, latest_watermark


def test_pin_versions_inserts_version_clauses_and_changes_nothing_else():
    model = (
        "-- daily revenue\n"
        "with x as (select * from `db`.`o` where amt > 1)\n"
        "select /*+ BROADCAST(c) */ x.id, to_char(x.ts, 'yyyy-MM') as m\n"
        "from x join db.c c on x.cust = c.cid join DB.O as o2 on o2.id = x.id;  -- done"
    )
    pinned = consistency.pin_versions(model, {"db.o": 3, "db.c": 5})
    assert pinned == (
        "-- daily revenue\n"
        "with x as (select * from `db`.`o` VERSION AS OF 3 where amt > 1)\n"
        "select /*+ BROADCAST(c) */ x.id, to_char(x.ts, 'yyyy-MM') as m\n"
        "from x join db.c VERSION AS OF 5 c on x.cust = c.cid join DB.O VERSION AS OF 3 as o2 on o2.id = x.id  -- done"
    )


def test_the_consistency_query_wraps_the_model_text_on_its_own_lines():
    """A trailing line comment in the model cannot swallow the closing parenthesis."""
    sql = consistency.consistency_sql(render.TableName("db", "v"), "select 1 as a -- note")
    assert "(\nselect 1 as a -- note\n)" in sql and sql.count("select 1 as a") == 2


def test_watermark_round_trips_its_token_and_run():
    mark = Watermark({"db.o": 4}, "abc", {"db.o": "t0"}, token=1_700_000_000_000_001, run="r1")
    rows = [{"version": 9, "userMetadata": None}, {"version": 8, "userMetadata": mark.encode()}]
    read = latest_watermark(rows)
    assert read is not None and read.token == mark.token and read.run == "r1" and read.commit_version == 8
    assert read.encode() == mark.encode()
    sized = Watermark({"db.o": 4}, "abc", rows={"db.v__ivm": 0, "db.o": 12})
    read = latest_watermark([{"version": 3, "userMetadata": sized.encode()}])
    assert read is not None and read.rows == {"db.o": 12, "db.v__ivm": 0} and read.encode() == sized.encode()
    assert '"rows"' not in mark.encode()  # unknown sizes are not written
    high = Watermark({"db.o": 4}, "abc", highs={"id": 6000, "day": "2026-11-25", "empty": None})
    read = latest_watermark([{"version": 3, "userMetadata": high.encode()}])
    assert read is not None and read.highs == {"id": 6000, "day": "2026-11-25", "empty": None}
    assert read.encode() == high.encode() and '"highs"' not in mark.encode() and mark.highs is None


def test_a_change_set_above_the_stored_highs_appends_and_raises_them():
    """`joins.above_stored`: some tracked column whose change values all exceed the stored ones,
    none NULL; `joins.raised_highs`: each the larger of the two, unknown columns left out."""
    tracked = joins.tracked_columns({"id": "bigint", "name": "string", "day": "date", "at": "timestamp"})
    assert tracked == {"id": (0, "bigint"), "day": (2, "date"), "at": (3, "timestamp")}
    stats = {"lo_0": 10, "hi_0": 20, "nulls_0": False, "lo_2": datetime.date(2026, 11, 25), "hi_2": None}
    stats |= {"nulls_2": False, "lo_3": 5, "hi_3": 9, "nulls_3": True}
    assert joins.above_stored({"id": 9}, tracked, stats)
    assert not joins.above_stored({"id": 10}, tracked, stats)  # 10 may be stored
    assert not joins.above_stored(None, tracked, stats) and not joins.above_stored({}, tracked, stats)
    assert joins.above_stored({"id": 10, "day": "2026-11-24"}, tracked, stats)
    assert not joins.above_stored({"id": 10, "day": "2026-11-25"}, tracked, stats)
    assert not joins.above_stored({"at": 1}, tracked, stats)  # a change row with a NULL there may be stored
    assert joins.above_stored({"id": None}, tracked, stats)  # no stored row has an id
    raised = joins.raised_highs({"id": 15, "day": "2026-11-30", "at": None}, tracked, stats)
    assert raised == {"id": 20, "day": "2026-11-30", "at": 9}
    assert joins.raised_highs({"id": 25}, tracked, stats) == {"id": 25}
    assert joins.raised_highs(None, tracked, stats) is None
    assert joins.raised_highs({"id": 15}, tracked, {**stats, "hi_0": 2.5e10}) == {}  # not kept: unknown


def test_settings_changed_names_each_setting_with_both_values():
    recorded = '{"spark.sql.ansi.enabled":"false","spark.sql.session.timeZone":"UTC"}'
    assert settings_changed(recorded, {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "false"}) == ""
    changed = settings_changed(recorded, {"spark.sql.session.timeZone": "Asia/Tokyo", "spark.sql.ansi.enabled": "true"})
    assert changed == "spark.sql.ansi.enabled 'false' → 'true', spark.sql.session.timeZone 'UTC' → 'Asia/Tokyo'"
    assert settings_changed(None, {"spark.sql.session.timeZone": "UTC"}) == ""


def test_a_merge_whose_change_rows_matched_several_stored_rows():
    def commit(source, updated, deleted, inserted):
        return {
            "operationMetrics": {
                "numSourceRows": str(source),
                "numTargetRowsMatchedUpdated": str(updated),
                "numTargetRowsMatchedDeleted": str(deleted),
                "numTargetRowsInserted": str(inserted),
            }
        }

    assert not matched_several(commit(5, 2, 1, 2))
    assert matched_several(commit(1, 0, 2, 0))  # one change row deleted two stored copies
    assert not matched_several({"operationMetrics": {}})  # no metrics: nothing to conclude


CONFLICT = RuntimeError(
    "[DELTA_CONCURRENT_DELETE_READ] ConcurrentDeleteReadException: This transaction attempted to read one or "
    "more files that were deleted by a concurrent update"
)
VIEW, BACKING = TableName("db", "v"), TableName("db", "v__ivm")


def test_a_write_that_lost_to_an_optimize_says_so():
    mark = {"version": 7, "operation": "MERGE", "userMetadata": None}
    optimize = {"version": 8, "operation": "OPTIMIZE", "operationParameters": {}}
    message = lost_race(VIEW, BACKING, [optimize, mark], 7, CONFLICT)
    assert message.startswith("OPTIMIZE at v8 committed to db.v__ivm while this run was writing it")
    assert "ConcurrentDeleteReadException" in message and "outside dbt runs" in message
    # a commit of another fast_mv run (it carries a watermark) is the race the message has always named
    other = Watermark(sources={"db.o": 3}, definition_hash="h", token=5, run="r")
    theirs = {"version": 8, "operation": "MERGE", "userMetadata": other.encode()}
    assert lost_race(VIEW, BACKING, [theirs, mark], 7, CONFLICT).startswith("another run of db.v")
    assert lost_race(VIEW, BACKING).startswith("another run of db.v")  # a skipped write: no conflict to name


class History:
    """A `Database` whose storage's history holds one commit, carrying `mark`."""

    def __init__(self, mark: Watermark):
        self.mark, self.asked = mark, []

    def execute(self, sql: str) -> None:
        raise AssertionError(sql)

    def query(self, sql: str) -> list[dict]:
        self.asked.append(sql)
        return [{"version": 3, "operation": "MERGE", "userMetadata": self.mark.encode()}]


def test_a_write_whose_answer_was_lost_stands_when_its_commit_landed():
    """A connection lost during the write (or a re-submitted copy that failed): the run's own
    watermark in the storage's history is its commit; another one's leaves the error as it was."""
    mark = Watermark(sources={"db.o": 3}, definition_hash="h", token=5, run="mine")
    logged: list[str] = []

    def lost(statement: str) -> None:
        raise ConnectionResetError("Connection lost while polling query status after 2 attempts")

    db = History(mark)
    build = SimpleNamespace(mark=None, scripts=False)  # a build's write: read no watermark, not fenced
    Maintainer(db, VIEW, "select * from db.o", log=logged.append)._write("MERGE INTO db.v__ivm …", build, lost, mark)
    assert len(db.asked) == 1 and db.asked[0].startswith("DESCRIBE HISTORY `db`.`v__ivm`")
    assert logged == [
        "fast_mv db.v: the write's answer was lost (Connection lost while polling query status after "
        "2 attempts); it landed on its first submission (a copy sent again was skipped or rejected)"
    ]
    other = Watermark(sources={"db.o": 3}, definition_hash="h", token=5, run="another")
    with pytest.raises(ConnectionResetError):
        Maintainer(History(other), VIEW, "select * from db.o")._write("MERGE INTO db.v__ivm …", build, lost, mark)


class Delta:
    """A storage's history under Delta's idempotent writes (app id, version): a commit whose
    version is not above the one recorded is skipped. `running`: a copy of the refresh's write
    still running on the server after its connection was cut, which commits `lands`: "before" the
    run asks, just before the fence ("racing": Delta skips the fence), just "after" it (Delta
    rejects the copy), or never (None)."""

    def __init__(self, read: Watermark, running: Watermark, lands: str | None):
        self.commits, self.recorded, self.confs = [read.encode()], read.token, {}
        self.running, self.lands, self.sent = running, lands, []
        self.landing("before")

    def landing(self, when: str) -> None:
        if self.lands == when:
            self.commit(self.running.encode(), self.running.token)

    def commit(self, metadata: str, version: int) -> None:
        if version > self.recorded:
            self.commits.append(metadata)
            self.recorded = version

    def execute(self, sql: str) -> None:
        self.sent.append(sql)
        if sql.startswith("SET "):
            key, value = sql.removeprefix("SET ").split("=", 1)
            self.confs[key] = value
        elif sql.startswith("MERGE INTO"):
            self.landing("racing")
            self.commit(self.confs[USER_METADATA_CONF], int(self.confs[TXN_VERSION_CONF]))
            self.landing("after")

    def query(self, sql: str) -> list[dict]:
        return [{"version": v, "operation": "MERGE", "userMetadata": m} for v, m in enumerate(self.commits)][::-1]


@pytest.mark.parametrize("lands", ["before", "racing", "after", None])
def test_a_refresh_whose_connection_was_cut_stands_if_and_only_if_its_write_landed(lands):
    """The write's copy on the server commits before the run asks, or while the fence is sent
    (Delta skips the fence), or after it (Delta rejects the copy), or never. The run stands exactly
    when its own watermark is the newest; each token is committed once, and a fence records the
    state the write read, under its token."""
    read = Watermark(sources={"db.o": 3}, definition_hash="h", token=5, run="before", highs={"id": 9})
    mark = Watermark(sources={"db.o": 7}, definition_hash="h", token=6, run="mine")
    cut = RuntimeError("Connection lost while polling query status after 1 attempts. Original error: TTransport")
    db = Delta(read, mark, lands)
    said = settled(db, BACKING, mark, read, cut, scripts=False)
    newest = Watermark.decode(db.commits[-1])
    assert newest is not None and len(db.commits) == 2 and newest.token == 6  # one commit of token 6
    assert bool(said) == (newest.encode() == mark.encode()) == (lands in ("before", "racing"))
    if lands in ("after", None):
        assert newest.sources == read.sources and newest.run == "mine" and newest.highs is None
    fenced = any(s.startswith("MERGE INTO") for s in db.sent)
    assert fenced == (lands != "before")  # no fence when the write had landed at the first ask


def test_only_a_refresh_whose_connection_was_lost_is_fenced():
    read = Watermark(sources={"db.o": 3}, definition_hash="h", token=5, run="before")
    mark = Watermark(sources={"db.o": 7}, definition_hash="h", token=6, run="mine")
    assert fence(read, mark, ConnectionResetError("reset")) is not None
    assert fence(read, mark, RuntimeError("TSocket read 0 bytes")) is not None
    assert fence(read, mark, CONFLICT) is None  # the write's own answer: it did not commit
    assert fence(None, mark, ConnectionResetError("reset")) is None  # a build
    assert fence(read, replace(mark, token=1_800_000_000_000_000), ConnectionResetError("reset")) is None
