"""Shared fixtures: ONE local Spark + Delta session per test run, used by the engine's
Spark tests and by dbt (dbt-spark's `session` method picks up the same session)."""

from __future__ import annotations

import os

import pytest

from tests.spark_sources import NO_CODEGEN

pytest_plugins = ["dbt.tests.fixtures.project"]

# The parallel collector: the suite's work is many small Spark jobs on 2 cores, all CPU-bound, and
# G1's concurrent threads take cores from them (the single, joins and aggregates samples: 168-171 s
# against 187-194 s with G1, 2026-11-25). Tests only: the benchmarks keep the JVM's default.
# Each tier (C1, C2) compiles a method after 4x the default invocations: the compilers took 30 % of the
# JVM's CPU in a 5-minute slice (C2 123 s, C1 25 s of 494 s), compiling Spark's wide code for
# statements that each run a few times (the joins, aggregates and outer samples in one JVM: 258
# and 274 s wall, 408 and 433 s JVM CPU, against 271 and 299 s, 461 and 507 s without; the
# engine, aggregates and guards Spark tests on two workers: 593 s against 650 s; scaling by 10
# or 25: slower, 2026-11-29). Tests only: a cluster's long-lived JVM wants C2 early.
TEST_JAVA_OPTIONS = "-XX:+UseParallelGC -XX:CompileThresholdScaling=4"
# Two shuffle partitions, one per core: the tests' tables are small, and each partition is a task
# to schedule (the single, joins and aggregates samples in one JVM: 161-162 s against 179 s with
# four, 2026-11-25). Tests only, as above.
TEST_SETTINGS = {"spark.sql.shuffle.partitions": "2"}
# No generated code: compiling it costs more than it saves on tables of a few rows (the single,
# joins, aggregates and outer samples in one JVM: 193 s against 239 s with it, 2026-11-27). The
# function fidelity test turns it back on (`WITH_CODEGEN`): it checks expressions as a cluster runs them.
TEST_SETTINGS |= NO_CODEGEN
# The session's catalog in memory, not Hive's over Derby: the tests create and drop thousands of
# tables and views, and each lookup went through the metastore (the joins, calculated and windows
# samples in one JVM: 198 s against 292 s with Hive, 2026-11-28). It gives a replaced table a new
# creation time, which Hive does not: the engine tells a replace by the table's commits
# (`inspection._identity`), so both catalogs are exercised. The test Thrift Server keeps a Hive
# metastore (`integration_tests.thrift_server`), so the suite still runs fast_mv against one.
TEST_SETTINGS["spark.sql.catalogImplementation"] = "in-memory"
# No adaptive execution: each of its query stages is a job of its own, and on tables of a few rows
# its re-planning costs more than it saves (a join view's refresh, alternated with and without it
# in one warm JVM, 7 of each: 30 Spark jobs against 43, 4.22 s against 4.78 s median, 5.25 s of
# JVM CPU against 6.06 s, 2026-11-29). Tests only; the test Thrift Server keeps it on
# (`integration_tests.thrift_server`), so fast_mv is also tested as a cluster runs it.
TEST_SETTINGS["spark.sql.adaptive.enabled"] = "false"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stress", action="store_true", default=False, help="run the long randomized differential runs")
    parser.addoption(
        "--rounds",
        type=int,
        default=None,
        help="rounds per view for the randomized runs (default: the in-suite sample)",
    )
    parser.addoption("--seed", type=int, default=None, help="base seed of the randomized runs")
    parser.addoption(
        "--minutes",
        type=float,
        default=None,
        help="wall-clock budget per randomized stress run (stops early, reports what ran)",
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long randomized runs are not part of the suite: they run only with --stress. Under
    pytest-xdist (`-n`), the tests that share a class- or module-scoped fixture (a dbt project,
    a batch of views) run on one worker (`--dist loadgroup`), each other test wherever a worker is free.
    A test whose fixtures need the Spark session is marked `spark`."""
    if not config.getoption("--stress"):
        stress = [item for item in items if "stress" in item.keywords]
        if stress:
            config.hook.pytest_deselected(items=stress)
            items[:] = [item for item in items if "stress" not in item.keywords]
    for item in items:
        if group := shared_fixture_scope(item):
            item.add_marker(pytest.mark.xdist_group(group))
        # a test that starts the Spark session is a `spark` test, marked or not: `-m "not spark"`
        # (scripts/test.sh --fast) never starts it
        if "spark" in getattr(item, "fixturenames", ()) and "spark" not in item.keywords:
            item.add_marker(pytest.mark.spark)


def shared_fixture_scope(item: pytest.Item) -> str | None:
    """The node id of the widest module or class whose fixtures `item` uses, if any."""
    definitions = getattr(item, "_fixtureinfo", None)
    scopes = {d.scope for defs in (definitions.name2fixturedefs.values() if definitions else ()) for d in defs}
    module, *rest = item.nodeid.split("::")
    if "module" in scopes:
        return module
    if "class" in scopes and len(rest) > 1:
        return f"{module}::{rest[0]}"
    return None


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("spark"))


@pytest.fixture(scope="session")
def spark(spark_home: str):
    from dbt_ivm.session import get_spark

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = get_spark(spark_home, java_options=TEST_JAVA_OPTIONS, settings=TEST_SETTINGS)
    yield session


@pytest.fixture(scope="session")
def spark_db(spark):
    from dbt_ivm.session import SparkDatabase

    return SparkDatabase(spark)


@pytest.fixture(scope="class")
def project_config_update() -> dict:
    """fast_mv models refresh incrementally: `auto` would rebuild views this small (see dbt_ivm.policy).
    A test class that needs other project settings overrides this fixture."""
    return {"models": {"+refresh_policy": "incremental"}}


@pytest.fixture(scope="class")
def dbt_profile_target(spark, spark_home: str) -> dict:
    """dbt-tests-adapter's profile: `type: ivm_spark` over the shared session."""
    from dbt_ivm.session import spark_conf

    return {
        "type": "ivm_spark",
        "method": "session",
        "host": "localhost",
        "schema": "dbt_ivm_test",
        "threads": 4,
        "server_side_parameters": spark_conf(spark_home, TEST_JAVA_OPTIONS, TEST_SETTINGS),
    }
