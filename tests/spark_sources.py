"""Source tables the engine's Spark tests share: orders `o` joined to customers `c`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

CDF = "using delta tblproperties (delta.enableChangeDataFeed = true)"
# No generated code: compiling it costs more than it saves on tables of a few rows (the tests'
# session, `conftest.TEST_SETTINGS`, and the test Thrift Server, `integration_tests.thrift_server`)
NO_CODEGEN = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextmanager
def orders_and_customers(spark: Any, db: str, orders: int, customers: int) -> Iterator[None]:
    """A fresh database `db` with `o(id, cust, amt)` (`orders` rows) and `c(cid, name)`; dropped after."""
    spark.sql(f"drop database if exists {db} cascade")
    spark.sql(f"create database {db}")
    spark.sql(f"create table {db}.o (id int, cust int, amt double) {CDF}")
    spark.sql(f"create table {db}.c (cid int, name string) {CDF}")
    spark.sql(f"insert into {db}.o select id, id % {customers}, id * 1.5 from range({orders})")
    spark.sql(f"insert into {db}.c select id, concat('n', id) from range({customers})")
    try:
        yield
    finally:
        spark.sql(f"drop database if exists {db} cascade")


@contextmanager
def session_settings(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` on the session for the block, each restored (or unset) after it."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
