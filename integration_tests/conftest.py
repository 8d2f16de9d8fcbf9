"""Fixtures the functional tests share (the root conftest.py has the Spark session and dbt's profile)."""

from __future__ import annotations

import pytest

from integration_tests.fixtures import SHOP_ROWS, SHOP_TABLES, create_source


@pytest.fixture(scope="class")
def shop_sources(project, spark) -> None:
    """The shop's sources (orders, customers, regions) with their rows, in the test class's schema.
    A class over them: `@pytest.mark.usefixtures("shop_sources")` and `models` from `shop_models`."""
    for name, columns in SHOP_TABLES.items():
        create_source(spark, project.test_schema, name, columns, SHOP_ROWS[name])
