"""`SessionLock`: statements share the session, fast_mv's settings window has it alone."""

from __future__ import annotations

import threading
import time

import pytest

from dbt_ivm.session_lock import SessionLock

WAIT = 5.0  # seconds: generous, every wait below ends as soon as its event happens


def wait_until(condition) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_a_window_waits_for_running_statements_and_holds_new_ones_back():
    lock = SessionLock()
    events: list[str] = []
    statement_running, window_waiting, window_open = threading.Event(), threading.Event(), threading.Event()
    finish_statement, close_window = threading.Event(), threading.Event()

    def statement() -> None:
        with lock.shared():
            statement_running.set()
            finish_statement.wait(WAIT)
            events.append("statement ends")

    def window() -> None:
        window_waiting.set()
        with lock.exclusive():
            events.append("window opens")
            window_open.set()
            with lock.shared(), lock.exclusive():  # its own statements and nested windows pass
                events.append("own statement")
            close_window.wait(WAIT)
            events.append("window closes")

    def later_statement() -> None:
        with lock.shared():
            events.append("later statement")

    first = in_thread(statement)
    assert statement_running.wait(WAIT)
    opener = in_thread(window)
    assert window_waiting.wait(WAIT)
    wait_until(lambda: lock._waiting == 1)
    # a statement that arrives while the window waits is held back: the window goes first
    later = in_thread(later_statement)
    time.sleep(0.2)
    assert events == []
    finish_statement.set()
    assert window_open.wait(WAIT)
    close_window.set()
    for thread in (first, opener, later):
        thread.join(WAIT)
    assert events == ["statement ends", "window opens", "own statement", "window closes", "later statement"]


def test_statements_share_the_session():
    lock = SessionLock()
    both_inside = threading.Barrier(2, timeout=WAIT)

    def statement() -> None:
        with lock.shared(), lock.shared():
            both_inside.wait()

    threads = [in_thread(statement) for _ in range(2)]
    for thread in threads:
        thread.join(WAIT)
    assert not both_inside.broken


def test_a_statement_cannot_open_a_window():
    lock = SessionLock()
    with lock.shared(), pytest.raises(RuntimeError, match="exclusively"), lock.exclusive():
        pass
    with lock.exclusive():  # the failed attempt left the lock free
        pass
