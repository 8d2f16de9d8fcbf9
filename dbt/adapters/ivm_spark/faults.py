"""A test hook: kill the dbt process at a statement boundary of fast_mv's engine (kill -9, as a
crash or an operator would), to prove that the next `dbt run` repairs whatever a run left.

Off unless its environment variables are set; read once per process. Counted are the statements
the engine sends through the adapter (`_ConnectionDatabase`), numbered from 1 in the process:

  IVM_FAULT_STATEMENT_LOG=path          append each statement, one line each (whitespace runs as
                                        one space; a script whole): how many a refresh sends
  IVM_FAULT_KILL_AFTER_STATEMENTS=k     SIGKILL this process once statement k has returned
  IVM_FAULT_KILL_DURING_STATEMENT=k     SIGKILL this process IVM_FAULT_KILL_DELAY seconds (default
                                        0.5) after statement k was sent, while it runs: over the
                                        Thrift Server the server may finish it after its client died
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_counter = {"n": 0}
_lock = threading.Lock()


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def around(sql: str, statement: Callable[[], T]) -> T:
    """Run `statement` (sending `sql`), applying the hook's environment variables around it."""
    env = os.environ
    if not any(
        k in env
        for k in ("IVM_FAULT_STATEMENT_LOG", "IVM_FAULT_KILL_AFTER_STATEMENTS", "IVM_FAULT_KILL_DURING_STATEMENT")
    ):
        return statement()
    with _lock:
        _counter["n"] += 1
        n = _counter["n"]
        if env.get("IVM_FAULT_STATEMENT_LOG"):
            with open(env["IVM_FAULT_STATEMENT_LOG"], "a") as log:
                log.write(" ".join(sql.split()) + "\n")
    if env.get("IVM_FAULT_KILL_DURING_STATEMENT") == str(n):
        threading.Timer(float(env.get("IVM_FAULT_KILL_DELAY", "0.5")), _kill).start()
    result = statement()
    if env.get("IVM_FAULT_KILL_AFTER_STATEMENTS") == str(n):
        _kill()
    return result
