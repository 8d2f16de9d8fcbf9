"""The engine's Spark tests' sources (`tests.engine_views`)."""

from __future__ import annotations

import pytest

from tests.engine_views import DB
from tests.spark_sources import orders_and_customers


@pytest.fixture()
def sources(spark):
    with orders_and_customers(spark, DB, orders=2000, customers=50):
        yield
