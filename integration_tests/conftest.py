"""Fixtures the functional tests share (the root conftest.py has the Spark session and dbt's profile)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integration_tests.fixtures import SHOP_ROWS, SHOP_TABLES, create_source
from integration_tests.thrift_server import ThriftServer, running_server


@pytest.fixture(scope="class")
def shop_sources(project, spark) -> None:
    """The shop's sources (orders, customers, regions) with their rows, in the test class's schema.
    A class over them: `@pytest.mark.usefixtures("shop_sources")` and `models` from `shop_models`."""
    for name, columns in SHOP_TABLES.items():
        create_source(spark, project.test_schema, name, columns, SHOP_ROWS[name])


@pytest.fixture(scope="session")
def thrift_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThriftServer]:
    """A Spark Thrift Server with Delta, started once per test process (scripts/thrift_server.sh)."""
    yield from running_server(tmp_path_factory.mktemp("thrift"))
