"""Several statements in one round trip: a SQL script (`BEGIN s1; s2; …; END`), which Spark (4.1:
`spark.sql.scripting.enabled`, on by default) runs as one statement, in order, stopping at the
first that fails with that statement's error. Over a Thrift Server each statement is a round trip
and a poll, so a refresh sends its statements that need no answer in the script of the next one.

What a script may hold: Spark's own statements (CACHE TABLE, DROP VIEW, MERGE, INSERT, CREATE);
not Delta's (DESCRIBE HISTORY: the script's parser is Spark's, not Delta's extension). A script
reads `SET a.b=c` as a SQL variable's assignment, so a setting is set (and reset) by EXECUTE
IMMEDIATE of the statement's text. A script's answer is its last statement's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from sqlglot import exp

from dbt_ivm import render

# a CACHE TABLE statement's table name, as `render.cache_as` writes it (quoted or not)
CACHED = re.compile(r"CACHE TABLE `?(\w+)`? AS ")


def script(statements: Sequence[str]) -> str:
    """One statement that runs `statements` in order (the one itself when there is one)."""
    if len(statements) == 1:
        return statements[0]
    return "BEGIN " + "; ".join(statements) + "; END"


def plain(value: str) -> bool:
    """A setting's value that a string literal holds as it is, under any
    `spark.sql.parser.escapedStringLiterals` (no quote, no backslash); others are set alone."""
    return "'" not in value and "\\" not in value


def immediate(statement: str) -> str:
    """`statement` (a SET or RESET of a setting) as a statement of a script."""
    assert plain(statement), statement
    return f"EXECUTE IMMEDIATE {render.sql(exp.Literal.string(statement))}"


class Deferred:
    """A refresh's CACHE TABLE statements, which need no answer: recorded when run, sent in the
    script of the next query (`scripts`), so a cache and the query that reads it are one round
    trip; `flush` sends what is left. A failure of one surfaces at that query or flush."""

    def __init__(
        self,
        record: Callable[[str], None],
        send: Callable[[str], None],
        ask: Callable[[str], list[dict[str, Any]]],
        scripts: bool,
        settings: Sequence[str] = (),
    ):
        """`settings`: SETs made before anything else (`setting`), of settings no query's column
        types depend on (`catalog.before_caching`: the cached batches' pruning)."""
        self.record, self.send, self.ask, self.scripts = record, send, ask, scripts
        self.pending: list[str] = []
        for statement in settings:
            self.setting(statement)
        self.typeless = tuple(self.pending)  # pending until the first query: no describe waits for them

    def run(self, statement: str) -> None:
        self.record(statement)
        if self.scripts and statement.startswith("CACHE TABLE "):
            self.pending.append(statement)
        else:
            self.flush()
            self.send(statement)

    def setting(self, statement: str) -> None:
        """A SET, which needs no answer: in the script of the next query, as a CACHE TABLE is
        (`immediate`), or sent alone."""
        self.record(statement)
        if self.scripts and plain(statement):
            self.pending.append(immediate(statement))
        else:
            self.flush()
            self.send(statement)

    def query(self, sql: str) -> list[dict[str, Any]]:
        pending, self.pending = self.pending, []
        return self.ask(script([*pending, sql]))

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        if pending:
            self.send(script(pending))

    def flushing(self, describe: Callable[[Any], dict[str, str]]) -> Callable[[Any], dict[str, str]]:
        """`describe` (DESCRIBE QUERY, which a script does not answer), after a flush where its query
        reads a deferred cache (`waits_for`); else the caches stay deferred, to the next query's script."""

        def flushed(query: Any) -> dict[str, str]:
            if self.waits_for(render.sql(query) if isinstance(query, exp.Expr) else str(query)):
                self.flush()
            return describe(query)

        return flushed

    def waits_for(self, sql: str) -> bool:
        """A pending statement may change what `sql` is planned as: one other than the first
        settings (`typeless`) and the CACHE TABLEs of names `sql` does not hold."""
        for statement in self.pending:
            if statement in self.typeless:
                continue
            cached = CACHED.match(statement)
            if cached is None or re.search(rf"(?<![\w]){re.escape(cached.group(1))}(?![\w])", sql):
                return True
        return False
