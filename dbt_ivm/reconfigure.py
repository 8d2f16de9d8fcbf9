"""A run's `on_configuration_change`: what it does when the model's configuration differs from
the recorded one (`configuration.diff`), and the alter that applies a change in place.

- `apply` (dbt's default): a change only a rebuild applies (`partition_by`) turns the run into a
  rebuild, logged `Applying REPLACE to: <view>` (refused under `refresh_policy: incremental`,
  which never rebuilds on its own); any other is applied after the run's data write, logged
  `Applying ALTER to: <view>`: properties set and unset, the liquid clustering of the next
  writes, the view created again with its comments; one last commit records the configuration.
- `continue`: nothing is applied, the data is refreshed as usual, and dbt warns (the macro).
- `fail`: nothing is written; the run fails with dbt's message (the macro).
A build (first, `--full-refresh`, or one the run needs anyway) applies the whole configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from dbt_ivm.catalog import Database
from dbt_ivm.commit import USER_METADATA_CONF, session_confs
from dbt_ivm.configuration import (
    Changes,
    Configuration,
    ConfigurationChanged,
    Docs,
    OnChange,
    alter_statements,
    diff,
    record_statement,
)
from dbt_ivm.decide import Decision, Path
from dbt_ivm.errors import StateError
from dbt_ivm.inspection import Inspection
from dbt_ivm.ir import TableName
from dbt_ivm.policy import RefreshPolicy


@dataclass(frozen=True)
class Reconfiguration:
    decision: Decision  # the run's path, a rebuild where `apply` needs one
    changes: Changes | None  # what the alter applies after the data write; None: no alter
    mode: str = ""  # 'continue' where changes were found and left as they are


def reconfigure(
    i: Inspection, decision: Decision, now: Configuration, mode: OnChange, defaults: Mapping[str, str]
) -> Reconfiguration:
    """What `on_configuration_change` makes of the run decided; raises under `fail`, and under
    `apply` where only a rebuild applies the change and `refresh_policy` is `incremental`."""
    if decision.path is Path.BUILD or i.stored is None:
        return Reconfiguration(decision, None)
    changes = diff(i.stored.configured, now, defaults)
    if changes is None:
        return Reconfiguration(decision, None)
    if mode is OnChange.FAIL:
        raise ConfigurationChanged(f"fast_mv {i.view}: the configuration changed: {changes.describe()}")
    if mode is OnChange.CONTINUE:
        return Reconfiguration(decision, None, OnChange.CONTINUE.value)
    if not changes.replace:
        return Reconfiguration(decision, changes)
    reason = f"on_configuration_change 'apply': {'; '.join(changes.replace)}, which only a rebuild applies"
    if i.policy is RefreshPolicy.INCREMENTAL:
        raise StateError(
            f"fast_mv {i.view}: {reason}; refresh_policy 'incremental' never rebuilds on its own: run dbt with "
            "--full-refresh for this model, or set on_configuration_change to 'continue' to keep the storage as it is"
        )
    return Reconfiguration(replace(decision, path=Path.BUILD, reason=reason), None)


@contextmanager
def recording(db: Database, configuration: Configuration) -> Iterator[None]:
    """The next commit carries `configuration` in its metadata (`commit.session_confs`)."""
    with session_confs(db, {USER_METADATA_CONF: configuration.marker()}):
        yield


class Runner(Protocol):
    """What an alter runs through (a `maintain.Maintainer`)."""

    db: Database
    run_id: str
    configuration: Configuration

    @property
    def backing(self) -> TableName: ...

    def run(self, sql: str) -> None: ...


def alter(runner: Runner, changes: Changes, create_view: Callable[[], None]) -> None:
    """Apply `changes` in place, then record the model's configuration in one commit. A run that
    stops half way leaves the old record: the next run finds the changes and applies them again."""
    for statement in alter_statements(runner.backing, changes):
        runner.run(statement)
    if changes.docs:
        create_view()
    with recording(runner.db, runner.configuration):
        runner.run(record_statement(runner.backing, changes, runner.run_id))


def docs_warnings(view: TableName, docs: Docs | None, names: Sequence[str]) -> list[str]:
    """A warning for each column the model's YAML documents and the model does not have."""
    return [
        f"persist_docs: column {name!r} of {view} is documented but the model has no such column; "
        "its description is not persisted (fix the name or drop it from the YAML)"
        for name in (docs.missing(names) if docs else [])
    ]
