"""Fewer round trips: SQL scripts (`batch`), the settings asked in one statement, and the write
between its settings in one script (`commit.commit_metadata`)."""

from __future__ import annotations

import pytest

from dbt_ivm import batch, catalog
from dbt_ivm.commit import commit_metadata, session_confs
from dbt_ivm.configuration import Configuration
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import Watermark
from dbt_ivm.reconfigure import recording
from dbt_ivm.session_lock import SESSION_LOCK

INTERNAL = "spark.sql.legacy.sizeOfNull"  # a meaning setting `SET -v` does not list


class Server:
    """Answers SET, SET -v and SET key as Spark does; records every statement."""

    def __init__(self, app: str = "app-1", explicit: dict[str, str] | None = None, fail: str = ""):
        self.sent: list[str] = []
        self.explicit = {"spark.app.id": app, **(explicit or {})}
        self.fail = fail

    def execute(self, sql: str) -> None:
        self.sent.append(sql)
        if self.fail and self.fail in sql:
            raise RuntimeError(f"failed: {self.fail}")

    def query(self, sql: str) -> list[dict[str, str]]:
        self.sent.append(sql)
        if sql == "SET":
            return [{"key": k, "value": v} for k, v in self.explicit.items()]
        if sql == "SET -v":
            public = [k for k in (*catalog.MEANING_SETTINGS, catalog.SCRIPTING) if k != INTERNAL]
            return [{"key": k, "value": self.explicit.get(k, "default")} for k in public]
        if sql.startswith("SET "):
            key = sql.removeprefix("SET ")
            return [{"key": key, "value": self.explicit.get(key, "internal default")}]
        return [{"n": 1}]


@pytest.fixture(autouse=True)
def forget_defaults(monkeypatch):
    monkeypatch.setattr(catalog, "_DEFAULTS", {})


def test_a_script_holds_statements_in_order_and_sets_settings_by_execute_immediate():
    assert batch.script(["SELECT 1"]) == "SELECT 1"
    assert batch.script(["CACHE TABLE a AS SELECT 1", "SELECT 2"]) == "BEGIN CACHE TABLE a AS SELECT 1; SELECT 2; END"
    assert batch.immediate("SET a.b=c") == "EXECUTE IMMEDIATE 'SET a.b=c'"
    assert batch.plain('dbt-ivm:{"v":3}') and not batch.plain("it's") and not batch.plain("\\u00e9")


def test_deferred_caches_go_in_the_script_of_the_next_query_and_a_flush_sends_the_rest():
    db, recorded = Server(), []
    deferred = batch.Deferred(recorded.append, db.execute, db.query, scripts=True)
    deferred.run("CACHE TABLE a AS SELECT 1")
    deferred.run("CACHE TABLE b AS SELECT * FROM a")
    assert db.sent == []
    deferred.query("SELECT count(*) FROM b")
    assert db.sent == ["BEGIN CACHE TABLE a AS SELECT 1; CACHE TABLE b AS SELECT * FROM a; SELECT count(*) FROM b; END"]
    deferred.run("CACHE TABLE c AS SELECT 2")
    deferred.run("MERGE INTO t USING c ON false WHEN NOT MATCHED THEN INSERT *")  # not deferred: sent after c
    assert db.sent[1:] == ["CACHE TABLE c AS SELECT 2", "MERGE INTO t USING c ON false WHEN NOT MATCHED THEN INSERT *"]
    deferred.run("CACHE TABLE d AS SELECT 3")
    described = deferred.flushing(lambda q: {"q": q})
    assert described("SELECT 4 FROM dd") == {"q": "SELECT 4 FROM dd"} and len(db.sent) == 3  # d stays deferred
    assert described("SELECT * FROM d") == {"q": "SELECT * FROM d"}  # reads d: sent first
    assert db.sent[-1] == "CACHE TABLE d AS SELECT 3"
    deferred.flush()
    assert len(db.sent) == 4 and len(recorded) == 5  # every statement recorded, in order, when run

    plain = Server()
    undeferred = batch.Deferred(recorded.append, plain.execute, plain.query, scripts=False)
    undeferred.run("CACHE TABLE a AS SELECT 1")
    undeferred.query("SELECT 1")
    assert plain.sent == ["CACHE TABLE a AS SELECT 1", "SELECT 1"]


def test_a_describe_waits_only_for_what_may_change_its_types():
    db, recorded = Server(), []
    deferred = batch.Deferred(recorded.append, db.execute, db.query, scripts=True, settings=["SET a.b=false"])
    deferred.run("CACHE TABLE `__ivm_chg0_1` AS SELECT 1")
    described = deferred.flushing(lambda q: {})
    assert not deferred.waits_for("SELECT * FROM `__ivm_chg0_10`") and not deferred.waits_for("SELECT 1")
    described("SELECT 1")
    assert db.sent == []  # the first settings and a cache it does not read stay deferred
    assert deferred.waits_for("SELECT * FROM `__ivm_chg0_1` AS c")
    deferred.pending.append(batch.immediate("SET spark.sql.ansi.enabled=true"))  # may change types
    assert deferred.waits_for("SELECT 1")
    deferred.pending.pop()
    deferred.query("SELECT 2")
    assert db.sent == ["BEGIN EXECUTE IMMEDIATE 'SET a.b=false'; CACHE TABLE `__ivm_chg0_1` AS SELECT 1; SELECT 2; END"]


def test_a_deferred_setting_goes_first_in_the_script_of_the_next_query():
    db, recorded = Server(), []
    deferred = batch.Deferred(recorded.append, db.execute, db.query, scripts=True)
    deferred.setting("SET a.b=false")
    deferred.run("CACHE TABLE a AS SELECT 1")
    deferred.query("SELECT 2")
    assert db.sent == ["BEGIN EXECUTE IMMEDIATE 'SET a.b=false'; CACHE TABLE a AS SELECT 1; SELECT 2; END"]
    assert recorded == ["SET a.b=false", "CACHE TABLE a AS SELECT 1"]
    plain = Server()
    batch.Deferred(recorded.append, plain.execute, plain.query, scripts=False).setting("SET a.b=false")
    assert plain.sent == ["SET a.b=false"]


def test_the_settings_are_one_statement_once_a_process_knows_the_servers_defaults():
    first = Server(explicit={"spark.sql.ansi.enabled": "false"})
    settings = catalog.session_settings(first)
    assert first.sent == ["SET", "SET -v", f"SET {INTERNAL}", "SET"]  # SET again: nothing was set meanwhile
    assert settings[INTERNAL] == "internal default" and settings["spark.sql.ansi.enabled"] == "false"
    assert settings["spark.sql.session.timeZone"] == "default"

    again = Server(explicit={INTERNAL: "false", "spark.sql.ansi.enabled": "true"})  # same server (app id)
    settings = catalog.session_settings(again)
    assert again.sent == ["SET"]
    assert settings[INTERNAL] == "false" and settings["spark.sql.ansi.enabled"] == "true"
    assert settings["spark.sql.session.timeZone"] == "default"  # unset: its default, learned before

    unlearned = Server(explicit={INTERNAL: "false"})  # ansi unset: its default was never asked
    assert catalog.session_settings(unlearned)["spark.sql.ansi.enabled"] == "default"
    assert unlearned.sent[:2] == ["SET", "SET -v"]
    assert catalog.meaning(settings).keys() == set(catalog.MEANING_SETTINGS)

    other = Server(app="app-2")  # another server: its own defaults
    catalog.session_settings(other)
    assert other.sent[:3] == ["SET", "SET -v", f"SET {INTERNAL}"]
    assert not catalog.scripts(catalog.session_settings(other)) and catalog.scripts({catalog.SCRIPTING: "true"})
    assert catalog.before_caching(settings) == (f"SET {catalog.CACHE_PRUNING}=false",)  # unset: Spark's default, on
    assert not catalog.before_caching(catalog.session_settings(Server(explicit={catalog.CACHE_PRUNING: "false"})))


def test_a_process_reads_the_defaults_a_run_on_the_same_server_recorded_in_its_watermark():
    """`catalog.server_defaults` goes in the watermark (`Watermark.defaults`); a later process
    reads it there instead of asking, on the same server only (`catalog.SERVER_KEYS`)."""
    first = Server(explicit={"spark.driver.host": "h", "spark.driver.port": "1"})
    settings = catalog.session_settings(first)
    recorded = catalog.server_defaults(settings)
    assert recorded is not None and recorded["srv"] == "app-1 h 1" and recorded["v"][INTERNAL] == "internal default"
    mark = Watermark.decode(Watermark({"db.s": 3}, "abc", defaults=recorded).encode())
    assert mark is not None and mark.defaults == recorded

    catalog._DEFAULTS.clear()  # a new process
    again = Server(explicit={"spark.driver.host": "h", "spark.driver.port": "1"})
    assert catalog.session_settings(again, mark.defaults) == settings and again.sent == ["SET"]
    assert catalog.server_defaults(settings) == recorded
    catalog._DEFAULTS.clear()
    restarted = Server(explicit={"spark.driver.host": "h", "spark.driver.port": "2"})  # another server, same app id
    catalog.session_settings(restarted, mark.defaults)
    assert restarted.sent[:3] == ["SET", "SET -v", f"SET {INTERNAL}"]
    assert catalog.server_defaults({catalog.SERVER: ""}) is None and catalog.session_settings(Server(app=""))


MARK = Watermark({"db.s": 3}, "abc", token=7, run="r1")
BACKING = TableName("db", "v__ivm")


def test_a_batched_write_is_one_statement_between_its_settings():
    db, ran, releases = Server(), [], ["DROP VIEW IF EXISTS `d`"]
    with commit_metadata(db, MARK, BACKING, lambda sql, sent: ran.append((sql, sent)), True, releases) as write:
        write("MERGE INTO x")
    assert db.sent == [] and releases == []  # the script released the cached tables
    [(statement, sent)] = ran
    assert statement == "MERGE INTO x"
    assert sent.startswith("BEGIN EXECUTE IMMEDIATE 'SET spark.databricks.delta.commitInfo.userMetadata=dbt-ivm:")
    assert sent.index("SET spark.databricks.delta.write.txnVersion=7") < sent.index("MERGE INTO x")
    assert sent.endswith(
        "EXECUTE IMMEDIATE 'RESET spark.databricks.delta.write.txnVersion'; DROP VIEW IF EXISTS `d`; END"
    )


def test_a_failed_batched_write_resets_the_settings_one_by_one():
    db, releases = Server(fail="MERGE"), ["DROP VIEW IF EXISTS `d`"]
    with pytest.raises(RuntimeError), commit_metadata(db, MARK, BACKING, None, True, releases) as write:
        write("MERGE INTO x")
    assert releases == ["DROP VIEW IF EXISTS `d`"]  # left for the refresh to release
    assert db.sent[1:] == [
        f"RESET {c}"
        for c in (
            "spark.databricks.delta.commitInfo.userMetadata",
            "spark.databricks.delta.write.txnAppId",
            "spark.databricks.delta.write.txnVersion",
        )
    ]


def test_a_write_is_sent_alone_without_scripts_or_with_a_value_a_literal_cannot_hold():
    for scripts, backing in ((False, BACKING), (True, TableName("db", "it's__ivm"))):
        db = Server()
        with commit_metadata(db, MARK, backing, None, scripts=scripts) as write:
            write("MERGE INTO x")
        assert [s.split("=")[0] for s in db.sent] == [
            "SET spark.databricks.delta.commitInfo.userMetadata",
            "SET spark.databricks.delta.write.txnAppId",
            "SET spark.databricks.delta.write.txnVersion",
            "MERGE INTO x",
            "RESET spark.databricks.delta.commitInfo.userMetadata",
            "RESET spark.databricks.delta.write.txnAppId",
            "RESET spark.databricks.delta.write.txnVersion",
        ]


def test_session_confs_hold_the_session_and_are_reset_after_a_failed_block():
    """`commit.session_confs`, the window `commit_metadata` and `reconfigure.recording` share."""
    db = Server()
    with pytest.raises(RuntimeError, match="the write"), session_confs(db, {"a.b": "1", "c.d": "x y"}):
        assert SESSION_LOCK._owner is not None  # exclusively: no other thread's statement runs
        db.execute("MERGE INTO x")
        raise RuntimeError("the write")
    assert SESSION_LOCK._owner is None
    assert db.sent == ["SET a.b=1", "SET c.d=x y", "MERGE INTO x", "RESET a.b", "RESET c.d"]
    recorded = Server()
    with recording(recorded, Configuration(partition_by=("p",))):
        recorded.execute("INSERT INTO x")
    [setting, write, reset] = recorded.sent
    assert setting.startswith("SET spark.databricks.delta.commitInfo.userMetadata=") and '"p"' in setting
    assert (write, reset) == ("INSERT INTO x", "RESET spark.databricks.delta.commitInfo.userMetadata")
