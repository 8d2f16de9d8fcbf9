"""`render.py`: the SQL builders every class shares (quoting, the columns a config names)."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze, render
from dbt_ivm.classes import joins
from dbt_ivm.errors import ConfigError
from tests.unit.views import JOIN, SCHEMA


def test_unique_key_names_output_columns():
    plan = analyze(JOIN, SCHEMA)
    assert render.output_columns(plan, None, "unique_key") == ()
    assert render.output_columns(plan, "ID", "unique_key") == ("id",)
    assert render.output_columns(plan, ["id", "name", "ID"], "unique_key") == ("id", "name")
    with pytest.raises(ConfigError, match="unique_key 'cust' is not a column of the model"):
        render.output_columns(plan, ["id", "cust"], "unique_key")
    stats = render.sql(joins.delta_stats("d", ("id",)))
    # dbt's meaning of unique: only rows whose key is a value are held to it
    assert "COUNT(DISTINCT IF(NOT `id` IS NULL, STRUCT(`id`), NULL)) AS keys" in stats, stats
    assert "MAX(IF(NOT `id` IS NULL, `__ivm_d`, NULL)) AS keyed_max_d" in stats, stats


def test_identifiers_are_quoted():
    schema = {"my db.weird table": {"select": "int", "Mixed Case": "string"}}
    plan = analyze("select `select`, `Mixed Case` from `my db`.`weird table`", schema)
    sql = render.sql(joins.build_select(plan, {"my db.weird table": 1}))
    assert "`my db`.`weird table` VERSION AS OF 1" in sql
    assert "`select`" in sql and "`Mixed Case`" in sql
