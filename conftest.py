"""Shared fixtures: ONE local Spark + Delta session per test run, used by the engine's
Spark tests and by dbt (dbt-spark's `session` method picks up the same session)."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["dbt.tests.fixtures.project"]


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long randomized runs are not part of the suite: they run only with --stress."""
    if config.getoption("--stress"):
        return
    stress = [item for item in items if "stress" in item.keywords]
    if stress:
        config.hook.pytest_deselected(items=stress)
        items[:] = [item for item in items if "stress" not in item.keywords]


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("spark"))


@pytest.fixture(scope="session")
def spark(spark_home: str):
    from dbt_ivm.session import get_spark

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = get_spark(spark_home)
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
        "server_side_parameters": spark_conf(spark_home),
    }
