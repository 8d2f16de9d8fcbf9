"""dbt-spark's basic adapter suites where the plugin touches dbt-spark, under `type: ivm_spark` on the
shared local session.

The plugin subclasses dbt-spark's adapter (`IvmSparkAdapter`: the fast_mv methods), connection
manager (`IvmSparkConnectionManager`: opening the session, and every statement under
`SESSION_LOCK`) and credentials (the type name), and registers itself with `dependencies=["spark"]`,
so that dbt resolves dbt-spark's materializations and `spark__` macros for `ivm_spark`. It overrides
none of dbt-spark's macros or materializations. The suites here check those seams:
- BaseSimpleMaterializations: seeds, view, table and incremental models, swapped between kinds,
  and the catalog of `docs generate`: dbt-spark's materializations and macros resolved through
  the plugin, every statement through its connection manager;
- BaseAdapterMethod: dbt-spark's adapter methods reached from Jinja on the subclass;
- BaseValidateConnection: the profile of `type: ivm_spark` connects, and the suites ran through
  the plugin, not plain dbt-spark.
dbt-spark's own tests cover the rest of its behaviour (ephemeral models, singular and generic
tests, snapshots, the incremental strategies, the table materialization's configs), which runs
here as it runs there: the plugin changes none of it (left out since 2026-11-26 for the suite's
time, about 80 s on the 2-core machine). Models and seeds are configured `file_format: delta`
as dbt-spark configures its Delta tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection

from dbt.adapters.ivm_spark.impl import IvmSparkAdapter

pytestmark = pytest.mark.spark

DELTA = {"+file_format": "delta"}


def delta_config(name: str) -> dict:
    return {"name": name, "models": dict(DELTA), "seeds": dict(DELTA)}


class TestSimpleMaterializationsIvmSpark(BaseSimpleMaterializations):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return delta_config("base")


class TestAdapterMethodIvmSpark(BaseAdapterMethod):
    pass


class TestValidateConnectionIvmSpark(BaseValidateConnection):
    def test_adapter_is_ivm_spark(self, project):
        # the suites above really ran through our plugin, not plain dbt-spark
        assert project.adapter.type() == "ivm_spark"
        assert isinstance(project.adapter, IvmSparkAdapter)
