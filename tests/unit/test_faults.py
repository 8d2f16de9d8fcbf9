"""The adapter's test hook for connection faults (`dbt/adapters/ivm_spark/faults.py`): the answer of
the refresh's write lost at its first poll, which dbt-spark re-submits under `query_retries`; and
the adapter's Thrift connection, which waits out the copy sent before it re-submits one."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from dbt.adapters.spark.connections import PyhiveConnectionWrapper, SparkConnectionManager, ThriftState
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ivm_spark import faults
from dbt.adapters.ivm_spark.connections import BackoffPolling

WRITE = "BEGIN EXECUTE IMMEDIATE 'SET a=1'; MERGE INTO s.v__ivm t USING c ON t.k = c.k; END"


class Server:
    """The statements sent (`sent`) and what happened, in order (`events`): `send i`, `ask i`
    (an ask of statement i's state); each statement runs for two asks."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.events: list[str] = []

    def cursor(self) -> Cursor:
        return Cursor(self)


class Cursor:
    def __init__(self, server: Server):
        self.server, self.polls, self.number = server, 0, 0

    def execute(self, sql, bindings, async_=False):
        self.server.sent.append(sql)
        self.number = len(self.server.sent)
        self.server.events.append(f"send {self.number}")

    def poll(self):
        self.polls += 1
        self.server.events.append(f"ask {self.number}")
        state = ThriftState.RUNNING_STATE if self.polls <= 2 else ThriftState.FINISHED_STATE
        return SimpleNamespace(operationState=state, errorMessage=None)


def connection(server: Server, retries: int) -> PyhiveConnectionWrapper:
    wrapper = PyhiveConnectionWrapper(handle=server, query_retries=retries)
    wrapper.__class__ = BackoffPolling  # as `IvmSparkConnectionManager.open` does
    return wrapper


@pytest.fixture
def fresh_process(monkeypatch):
    monkeypatch.setattr(faults, "_counter", {"n": 0})
    monkeypatch.setattr(faults, "_wrote", {})
    monkeypatch.setattr("dbt.adapters.spark.connections.time.sleep", lambda _: None)
    monkeypatch.setattr("dbt.adapters.ivm_spark.connections.time.sleep", lambda _: None)


def test_the_write_is_the_merge_alone_or_in_its_script():
    assert faults.is_write(WRITE) and faults.is_write("INSERT INTO s.v__ivm SELECT 1")
    assert not faults.is_write("BEGIN CACHE TABLE c AS SELECT 1; SELECT 1; END")
    assert not faults.is_write("SELECT 'MERGE INTO'")


@pytest.mark.parametrize("retries", [0, 1])
def test_a_lost_answer_of_the_write_is_sent_again_under_query_retries(monkeypatch, fresh_process, retries):
    monkeypatch.setenv("IVM_FAULT_LOSE_ANSWER_OF_STATEMENT", "write")
    server = Server()
    wrapper = connection(server, retries)

    def send(sql: str) -> None:
        faults.around(sql, lambda: wrapper.cursor().execute(sql))

    send("SELECT 1")  # not the write: answered
    if retries:
        send(WRITE)  # sent, its answer lost, sent again: answered
    else:
        with pytest.raises(DbtRuntimeError, match="Connection lost"):
            send(WRITE)
    assert server.sent == ["SELECT 1", WRITE, *[WRITE] * retries]
    send(WRITE)  # only the process's first write
    assert len(server.sent) == 3 + retries
    # the copy re-submitted, or the next statement, is sent once the first copy has ended
    waited = ["send 2", "ask 2", "ask 2", "ask 2", "send 3"]
    assert server.events[4:9] == waited, server.events


def test_a_cut_connection_closes_quietly_and_its_cleanup_leaves_the_write_error_standing():
    """After a cut, dbt-spark's close and fast_mv's RESETs fail on the dead socket: neither may
    stand in for the error the write failed with."""
    from thrift.transport.TTransport import TTransportException

    from dbt_ivm.commit import commit_metadata
    from dbt_ivm.ir import TableName
    from dbt_ivm.metadata import Watermark

    def dead(*_):
        raise TTransportException(message="unexpected exception")

    wrapper = connection(Server(), 0)
    wrapper.handle = SimpleNamespace(close=dead)
    wrapper.close()  # no error

    class Db:
        def execute(self, sql: str) -> None:
            dead()

    def write(statement: str, sent: str | None) -> None:
        raise ConnectionResetError("the write's connection was cut")

    mark = Watermark(sources={"db.o": 1}, definition_hash="h", token=2, run="r")
    cut = pytest.raises(ConnectionResetError, match="the write's connection was cut")
    with cut, commit_metadata(Db(), mark, TableName("db", "v__ivm"), write, scripts=True) as committing:
        committing("MERGE INTO db.v__ivm …")


MERGE = "MERGE INTO `s`.`v__ivm` AS t"


def refresh_statements(
    data: str, cached: tuple[str, ...] = ("chg0",), write: str = MERGE, lost: bool = False
) -> list[str]:
    """A refresh's statements as the hook logs them, `data` standing for what the change set puts
    in them (group keys, values, a watermark's versions), `cached` the tables its write script caches;
    `lost`: the change set took a group's minimum, and the aggregate recomputes that group first."""
    uid = "3fa9b1c2d4e5" if data == "a" else "9c0d1e2f3a4b"
    caches = [f"CACHE TABLE `__ivm_{role}_{uid}` AS SELECT * FROM s.o WHERE status IN ({data!r})" for role in cached]
    watermark = json.dumps({"sources": {"s.o": len(data) * 7}, "run": uid})
    mark = f"SET spark.databricks.delta.commitInfo.userMetadata=ivm:{watermark}"
    recompute = (
        f"BEGIN CACHE TABLE `__ivm_lost_{uid}` AS SELECT 1; CACHE TABLE `__ivm_recomputed_{uid}` AS SELECT 2; END"
    )
    released = [*cached, *(("lost", "recomputed") if lost else ())]
    drops = [f"DROP VIEW IF EXISTS `__ivm_{role}_{uid}`" for role in released]  # the cached tables, released
    return [
        "DESCRIBE HISTORY `s`.`v__ivm` LIMIT 5",
        "SET spark.sql.caseSensitive",
        f"SELECT count(*) AS n, max(version) FROM s.o WHERE status = {data!r}",
        *([recompute] if lost else []),
        "BEGIN " + "; ".join([*caches, f"EXECUTE IMMEDIATE {mark!r}", f"{write} USING {data} ON 1 = 1", *drops, "END"]),
        "DESCRIBE HISTORY `s`.`v__ivm` LIMIT 20",
    ]


def after(k: int) -> dict[str, str]:
    return {"IVM_FAULT_KILL_AFTER_STATEMENTS": str(k)}


def test_a_statement_s_shape_is_what_it_is_and_writes_not_its_data():
    logged, killed = refresh_statements("a"), refresh_statements("s2', 'open")
    assert [faults.shape(s) for s in logged] == [faults.shape(s) for s in killed]
    assert faults.shape(logged[3]) == (
        "BEGIN CACHE TABLE `__IVM_CHG#_H`; EXECUTE IMMEDIATE [SET SPARK.DATABRICKS.DELTA.COMMITINFO.USERMETADATA]; "
        "MERGE INTO `S` . `V__IVM`; DROP VIEW IF EXISTS `__IVM_CHG#_H` END"
    )
    other_paths = [
        refresh_statements("b", ("chg0", "chg1")),  # one more change set cached
        refresh_statements("b", ("touched",)),  # another table cached
        refresh_statements("b", write="CREATE OR REPLACE TABLE `s`.`v__ivm`"),  # a rebuild
        refresh_statements("b", lost=True),  # the aggregate's recompute first
    ]
    for path in other_paths:
        assert [faults.shape(s) for s in path] != [faults.shape(s) for s in logged]


def test_a_killed_run_is_on_the_path_of_the_next_run_until_its_write_and_then_on_the_logged_one():
    from integration_tests.test_kill import killed_where_meant

    logged = refresh_statements("a")  # no group lost its minimum
    lost = refresh_statements("b", lost=True)  # a later round's change set: one did
    for k in range(1, len(lost) + 1):  # killed after k, the next run refreshes the same change set
        killed_where_meant(logged, lost[:k], after(k), lost)
    wrong = [
        (lost[:4], after(4), refresh_statements("b")),  # not the next run's path
        (refresh_statements("b")[:3], after(4), refresh_statements("b")),  # killed after 3, not 4
        ([*lost[:5], "DROP VIEW IF EXISTS x"], after(6), lost),  # after its write, not the logged run's path
        (rebuild := refresh_statements("b", write="CREATE OR REPLACE TABLE `s`.`v__ivm`"), after(5), rebuild),
        (rebuild[:3], after(3), rebuild),  # the next run rebuilt: not a refresh's path
    ]
    for ran, hook, repaired in wrong:
        with pytest.raises(AssertionError):
            killed_where_meant(logged, ran, hook, repaired)
    with pytest.raises(AssertionError, match="no write was sent"):
        killed_where_meant(logged, lost[:3], {"IVM_FAULT_KILL_DURING_STATEMENT": "write"}, lost)
    killed_where_meant(logged, lost[:5], {"IVM_FAULT_KILL_DURING_STATEMENT": "write"}, lost)


def test_a_connection_found_dead_is_replaced_before_the_engine_s_next_statement():
    """After a cut, the server cannot be asked about the statement whose answer was lost: the
    connection is `gone`, and the engine's next statement (reading whether its write committed)
    goes through a new one. A lost answer on a live connection keeps it (its session still runs
    the statement, which the next one waits out)."""
    from dbt.adapters.ivm_spark.impl import _ConnectionDatabase

    def dead():
        raise ConnectionResetError("the socket is closed")

    live, cut = connection(Server(), 0), connection(Server(), 0)
    live._wait_out(Server().cursor())
    cut._wait_out(SimpleNamespace(poll=dead))
    assert not live.gone and cut.gone

    class Connections:
        def __init__(self, handle):
            self.connection = SimpleNamespace(handle=handle, state="open")
            self.sent: list[tuple[object, str]] = []

        def get_thread_connection(self):
            return self.connection

        def close(self, connection):
            connection.handle.close()  # fails on the dead socket: not the engine's error

        def open(self, connection):
            connection.handle, connection.state = "new", "open"

        exception_handler = SparkConnectionManager.exception_handler  # dbt-spark's own

        def add_query(self, sql, auto_begin):
            self.sent.append((self.connection.handle, sql))
            return self.connection, SimpleNamespace(description=[("a",)], fetchall=lambda: [(1,)])

    cut.handle = SimpleNamespace(close=dead)
    for handle, expected in ((live, live), (cut, "new")):
        adapter = SimpleNamespace(connections=Connections(handle))
        db = _ConnectionDatabase(adapter)  # type: ignore[arg-type]
        assert db.query("DESCRIBE HISTORY s.v__ivm") == [{"a": 1}]
        db.execute("RESET a")
        assert adapter.connections.sent == [(expected, "DESCRIBE HISTORY s.v__ivm"), (expected, "RESET a")]
    # a fetch that fails is dbt's error, as dbt-spark's `execute` says it, not an unhandled one
    adapter = SimpleNamespace(connections=Connections(live))
    adapter.connections.add_query = lambda sql, auto_begin: (None, SimpleNamespace(description=[], fetchall=dead))
    with pytest.raises(DbtRuntimeError, match="the socket is closed"):
        _ConnectionDatabase(adapter).query("DESCRIBE HISTORY s.v__ivm")  # type: ignore[arg-type]
