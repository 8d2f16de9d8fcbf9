"""What a view class is to the engine: the rules it implements (`ViewRules`, and `Appender` when
its rows only grow as its sources do), what it sees of one refresh (`Refresh`) and the one write
it gives back (`Write`).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sqlglot import exp

from dbt_ivm.ir import TableName, ViewPlan
from dbt_ivm.metadata import Highs
from dbt_ivm.render import cache_as

Describe = Callable[[exp.Select], dict[str, str]]  # a query's column types (DESCRIBE QUERY)
Stage = Callable[[exp.Select], str]  # caches a query for the refresh, returns the cached table's name
# The append INSERT's error for an added row whose unique key is NULL (`joins.append_statement`):
# the key does not vouch that such a row is new, nothing is written, the general path refreshes.
NULL_KEY_FALLBACK = "fast_mv: an appended row has a NULL unique_key, so it may repeat a stored row:"


@dataclass(frozen=True)
class Refresh:
    """One refresh as a class sees it: the versions, the staged change sets, and a connection."""

    plan: ViewPlan
    backing: TableName
    old: Mapping[str, int]  # the versions the view last consumed
    new: Mapping[str, int]  # the versions pinned for this refresh
    # occurrence index -> cached net change of that source (see changes.change_select); empty when
    # the class does not stage (`ViewRules.stages_changes`): its statements read the feeds
    staged: Mapping[int, str]
    temp: Callable[[str], str]  # a fresh temporary table name, released after the commit
    run: Callable[[str], None]
    query: Callable[[str], list[dict[str, Any]]]
    describe: Describe  # a query's column types (DESCRIBE QUERY: planned, not run)
    unique_key: tuple[str, ...] = ()
    key_violation: str = ""  # the message when the declared unique key repeats
    output_types: Mapping[str, str] = field(default_factory=dict)  # the view's column types (read at inspect)
    # the stored rows' highest values the watermark vouches for (`Watermark.highs`); None: unknown
    highs: Highs | None = None
    # the storage's column types, described at inspect (`Inspection.storage_types`); None: not described
    storage_types: Mapping[str, str] | None = None


def stager(refresh: Refresh) -> Stage:
    """Caches a query for this refresh (released after its commit) and names the cached table."""
    levels = itertools.count(1)

    def stage(select: exp.Select) -> str:
        name = refresh.temp(f"level{next(levels)}")  # temp names are unique per role
        refresh.run(cache_as(name, select))
        return name

    return stage


class WritePath(str, enum.Enum):
    """How a run applied its changes (`Write.path`, `maintain.Outcome.path`)."""

    NONE = ""  # a build, or no source moved
    APPEND = "append"  # one INSERT straight from the change feeds (`Appender`)
    INSERT = "insert"  # the change set only added identities
    MERGE = "merge"
    EMPTY = "empty"  # the change set netted to nothing: an empty commit moves the watermark


@dataclass(frozen=True)
class Write:
    """The one statement that commits a refresh, and what to report of it."""

    path: WritePath  # shown in the log and the outcome
    statement: exp.Expr
    inserted: int | None = None  # None: read from the commit's metrics
    deleted: int | None = None
    detail: str = ""  # for the log, e.g. "3 groups recomputed"
    check_repeats: bool = False  # a change row may match several stored rows if the unique key lied
    highs: Highs | None = None  # `Refresh.highs` after this write; None: unknown


class ViewRules(Protocol):
    """What a view class provides (each module of this package that has `RULES` is one)."""

    # A change set that only adds rows is written by one INSERT, not a MERGE (what `auto` charges
    # a refresh of appended sources: `policy.Inputs.appends_only`).
    INSERTS: bool

    def stages_changes(self, plan: ViewPlan) -> bool:
        """Whether each moved source's net change is cached before `apply` (`Refresh.staged`)."""
        ...

    def build_select(
        self, plan: ViewPlan, versions: Mapping[str, int], types: Mapping[str, str] | None = None
    ) -> exp.Select:
        """The view's storage at the pinned versions: its rows and hidden columns (`types`: the
        model's column types, where the storage depends on them)."""
        ...

    def user_view(self, plan: ViewPlan, backing: TableName, describe: Describe) -> exp.Select:
        """What `ref()` returns, from the storage; `describe` gives a query's column types."""
        ...

    def apply(self, refresh: Refresh) -> Write:
        """The one write that applies the staged change sets (it may cache and query first)."""
        ...

    def explain_steps(self, plan: ViewPlan) -> list[str]:
        """How a change to each source is applied, for `explain`."""
        ...

    def ranged_columns(self, plan: ViewPlan, types: Mapping[str, str]) -> dict[str, str]:
        """The view columns (name: type) whose value ranges narrow the refresh's read of the stored
        rows: what `cluster_by` may name (see `layout`)."""
        ...


@runtime_checkable
class Appender(Protocol):
    """A class whose rows only grow when its sources only grow (monotone): sources that only
    appended take the append path, one INSERT straight from the change feeds. A class that is not
    one (an outer join, an aggregate) has no `append_statement`: `isinstance(rules, Appender)`."""

    def append_statement(
        self,
        plan: ViewPlan,
        backing: TableName,
        old: Mapping[str, int],
        new: Mapping[str, int],
        unique_key: tuple[str, ...],
        violation: str,
        broadcast: bool = False,
    ) -> exp.Insert:
        """The view's new rows straight from the change feeds, one INSERT."""
        ...
