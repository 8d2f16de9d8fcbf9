"""The dbt adapter: dbt-spark plus the fast_mv engine, exposed to Jinja by @available methods.

Thin on purpose: every SQL text comes from `dbt_ivm`; this module only connects
dbt's connection to the engine's `Database` protocol and turns engine errors
into dbt errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib import import_module
from typing import Any

from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import AdapterTrackingRelationInfo
from dbt.adapters.contracts.connection import ConnectionState
from dbt.adapters.contracts.relation import RelationConfig
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.ivm_spark import faults
from dbt.adapters.ivm_spark.connections import IvmSparkConnectionManager
from dbt.adapters.ivm_spark.server_errors import NO_DELTA, no_delta
from dbt_ivm import maintain
from dbt_ivm.configuration import ConfigurationChanged, Docs, on_change
from dbt_ivm.errors import ConfigError, IvmError, SourceError, UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.storage import Storage

logger = AdapterLogger("ivm_spark")


class _ConnectionDatabase:
    """`maintain.Database` over the adapter's current dbt connection (SQL is logged by dbt)."""

    def __init__(self, adapter: IvmSparkAdapter):
        self.adapter = adapter

    def execute(self, sql: str) -> None:
        self._reopened()
        faults.around(sql, lambda: self.adapter.connections.add_query(sql, auto_begin=False))

    def query(self, sql: str) -> list[dict[str, Any]]:
        self._reopened()
        _, cursor = faults.around(sql, lambda: self.adapter.connections.add_query(sql, auto_begin=False))
        with self.adapter.connections.exception_handler(sql):  # a failed fetch as dbt's `execute` says it
            names = [d[0] for d in cursor.description or []]
            rows = cursor.fetchall() or []
        return [dict(zip(names, tuple(row), strict=True)) for row in rows]

    def _reopened(self) -> None:
        """A new connection in place of one found dead (`BackoffPolling.gone`: a statement's answer
        was lost and the server could not be asked about it), so that what the engine sends after
        a cut write (reading whether it committed, `commit.settled`) reaches the server."""
        connections = self.adapter.connections
        connection = connections.get_thread_connection()
        if getattr(connection.handle, "gone", False):
            with suppress(Exception):  # the dead socket's close
                connections.close(connection)
            connection.state = ConnectionState.CLOSED
            connections.open(connection)
            logger.info("the connection to the server was lost; fast_mv goes on through a new one")


def _table(relation: Any) -> TableName:
    return TableName(db=relation.schema, name=relation.identifier)


def _dbt_error(e: IvmError) -> Exception:
    if no_delta(e):
        return DbtRuntimeError(NO_DELTA)
    message = str(e).splitlines()[0]
    if isinstance(e, (UnsupportedView, SourceError, ConfigError)):
        return CompilationError(message)
    return DbtRuntimeError(message)


@contextmanager
def engine_errors() -> Iterator[None]:
    """The engine's errors as dbt errors; any failure that says the server has no Delta Lake as that."""
    try:
        yield
    except IvmError as e:
        raise _dbt_error(e) from e
    except DbtRuntimeError as e:
        if no_delta(e):
            raise DbtRuntimeError(NO_DELTA) from e
        raise


def engine_options(
    unique_key: Any = None,
    deterministic_functions: Any = None,
    refresh_policy: Any = None,
    cluster_by: Any = None,
    change_feed: Any = False,
    storage: Any = None,
    empty: Any = False,
    enable_change_feed: Any = False,
    on_configuration_change: Any = None,
    docs: Any = None,
) -> dict[str, Any]:
    """The model's configs, as dbt gives them, as `maintain.materialize`'s keyword arguments; a
    config the engine refuses raises its error here, before any SQL runs.

    `unique_key` (the model config): output columns the user declares unique; appends then
    skip the probe of the stored rows. `deterministic_functions` (the model config; one name or a
    list): functions that are not Spark built-ins (UDFs) the user declares deterministic.
    `refresh_policy` (the model config): auto (default), incremental or full (see `dbt_ivm.policy`).
    `cluster_by` (the model config): output columns the stored rows are laid out by, so a
    refresh whose changes are local in them reads few files (see `dbt_ivm.layout`).
    `change_feed`: another fast_mv reads this one (the dbt graph says so), so its storage keeps
    a change data feed.
    `storage`: the configs dbt-spark users write for a table's storage (`file_format`,
    `tblproperties`, `partition_by`, `liquid_clustered_by`, `location_root`; see `dbt_ivm.storage`).
    `empty`: dbt's `--empty` flag (see `Maintainer.materialize_empty`).
    `enable_change_feed` (the model config): turn on the change data feed of a Delta source
    that has none, before the first build reads it.
    `on_configuration_change` (the model config, text or dbt's enum; see `dbt_ivm.reconfigure`).
    `docs`: the comments persist_docs puts on the view (`{'relation': …, 'columns': {…}}`).
    """
    functions = deterministic_functions
    return {
        "unique_key": unique_key,
        "functions": [functions] if isinstance(functions, str) else list(functions or []),
        "refresh_policy": refresh_policy,
        "cluster_by": cluster_by,
        "change_feed": bool(change_feed),
        "storage": Storage(**(storage or {})),
        "empty": bool(empty),
        "enable_change_feed": bool(enable_change_feed),
        "on_change": on_change(getattr(on_configuration_change, "value", on_configuration_change)),
        "docs": Docs((docs or {}).get("relation"), dict((docs or {}).get("columns") or {})),
    }


def macro_result(outcome: maintain.Outcome) -> dict[str, Any]:
    """What the fast_mv macro reads of a build or refresh."""
    return {
        "action": outcome.action,
        "message": outcome.message,
        "inserted": outcome.inserted,
        "deleted": outcome.deleted,
        "warnings": list(outcome.warnings),
        "config_change": outcome.config_change,
    }


def refused_change(e: ConfigurationChanged) -> dict[str, Any]:
    """The answer when `on_configuration_change: fail` found changes: nothing was written."""
    return {"action": "failed", "message": str(e), "warnings": [], "config_change": "fail"}


class IvmSparkAdapter(SparkAdapter):
    ConnectionManager = IvmSparkConnectionManager

    @classmethod
    def get_adapter_run_info(cls, config: RelationConfig) -> AdapterTrackingRelationInfo:
        # dbt derives the module from the class name ('ivmspark'); ours is 'ivm_spark'.
        # mypy sees Hashable.__hash__ as abstract here; the frozen dataclass is hashable (dbt builds it alike)
        return AdapterTrackingRelationInfo(  # type: ignore[abstract]
            adapter_name="ivm_spark",
            base_adapter_version=import_module("dbt.adapters.__about__").version,
            adapter_version=import_module("dbt.adapters.ivm_spark.__version__").version,
            model_adapter_details=cls._get_adapter_specific_run_info(config),
        )

    @available
    def fast_mv_materialize(
        self, relation: Any, sql: str, full_refresh: bool = False, **configs: Any
    ) -> dict[str, Any]:
        """Build or refresh the fast_mv `relation` from the model's compiled `sql`; `configs`: the
        model's configs as the macro passes them (`engine_options`). The outcome as the macro reads
        it (`macro_result`); an `on_configuration_change: fail` that found changes writes nothing
        and answers `config_change: 'fail'` (`refused_change`): the macro says it as dbt does."""
        with engine_errors():
            options = engine_options(**configs)
            try:
                outcome = maintain.materialize(
                    _ConnectionDatabase(self),
                    _table(relation),
                    sql,
                    full_refresh=full_refresh,
                    log=logger.info,
                    **options,
                )
            except ConfigurationChanged as e:  # nothing was written
                logger.info(str(e))
                return refused_change(e)
        return macro_result(outcome)

    @available
    def fast_mv_consistency_sql(self, relation: Any) -> str:
        """The query of the fast_mv_consistent test: rows where view and recompute differ."""
        with engine_errors():
            return maintain.consistency_sql(_ConnectionDatabase(self), _table(relation))

    @available
    def fast_mv_explain(self, relation: Any) -> str:
        """Class, join tree, hidden columns and refresh steps of a built fast_mv, as text."""
        with engine_errors():
            return maintain.explain_view(_ConnectionDatabase(self), _table(relation))
