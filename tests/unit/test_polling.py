"""The adapter's Thrift connection asks for a running statement's state after 20 ms, then twice as
long each time up to `poll_interval` (`BackoffPolling`), not `poll_interval` from the first ask."""

from __future__ import annotations

from types import SimpleNamespace

from dbt.adapters.spark.connections import PyhiveConnectionWrapper, ThriftState

from dbt.adapters.ivm_spark.connections import BackoffPolling


class Cursor:
    """A statement that is running for `polls` asks, then finished."""

    def __init__(self, polls: int):
        self.left = polls

    def execute(self, sql, bindings, async_=False):
        assert async_

    def poll(self):
        self.left -= 1
        state = ThriftState.RUNNING_STATE if self.left >= 0 else ThriftState.FINISHED_STATE
        return SimpleNamespace(operationState=state, errorMessage=None)


def test_a_running_statement_is_asked_after_20_ms_then_twice_as_long_up_to_poll_interval(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr("dbt.adapters.spark.connections.time.sleep", slept.append)
    wrapper = PyhiveConnectionWrapper(handle=None, poll_interval=1)
    wrapper.__class__ = BackoffPolling  # as `IvmSparkConnectionManager.open` does
    for polls in (8, 2):
        wrapper._cursor = Cursor(polls)
        wrapper.execute("SELECT 1")
    assert slept == [0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.0, 0.02, 0.04]  # each statement starts over
    wrapper.poll_interval = 0  # the smallest the profile accepts: 20 ms between asks
    wrapper._cursor = Cursor(2)
    slept.clear()
    wrapper.execute("SELECT 1")
    assert slept == [0.02, 0.02]
