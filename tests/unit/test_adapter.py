"""`IvmSparkAdapter.fast_mv_materialize`: the model's configs as the macro passes them (dbt's
values) reach `maintain.materialize` as the engine's, and its outcome reaches the macro as a dict;
no connection is opened (the engine's entry point is replaced)."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from dbt_common.exceptions import CompilationError

from dbt.adapters.ivm_spark import impl
from dbt.adapters.ivm_spark.impl import IvmSparkAdapter
from dbt_ivm import maintain
from dbt_ivm.configuration import ConfigurationChanged, Docs, OnChange
from dbt_ivm.ir import TableName
from dbt_ivm.storage import Storage


class Relation:
    schema, identifier = "db", "v"


class Mode(enum.Enum):  # dbt's OnConfigurationChangeOption: an enum whose value is the text
    FAIL = "fail"


def materialize(monkeypatch: pytest.MonkeyPatch, result: Any, **configs: Any) -> tuple[dict[str, Any], Any]:
    """Call the adapter's method with `configs`; the arguments the engine received, and the answer."""
    received: dict[str, Any] = {}

    def engine(db: Any, view: TableName, sql: str, **kwargs: Any) -> maintain.Outcome:
        received.update(kwargs, view=view, sql=sql, db=type(db).__name__)
        if isinstance(result, Exception):
            raise result
        return result  # type: ignore[no-any-return]

    monkeypatch.setattr(maintain, "materialize", engine)
    adapter = object.__new__(IvmSparkAdapter)  # no connection: the engine is replaced
    return received, adapter.fast_mv_materialize(Relation(), "select 1", **configs)


def test_the_model_configs_reach_the_engine_as_its_own_and_the_outcome_the_macro(monkeypatch):
    outcome = maintain.Outcome(maintain.Action.REFRESHED, "done", inserted=3, deleted=1, warnings=("w",))
    received, answer = materialize(
        monkeypatch,
        outcome,
        full_refresh=True,
        unique_key="id",
        deterministic_functions="my_udf",
        refresh_policy="incremental",
        cluster_by=["a"],
        change_feed=1,
        storage={"tblproperties": {"x": "1"}, "partition_by": "p"},
        empty=None,
        enable_change_feed="yes",
        on_configuration_change=Mode.FAIL,
        docs={"relation": "about", "columns": {"a": "the a"}},
    )
    assert received == {
        "db": "_ConnectionDatabase",
        "view": TableName("db", "v"),
        "sql": "select 1",
        "full_refresh": True,
        "log": impl.logger.info,
        "unique_key": "id",
        "functions": ["my_udf"],
        "refresh_policy": "incremental",
        "cluster_by": ["a"],
        "change_feed": True,
        "storage": Storage(tblproperties={"x": "1"}, partition_by="p"),
        "empty": False,
        "enable_change_feed": True,
        "on_change": OnChange.FAIL,
        "docs": Docs("about", {"a": "the a"}),
    }
    assert answer == {
        "action": outcome.action,
        "message": "done",
        "inserted": 3,
        "deleted": 1,
        "warnings": ["w"],
        "config_change": "",
    }
    defaults, _ = materialize(monkeypatch, outcome)
    assert (defaults["functions"], defaults["storage"], defaults["on_change"]) == ([], Storage(), OnChange.APPLY)
    assert defaults["docs"] == Docs(None, {}) and defaults["full_refresh"] is False
    listed, _ = materialize(monkeypatch, outcome, deterministic_functions=("f", "g"))
    assert listed["functions"] == ["f", "g"]


def test_a_refused_configuration_change_is_an_answer_and_a_bad_config_a_compilation_error(monkeypatch):
    changed = ConfigurationChanged("fast_mv db.v: the configuration changed: partition_by")
    _, answer = materialize(monkeypatch, changed)
    assert answer == {"action": "failed", "message": str(changed), "warnings": [], "config_change": "fail"}
    with pytest.raises(CompilationError, match="on_configuration_change 'sometimes'"):
        materialize(monkeypatch, changed, on_configuration_change="sometimes")
