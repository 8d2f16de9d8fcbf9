"""The SQL of a fast_mv's grants: dbt's `apply_grants` on the user-facing view (the macro passes
`this.incorporate(type='view')`, never the storage), rendered by dbt-spark's grant macros.
`integration_tests/test_conventions.py` checks, with these macros recording instead of granting
(the local catalog has no GRANT), that they run on the view at its build and at every refresh."""

from __future__ import annotations

from pathlib import Path

import jinja2
from dbt.adapters.spark.relation import SparkRelation

from dbt.include import spark


class _Adapter:
    @staticmethod
    def quote(name: str) -> str:
        return f"`{name}`"


def _macros() -> jinja2.runtime.Module:
    text = (Path(spark.PACKAGE_PATH) / "macros" / "apply_grants.sql").read_text()
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    env.globals["adapter"] = _Adapter()
    return env.from_string(text).module


def test_grants_and_revokes_name_the_view():
    view = SparkRelation.create(schema="analytics", identifier="orders_mv", type="view")
    macros = _macros()
    assert str(macros.spark__get_grant_sql(view, "select", ["reader"])).strip() == (
        "grant select on analytics.orders_mv to `reader`"
    )
    assert str(macros.spark__get_revoke_sql(view, "select", ["old"])).strip() == (
        "revoke select on analytics.orders_mv from `old`"
    )
