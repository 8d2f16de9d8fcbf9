"""Profile `type: ivm_spark`: dbt-spark's credentials and connections, under our type name;
every statement runs under `SESSION_LOCK` shared (see `dbt_ivm.session_lock`)."""

from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, cast

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import (
    CONNECTION_LOST_EXCEPTIONS,
    PyhiveConnectionWrapper,
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from TCLIService.ttypes import TOperationState  # type: ignore[import-untyped]

from dbt.adapters.ivm_spark import faults
from dbt_ivm.session_lock import SESSION_LOCK


@dataclass
class IvmSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "ivm_spark"


class IvmSparkConnectionManager(SparkConnectionManager):
    TYPE = "ivm_spark"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        connection = super().open(connection)
        if type(connection.handle) is PyhiveConnectionWrapper:  # `thrift`, `http`
            connection.handle.__class__ = BackoffPolling
        creds = connection.credentials
        if getattr(creds, "method", None) == SparkConnectionMethod.SESSION:
            _quiet_session(creds.server_side_parameters)
        return connection

    def add_query(self, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        """Every statement dbt runs (models, hooks, tests, introspection, fast_mv's own) goes
        through here: it waits while fast_mv's session-wide write settings are set by another
        thread, and holds that window back until it has finished. Under the `thrift` method each
        connection is its own server session unless the server runs in single-session mode; the
        lock is taken under every method, so that mode is covered too, for the price of the
        other threads' statements waiting out fast_mv's write."""
        with SESSION_LOCK.shared():
            return super().add_query(*args, **kwargs)


logger = AdapterLogger("ivm_spark")
RUNNING = (TOperationState.INITIALIZED_STATE, TOperationState.PENDING_STATE, TOperationState.RUNNING_STATE)
# what dbt-spark re-submits a statement after (`query_retries`)
CONNECTION_LOST = cast(tuple[type[BaseException], ...], CONNECTION_LOST_EXCEPTIONS)


class BackoffPolling(PyhiveConnectionWrapper):
    """dbt-spark's Thrift connection, asking for a running statement's state after 20 ms, then
    after twice as long each time, up to the profile's `poll_interval` (dbt-spark sleeps
    `poll_interval`, whole seconds, default 5, between asks): a statement that runs 50 ms costs
    about 50 ms on a server that answers at once, and one that runs 6 s about 6 s. (A
    HiveThriftServer2 holds each ask up to 5 s until the statement ends, so there the sleeps
    only start after 5 s.) dbt-spark's loop reads `poll_interval` before each sleep."""

    FIRST_WAIT = 0.02

    @property  # type: ignore[override]
    def poll_interval(self) -> float:
        # the profile's value is kept in the instance's own attribute (dbt-spark's __init__ sets it)
        wait = float(self.__dict__.get("_wait", self.FIRST_WAIT))
        self.__dict__["_wait"] = min(2 * wait, max(float(self.__dict__.get("poll_interval", 5)), self.FIRST_WAIT))
        return wait

    @poll_interval.setter
    def poll_interval(self, value: float) -> None:
        self.__dict__["poll_interval"] = value

    def _execute_with_polling(self, sql: str, bindings: Any = None) -> None:
        """dbt-spark calls this again with a new cursor after a lost connection (`query_retries`),
        while the copy sent before may still run in the server's session: that copy is waited out
        first, so the two never run at once. (fast_mv's write sets session-wide settings, its
        watermark and Delta's idempotent-write pair, around its MERGE: one copy's RESET must not
        land inside the other's MERGE. Once the first copy has committed, Delta skips the second.)"""
        if (earlier := self.__dict__.pop("_unanswered", None)) is not None:
            self._wait_out(earlier)
        self.__dict__["_wait"] = self.FIRST_WAIT
        self.__dict__["_unanswered"] = self._cursor
        try:
            fault = faults.take()  # the test hook's connection faults (`faults.py`), None otherwise
            if fault == "lose":
                assert self._cursor
                self._cursor.execute(sql.strip().removesuffix(";"), bindings, async_=True)
                raise ConnectionResetError(
                    "IVM_FAULT_LOSE_ANSWER_OF_STATEMENT: the connection was lost at the first poll"
                )
            if fault == "cut":
                threading.Timer(faults.delay(), faults.cut, [self.handle]).start()
            super()._execute_with_polling(sql, bindings)
        except CONNECTION_LOST:
            raise  # its state unknown: waited out before the next statement on this connection
        except BaseException:
            self.__dict__.pop("_unanswered", None)
            raise
        self.__dict__.pop("_unanswered", None)

    def close(self) -> None:
        """dbt-spark's close, which fails on a connection that was cut (pyhive's CloseSession
        writes to the dead socket) and would stand in for the error that the model failed with."""
        try:
            super().close()
        except CONNECTION_LOST as e:
            logger.debug(f"the connection was gone at its close: {type(e).__name__}: {e}")

    def _wait_out(self, cursor: Any) -> None:
        """Until the statement `cursor` sent has ended, or its state cannot be asked (the
        connection is gone, and the server's session with it: `gone`)."""
        wait = self.FIRST_WAIT
        try:
            while cursor.poll().operationState in RUNNING:
                time.sleep(wait)
                wait = min(2 * wait, 5.0)
        except Exception:  # nothing to wait for
            self.__dict__["_gone"] = True

    @property
    def gone(self) -> bool:
        """The server could not be asked about a statement whose answer was lost: the connection
        is dead, and a statement sent on it fails (`_ConnectionDatabase` opens a new one)."""
        return bool(self.__dict__.get("_gone"))


def _quiet_session(conf: dict[str, str]) -> None:
    """Start the session as dbt-spark would (embedded, or Spark Connect where `spark.remote` or
    SPARK_REMOTE names a server), then raise Spark's log level: dbt-spark re-applies its confs on
    every statement and Spark warns each time otherwise."""
    from pyspark.sql import SparkSession

    from dbt_ivm.session import quiet

    if "spark.remote" in conf or os.environ.get("SPARK_REMOTE"):
        # Spark Connect: dbt-spark asks for Hive support on every statement, a static setting the
        # server already has; pyspark warns each time it cannot set it again
        warnings.filterwarnings("ignore", message=r"Failed to set spark\.sql\.catalogImplementation")
    if SparkSession.getActiveSession() is not None:
        return
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    quiet(builder.getOrCreate())
