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
  (k: a number, or `write`: the refresh's write, the first statement that `is_write`)
  IVM_FAULT_CUT_DURING_STATEMENT=k      shut the client's socket down IVM_FAULT_KILL_DELAY seconds
                                        after statement k was sent, while it runs (`thrift`): the
                                        server loses the session; dbt-spark's re-submission
                                        (`query_retries`) then fails on the dead socket
  IVM_FAULT_LOSE_ANSWER_OF_STATEMENT=k  send statement k, then report the connection lost at its
                                        first poll (`thrift`): a cut that left the server's session
                                        alive; with `query_retries` dbt-spark re-submits the
                                        statement while the first copy still runs
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_counter = {"n": 0}
_lock = threading.Lock()
# the connection fault armed for the statement being sent (`take`): "cut" or "lose"
_armed: dict[int, str] = {}  # by thread
_wrote: dict[str, bool] = {}  # the process sent its first write
WRITES = ("MERGE INTO", "INSERT INTO", "CREATE OR REPLACE TABLE")  # a refresh's one write to its storage
HOOKS = (
    "IVM_FAULT_STATEMENT_LOG",
    "IVM_FAULT_KILL_AFTER_STATEMENTS",
    "IVM_FAULT_KILL_DURING_STATEMENT",
    "IVM_FAULT_CUT_DURING_STATEMENT",
    "IVM_FAULT_LOSE_ANSWER_OF_STATEMENT",
)


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def around(sql: str, statement: Callable[[], T]) -> T:
    """Run `statement` (sending `sql`), applying the hook's environment variables around it."""
    env = os.environ
    if not any(k in env for k in HOOKS):
        return statement()
    with _lock:
        _counter["n"] += 1
        n = _counter["n"]
        if env.get("IVM_FAULT_STATEMENT_LOG"):
            with open(env["IVM_FAULT_STATEMENT_LOG"], "a") as log:
                log.write(" ".join(sql.split()) + "\n")
        at = {str(n), "write"} if is_write(sql) and not _wrote.get("write") else {str(n)}
        _wrote["write"] = _wrote.get("write", False) or "write" in at
    if env.get("IVM_FAULT_KILL_DURING_STATEMENT") in at:
        threading.Timer(delay(), _kill).start()
    for fault, key in (("cut", "IVM_FAULT_CUT_DURING_STATEMENT"), ("lose", "IVM_FAULT_LOSE_ANSWER_OF_STATEMENT")):
        if env.get(key) in at:
            _armed[threading.get_ident()] = fault
    try:
        result = statement()
    finally:
        _armed.pop(threading.get_ident(), None)
    if env.get("IVM_FAULT_KILL_AFTER_STATEMENTS") in at:
        _kill()
    return result


def is_write(statement: str) -> bool:
    """A refresh's write: alone, or in the script that sets its confs around it (`batch`)."""
    text = " ".join(statement.split()).upper()
    return text.startswith(WRITES) or (text.startswith("BEGIN ") and any(f"; {w}" in text for w in WRITES))


# a statement's tokens: a quoted name or string, a word (dotted), a number, any other character
TOKEN = re.compile(r"`(?:[^`]|``)*`|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[A-Za-z_][\w.]*|\d[\w.]*|\S")
# where a statement's head (what it is and what it writes) ends: its query, options and values
HEAD_ENDS = {"AS", "USING", "ON", "WHERE", "VALUES", "LIMIT", "FROM", "SELECT", "WITH", "SET", "(", "=", ";"}
HEX = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-f]*\d)[0-9a-f]{8,}(?![0-9A-Za-z])")


def shape(statement: str) -> str:
    """What a statement is, the same in two refreshes on one path whatever their data: for each
    statement of it (each of a script's, `BEGIN s1; s2; END`), its head, the keywords and the name
    it writes up to its query, options or values (`CACHE TABLE n`, `MERGE INTO t`, `SET key`, a
    query's first keyword; EXECUTE IMMEDIATE of a string: the string's), with hex names and numbers
    masked. A refresh that took another path (another write, other tables cached, another script)
    has another shape at some statement."""
    tokens = TOKEN.findall(statement.strip())
    if len(tokens) > 1 and tokens[0].upper() == "BEGIN" and tokens[-1].upper() == "END":
        parts: list[list[str]] = [[]]
        for token in tokens[1:-1]:
            parts[-1:] = [parts[-1], []] if token == ";" else [[*parts[-1], token]]
        return "BEGIN " + "; ".join(_head(p) for p in parts if p) + " END"
    return _head(tokens)


def _head(tokens: list[str]) -> str:
    if not tokens:
        return ""
    head = tokens[:1]
    for token in [] if head[0].upper() in ("SELECT", "WITH") else tokens[1:8]:
        if token.upper() in HEAD_ENDS:
            break
        if token[0] == "'" and [t.upper() for t in head] == ["EXECUTE", "IMMEDIATE"]:
            head.append(f"[{shape(token[1:-1])}]")
            break
        head.append("'…'" if token[0] in "'\"" else token)
    return re.sub(r"\d+", "#", HEX.sub("H", " ".join(head))).upper()


def delay() -> float:
    return float(os.environ.get("IVM_FAULT_KILL_DELAY", "0.5"))


def take() -> str | None:
    """The connection fault armed for the statement being sent ("cut", "lose"), once."""
    return _armed.pop(threading.get_ident(), None)


def cut(connection: object) -> None:
    """Shut down the socket under a pyhive connection (found among its transports' attributes)."""
    from thrift.transport.TSocket import TSocket  # type: ignore[import-untyped]

    seen: list[object] = [connection]
    for obj in seen:
        if isinstance(obj, TSocket):
            if obj.handle is not None:
                obj.handle.shutdown(socket.SHUT_RDWR)
            return
        if len(seen) < 50:
            seen += [v for v in getattr(obj, "__dict__", {}).values() if hasattr(v, "__dict__")]
