"""fast_mv through dbt-spark's `thrift` method, against a local Spark Thrift Server with Delta
(`scripts/thrift_server.sh`, started by the `thrift_server` fixture), and through its `session`
method over Spark Connect (served by the same JVM): build, refresh of a model of each class's
rules (a single source, a join, an outer join, an aggregate, windows and a keep-the-first, a
UNION, an EXISTS) and of a chain (an aggregate over the join view), the append path of a declared
unique key, the consistency test, and a run with no changes. Everything dbt and the test run
goes to the server; the test process starts no Spark of its own. Spark Connect runs the
aggregate view (the suite's time). The engine's statements do not depend on the method: the
views whose refresh composes these classes (calculated columns over an aggregate, an aggregate
over a UNION ALL or over a join with one) run in the TPC-DI project, through dbt on the session
(`test_tpcdi`), and in the randomized samples (the calculated and unions families)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from dbt.tests.util import run_dbt_and_capture

from integration_tests.fixtures import (
    BUYERS,
    CDF,
    CUSTOMER_IDS,
    ITEM_KEYED,
    ITEMS_TABLE,
    KEYED_ITEMS_ROWS,
    ORDER_CUSTOMERS,
    ORDERS_MV,
    OUTER_MODELS,
    SHOP_CHANGES,
    SHOP_ROWS,
    SHOP_TABLES,
    SOURCES_YML,
    STATUS_COUNTS,
    consistent_schema_yml,
    model,
)
from integration_tests.thrift_server import ThriftServer, connect_profile, dbt_over_connect, thrift_profile

pytestmark = pytest.mark.spark  # needs Java, as the embedded session does

RANKED_ORDERS = """
select order_id, customer_id, amount,
    row_number() over (partition by customer_id order by amount desc, order_id) as rn,
    lead(amount) over (partition by customer_id order by order_id, amount) as next_amount
from {orders}
"""
CUSTOMER_SPEND = (
    "select customer_id, count(*) as n, sum(amount) as total from {{{{ ref('order_customers') }}}} group by customer_id"
)
# keep-the-first: refreshed from the kept rows (`classes.windows.first_rows`)
LATEST_ORDERS = (
    "select customer_id, order_id, amount from (select customer_id, order_id, amount, row_number() over "
    "(partition by customer_id order by amount desc, order_id) as rn from {orders}) s where rn = 1"
)
MODELS = {
    "orders_mv": ORDERS_MV,  # single source
    "order_customers": ORDER_CUSTOMERS,  # inner join
    "customer_orders": OUTER_MODELS["customer_orders"],  # LEFT JOIN
    "status_counts": STATUS_COUNTS,  # aggregate
    "item_keyed": ITEM_KEYED,  # unique_key: appends take the append path
    "ranked_orders": RANKED_ORDERS,  # window functions by partition
    "customer_spend": CUSTOMER_SPEND,  # a chain: an aggregate over the join view
    "customer_ids": CUSTOMER_IDS,  # UNION (set operations)
    "buyers": BUYERS,  # EXISTS (semi-join)
    "latest_orders": LATEST_ORDERS,  # keep-the-first
}
# the views that read orders (v1..v4 by the refresh) and customers too
READ_ORDERS = (
    "orders_mv",
    "order_customers",
    "customer_orders",
    "status_counts",
    "ranked_orders",
    "latest_orders",
)
READ_BOTH = ("order_customers", "customer_orders", "customer_ids", "buyers")
# over Spark Connect, the class whose refresh sends the most kinds of statement (cached change
# sets, SQL scripts, MERGE, the recompute of a lost extreme), for the suite's time: the engine's
# statements do not depend on the method, and no class uses the JVM of the session
CONNECT_MODELS = {name: MODELS[name] for name in ("status_counts",)}
SOURCES = {
    "orders": (SHOP_TABLES["orders"], SHOP_ROWS["orders"]),
    "customers": (SHOP_TABLES["customers"], SHOP_ROWS["customers"]),
    "items": (ITEMS_TABLE, KEYED_ITEMS_ROWS),
}
# Inserts, updates and deletes of orders and customers (versions 2-4 of each), new items (version 2).
CHANGES = [
    *(s for s in SHOP_CHANGES if "{regions}" not in s),
    "INSERT INTO {items} VALUES (5, 'kiwi', 4.0), (6, 'plum', 0.5), (7, NULL, NULL)",
]
REFRESHED = re.compile(r"^refreshed: \+\d+/-\d+ rows from ")


def messages(results) -> dict[str, str]:
    return {r.node.name: r.message for r in results if r.node.resource_type == "model"}


def statuses(results) -> dict[str, str]:
    return {r.node.name: str(r.status) for r in results}


def dbt_over_thrift(logs_dir: str, server: ThriftServer, *args: str) -> tuple[Any, str]:
    """dbt's results and log; a failed run's assertion says which nodes failed, with what, the
    last traceback of dbt's debug log and the server log's errors (a CI run shows the failure's
    text, not the captured output)."""
    results, logs = run_dbt_and_capture([*args, "--threads", "4"], expect_pass=None)
    failed = {r.node.name: r.message for r in results if str(r.status) not in ("success", "pass")}
    if failed:
        debug = (Path(logs_dir) / "dbt.log").read_text(errors="replace")
        traceback = debug[debug.rfind("Traceback") :][:4000] if "Traceback" in debug else ""
        server_log = (server.home / "server.log").read_text(errors="replace").splitlines()
        errors = [line for line in server_log if " ERROR " in line or "Exception" in line][-20:]
        raise AssertionError(f"dbt {args[0]} failed: {failed}\n{traceback}\nserver.log:\n" + "\n".join(errors))
    return results, logs


@pytest.fixture(scope="module")
def server(thrift_server: ThriftServer) -> ThriftServer:
    """The one server of both classes: module-scoped, so that they run on one xdist worker."""
    return thrift_server


class TestFastMvOverThrift:
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, server: ThriftServer) -> dict[str, object]:
        return thrift_profile(server)

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        files = {f"{name}.sql": model(sql) for name, sql in MODELS.items()}
        return files | {"sources.yml": SOURCES_YML, "schema.yml": consistent_schema_yml(*MODELS)}

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project) -> None:
        for name, (columns, rows) in SOURCES.items():
            project.run_sql(f"CREATE TABLE {{schema}}.{name} ({columns}) {CDF}")
            project.run_sql(f"INSERT INTO {{schema}}.{name} VALUES {rows}")

    def test_build_refresh_consistency_no_changes(self, project, server, logs_dir):
        schema = project.test_schema
        msgs = messages(dbt_over_thrift(logs_dir, server, "run")[0])
        assert len(msgs) == len(MODELS) and all(m.startswith("built") for m in msgs.values()), msgs

        for statement in CHANGES:
            project.run_sql(statement.format(**{t: f"{schema}.{t}" for t in SOURCES}))
        # the refresh, then each view's fast_mv_consistent test
        results, logs = dbt_over_thrift(logs_dir, server, "build")
        msgs = messages(results)
        for name in (*READ_ORDERS, *READ_BOTH):
            assert REFRESHED.match(msgs[name]), msgs
            assert f"{schema}.orders v1..v4" in msgs[name], msgs[name]
        for name in READ_BOTH:
            assert f"{schema}.customers v1..v4" in msgs[name], msgs[name]
        assert REFRESHED.match(msgs["customer_spend"]) and "order_customers" in msgs["customer_spend"], msgs
        assert msgs["item_keyed"] == f"refreshed: +2/-0 rows from {schema}.items v1..v2", msgs
        assert "appending the new rows" in logs
        assert len(results) == 2 * len(MODELS) and set(statuses(results).values()) == {"success", "pass"}

        msgs = messages(dbt_over_thrift(logs_dir, server, "run")[0])
        assert msgs == dict.fromkeys(MODELS, "no changes")


class TestFastMvOverSparkConnect:
    """dbt-spark's `session` method with `spark.remote`: dbt runs in a process of its own; the
    sources are written and read over the Thrift endpoint of the same server."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, server: ThriftServer) -> dict[str, object]:
        return thrift_profile(server)

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        files = {f"{name}.sql": model(sql) for name, sql in CONNECT_MODELS.items()}
        return files | {"sources.yml": SOURCES_YML, "schema.yml": consistent_schema_yml(*CONNECT_MODELS)}

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project) -> None:
        for name, (columns, rows) in SOURCES.items():
            project.run_sql(f"CREATE TABLE {{schema}}.{name} ({columns}) {CDF}")
            project.run_sql(f"INSERT INTO {{schema}}.{name} VALUES {rows}")

    def test_build_refresh_consistency_no_changes(self, project, server, tmp_path: Path):
        schema = project.test_schema
        profiles = {"test": {"target": "connect", "outputs": {"connect": connect_profile(server, schema)}}}
        (tmp_path / "profiles.yml").write_text(yaml.safe_dump(profiles))

        def dbt(*args: str) -> dict[str, tuple[str, str]]:
            return dbt_over_connect(Path(project.project_root), tmp_path, *args)

        built = dbt("run")
        assert set(built) == set(CONNECT_MODELS) and all(m.startswith("built") for _, m in built.values()), built

        for statement in CHANGES:
            project.run_sql(statement.format(**{t: f"{schema}.{t}" for t in SOURCES}))
        results = dbt("build")
        for name in CONNECT_MODELS:
            assert REFRESHED.match(results[name][1]), results
        assert len(results) == 2 * len(CONNECT_MODELS) and {s for s, _ in results.values()} == {"success", "pass"}, (
            results
        )

        assert {name: m for name, (_, m) in dbt("run").items()} == dict.fromkeys(CONNECT_MODELS, "no changes")
