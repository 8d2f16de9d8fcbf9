"""Keeps fast_mv's session-wide write settings away from every other statement on the session.

Delta takes a write's commit metadata and idempotent-write ids from session settings
(`commit.commit_metadata`), and a clustered build's layout settings are session-wide too
(`commit.session_overrides`). dbt's threads share one SparkSession under dbt-spark's `session`
method, so a statement of another thread that ran between fast_mv's `SET` and `RESET` would be
committed under fast_mv's settings. `SESSION_LOCK` is a readers-writer lock over the session:
every statement takes it shared (the adapter's `add_query`, `session.SparkDatabase`), and
fast_mv's set-write-reset window takes it exclusive, so the window starts after every running
statement has finished (Delta reads the commit metadata when a write commits, not when it
starts) and no other statement starts before the window ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SessionLock:
    """A readers-writer lock, re-entrant in each thread.

    `shared()`: any number of threads at once, none while another thread holds or awaits
    `exclusive()` (a waiting window goes first, so a steady stream of statements cannot
    starve it). `exclusive()`: one thread, once no other thread holds it shared. The
    exclusive holder's own statements (shared) and nested windows (exclusive) pass
    through; a thread holding it shared cannot take it exclusive (that would wait for
    itself) and gets an error instead.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._shared: dict[int, int] = {}  # thread id -> depth of its shared holds
        self._owner: int | None = None  # the exclusive holder's thread id
        self._depth = 0  # of the exclusive holder's nested windows
        self._waiting = 0  # threads awaiting exclusive

    @contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._changed:
            if self._owner != me and me not in self._shared:
                while self._owner is not None or self._waiting:
                    self._changed.wait()
            self._shared[me] = self._shared.get(me, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                self._shared[me] -= 1
                if not self._shared[me]:
                    del self._shared[me]
                    self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._changed:
            if self._owner == me:
                self._depth += 1
            else:
                if me in self._shared:
                    raise RuntimeError("a thread running a statement cannot take the session exclusively")
                self._waiting += 1
                try:
                    while self._owner is not None or self._shared:
                        self._changed.wait()
                finally:
                    self._waiting -= 1
                    self._changed.notify_all()  # statements held back by a wait that failed
                self._owner, self._depth = me, 1
        try:
            yield
        finally:
            with self._changed:
                self._depth -= 1
                if not self._depth:
                    self._owner = None
                    self._changed.notify_all()


# One per process: dbt's threads (and a test's) share one SparkSession per process.
SESSION_LOCK = SessionLock()
