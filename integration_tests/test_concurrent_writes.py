"""fast_mv's session-wide write settings stay with fast_mv's own write (dbt_ivm.session_lock).

A fast_mv write sets Delta's commit metadata and idempotent-write ids as session confs, and
dbt's threads share the session (`method: session`). Here a fast_mv rebuild (a CTAS) and a
fast_mv refresh (a MERGE) run in one `dbt run --threads 4` beside a `table` and an
`incremental` model, in rounds. Hooks in the test make the other models' writes meet the
fast_mv windows deterministically, without changing fast_mv's code path: each of those writes
waits until its partner fast_mv has set its confs, and that window then waits (a bounded
time) for the write to finish before fast_mv writes. Every commit of the other models must
then carry no fast_mv metadata and no idempotent-write id, and hold its model's rows; the
fast_mv views must equal their models.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.ivm_spark.connections import IvmSparkConnectionManager
from dbt.adapters.ivm_spark.impl import _ConnectionDatabase
from dbt_ivm.commit import TXN_APP_CONF, TXN_VERSION_CONF
from integration_tests.fixtures import CDF, ITEMS_TABLE, SOURCES_YML, model, recompute

pytestmark = pytest.mark.spark

ROUNDS = 2  # a build of both fast_mvs, then a rebuild and a refresh
WAIT_FOR_WINDOW = 60.0  # seconds a partner's write waits at most for its fast_mv's window to open
WAIT_IN_WINDOW = 3.0  # seconds a window waits at most for its partner's write (all of them, once fixed)

ITEMS = "(1, 'apple', 1.5), (2, 'pear', 2.0), (3, NULL, 3.0), (4, 'fig', NULL)"
# A MERGE on every refresh: updates move rows between groups.
MV_REFRESH = "select name, count(*) as n, sum(price) as total from {items} group by name"
# A build on every run (a CTAS, clustered: its layout settings are session-wide too).
MV_REBUILD = "select item_id, name, price from {items} where price > 1 or price is null"
PLAIN_MODELS = {
    "t_table": "materialized='table'",
    "t_incremental": "materialized='incremental', incremental_strategy='merge', unique_key='item_id'",
}
FAST_MVS = {"mv_refresh": MV_REFRESH, "mv_rebuild": MV_REBUILD}
PLAIN_SQL = "select item_id, name, price * 2 as price from {items}"
# Whose window each plain model's write meets.
PARTNERS = {"t_table": "mv_rebuild", "t_incremental": "mv_refresh"}
PLAIN_WRITE = re.compile(
    rf"\b(?:create or replace table|merge into|insert into)\s+\S*?\b({'|'.join(PARTNERS)})\b", re.I
)


BATCHED_APP = re.compile(rf"SET {re.escape(TXN_APP_CONF)}=dbt-ivm:[^']*?\.(\w+)__ivm")


def plain_model(config: str) -> str:
    return f"{{{{ config({config}, file_format='delta') }}}}\n" + PLAIN_SQL.format(items="{{ source('src', 'items') }}")


def multiset(spark, sql: str) -> Counter:
    return Counter(tuple(row) for row in spark.sql(sql).collect())


def log_actions(spark, table: str) -> list[dict]:
    """Every action in the table's Delta log (its JSON commits)."""
    location = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"].removeprefix("file:")
    log = os.path.join(location, "_delta_log")
    actions = []
    for name in sorted(f for f in os.listdir(log) if f.endswith(".json")):
        with open(os.path.join(log, name)) as f:
            actions += [json.loads(line) for line in f if line.strip()]
    return actions


class TestFastMvSettingsStayWithItsWrite:
    @pytest.fixture(scope="class")
    def models(self):
        files = {name + ".sql": plain_model(config) for name, config in PLAIN_MODELS.items()}
        files["mv_refresh.sql"] = model(MV_REFRESH)
        files["mv_rebuild.sql"] = model(MV_REBUILD, "refresh_policy='full', cluster_by=['item_id']")
        files["sources.yml"] = SOURCES_YML
        return files

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project, spark):
        spark.sql(f"CREATE TABLE {project.test_schema}.items ({ITEMS_TABLE}) {CDF}")
        spark.sql(f"INSERT INTO {project.test_schema}.items VALUES {ITEMS}")

    @pytest.fixture
    def meetings(self, monkeypatch) -> Callable[[], list[str]]:
        """Each plain model's write starts once its partner fast_mv has set its confs; that
        window waits for the write to finish (at most WAIT_IN_WINDOW) before its own write.
        Returns a function that starts a round and gives the windows opened so far in it."""
        opened = {mv: threading.Event() for mv in PARTNERS.values()}
        written = {mv: threading.Event() for mv in PARTNERS.values()}
        windows: list[str] = []
        app = threading.local()
        execute = _ConnectionDatabase.execute
        add_query = IvmSparkConnectionManager.add_query

        def window(model: str) -> None:
            if model in opened:
                windows.append(model)
                opened[model].set()
                written[model].wait(WAIT_IN_WINDOW)

        def fast_mv_execute(db: _ConnectionDatabase, sql: str) -> None:
            # a batched write (`batch`) sets, writes and resets in one script: its window opens
            # before it is sent, under the same exclusive lock as the separate SETs'
            batched = BATCHED_APP.search(sql) if sql.startswith("BEGIN ") else None
            if batched:
                window(batched.group(1))
            execute(db, sql)
            if sql.startswith(f"SET {TXN_APP_CONF}="):  # dbt-ivm:<schema>.<model>__ivm
                app.model = sql.rsplit(".", 1)[-1].removesuffix("__ivm")
            elif sql.startswith(f"SET {TXN_VERSION_CONF}="):
                window(app.model)

        def plain_add_query(manager: IvmSparkConnectionManager, sql: str, *args: Any, **kwargs: Any) -> Any:
            found = PLAIN_WRITE.search(sql)
            if found is None:
                return add_query(manager, sql, *args, **kwargs)
            partner = PARTNERS[found.group(1).lower()]
            assert opened[partner].wait(WAIT_FOR_WINDOW), f"{partner} opened no window"
            try:
                return add_query(manager, sql, *args, **kwargs)
            finally:
                written[partner].set()

        monkeypatch.setattr(_ConnectionDatabase, "execute", fast_mv_execute)
        monkeypatch.setattr(IvmSparkConnectionManager, "add_query", plain_add_query)

        def new_round() -> list[str]:
            for event in [*opened.values(), *written.values()]:
                event.clear()
            windows.clear()
            return windows

        return new_round

    def test_other_models_writes_carry_none_of_fast_mvs_settings(self, project, spark, meetings):
        schema = project.test_schema
        items = f"{schema}.items"
        for round_ in range(ROUNDS):
            if round_:
                spark.sql(f"INSERT INTO {items} VALUES ({10 + round_}, 'kiwi', {round_}.5), ({20 + round_}, NULL, 2.0)")
                spark.sql(f"UPDATE {items} SET name = 'pear', price = price + 1 WHERE item_id = {round_}")
            windows = meetings()
            results = run_dbt(["run", "--threads", "4"])
            assert sorted(windows) == ["mv_rebuild", "mv_refresh"], "every fast_mv write met its partner"
            outcomes = {r.node.name: r.message.split(" ")[0].rstrip(":") for r in results if r.node.name in FAST_MVS}
            assert outcomes == {"mv_refresh": "refreshed" if round_ else "built", "mv_rebuild": "built"}
            leaked = {}
            for name in PLAIN_MODELS:
                table = f"{schema}.{name}"
                history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
                tagged = [(r["version"], r["operation"], r["userMetadata"]) for r in history if r["userMetadata"]]
                txns = [a["txn"] for a in log_actions(spark, table) if "txn" in a]
                if tagged or txns:
                    leaked[name] = {"commits with fast_mv's metadata": tagged, "idempotent-write ids": txns}
                assert multiset(spark, f"SELECT * FROM {table}") == multiset(spark, PLAIN_SQL.format(items=items)), (
                    f"round {round_}: {name} differs from its model"
                )
            assert not leaked, f"round {round_}: other models' commits carry fast_mv's settings: {leaked}"
            for name, template in FAST_MVS.items():
                view = multiset(spark, f"SELECT * FROM {schema}.{name}")
                assert view == multiset(spark, recompute(template, schema)), (
                    f"round {round_}: {name} differs from its model"
                )
