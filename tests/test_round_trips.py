"""Statements per refresh, counted as sent to Spark (`SparkDatabase.log`: every statement of a run,
queries too), for one view of each class: a run with no change, and a refresh of mixed changes
(one test, eight views; seven: 343 s measured at a load average of 16-19 on the 2-core machine).
A SQL script (`batch`) is one statement: the settings are one `SET`, each CACHE TABLE goes with the
query after it, and the write is one script with its settings and the releases of the cached tables.
Each counted run is the first of a new process on the server (`catalog._DEFAULTS` forgotten): the
server's setting defaults come with the storage's watermark (`Watermark.defaults`); only the first
run on a server no run has met asks for them (`SET -v`, `SET <key>` of each internal setting).
"""

from __future__ import annotations

import pytest

from dbt_ivm import catalog
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Action, Maintainer, consistency_sql
from tests.spark_sources import orders_and_customers

pytestmark = pytest.mark.spark
DB = "ivm_round_trips"

# class -> (SQL, most statements of a refresh of mixed changes); a run with no change sends
# NO_CHANGE statements (`dbt_ivm.quick`) whatever the class
NO_CHANGE = 4
VIEWS = {
    "single": (f"select id, cust, amt * 2 as a2 from {DB}.o where amt > 3", 9),
    "join": (f"select o.id, o.amt, c.name from {DB}.o o join {DB}.c c on o.cust = c.cid", 12),
    "outer": (f"select c.cid, c.name, o.id, o.amt from {DB}.c c left join {DB}.o o on o.cust = c.cid", 12),
    "aggregate": (f"select cust, count(*) as n, sum(amt) as s, max(amt) as m from {DB}.o group by cust", 9),
    # an aggregate over a join: three DESCRIBE HISTORY (one a table, which no script may hold); the
    # stored state's types come with the sources' columns (the storage's, in the one DESCRIBE QUERY)
    "aggregate_join": (
        f"select c.name, count(*) as n, sum(o.amt) as s, max(o.amt) as m from {DB}.o o join {DB}.c c "
        "on o.cust = c.cid group by c.name",
        12,
    ),
    "window": (f"select id, cust, row_number() over (partition by cust order by id) as rn from {DB}.o", 9),
    "setop": (f"select id as k from {DB}.o union select cid as k from {DB}.c", 10),
    "semijoin": (
        f"select o.id, o.amt from {DB}.o o "
        f"where exists (select 1 from {DB}.c c where c.cid = o.cust and c.name <> 'x')",
        11,
    ),
}
CHANGES = (
    f"update {DB}.o set amt = amt + 1 where id % 50 = 3",
    f"delete from {DB}.o where id % 70 = 5",
    f"insert into {DB}.o select id, id % 10, id * 1.5 from range(1000, 1010)",
    f"update {DB}.c set name = concat(name, 'x') where cid = 1",
)


def counted(spark_db, name: str) -> tuple[int, list[str], object]:
    """(statements sent, their texts, the outcome) of one run of view `name`, the first of a
    process on this server: it knows none of the server's defaults."""
    catalog._DEFAULTS.clear()
    spark_db.log.clear()
    outcome = Maintainer(spark_db, TableName(DB, name), VIEWS[name][0], refresh_policy="incremental").materialize()
    return len(spark_db.log), list(spark_db.log), outcome


def test_statements_per_refresh_of_each_class(spark, spark_db):
    with orders_and_customers(spark, DB, orders=300, customers=10):
        catalog._DEFAULTS.clear()  # a server no run has met
        for name in VIEWS:
            spark_db.log.clear()
            Maintainer(spark_db, TableName(DB, name), VIEWS[name][0], refresh_policy="incremental").materialize()
            learned = [s for s in spark_db.log if s == "SET -v" or (s.startswith("SET spark.") and "=" not in s)]
            assert bool(learned) == (name == "single"), (name, learned)  # the first build learns, once
        for name in VIEWS:
            n, sent, outcome = counted(spark_db, name)
            assert outcome.action is Action.NO_CHANGES and n == NO_CHANGE, (name, sent)
            assert sent.count("SET") == 1 and not any(s.startswith("SET spark.") for s in sent), sent
        for statement in CHANGES:
            spark.sql(statement)
        for name, (_, most) in VIEWS.items():
            n, sent, outcome = counted(spark_db, name)
            print(f"{name}: {n} statements (at most {most})", *(f"  {s[:150]}" for s in sent), sep="\n")  # with -s
            assert outcome.action is Action.REFRESHED and n <= most, (name, n, sent)
            # the sources' descriptions and the storage's properties are known from the watermark; the
            # sources', the model's and the storage's columns (an aggregate's state types) are one DESCRIBE
            assert not any(s.startswith(("DESCRIBE TABLE EXTENDED", "SHOW TBLPROPERTIES")) for s in sent), sent
            assert sum(s.startswith("DESCRIBE QUERY") for s in sent) == 1, (name, sent)
            writes = [s for s in sent if "MERGE INTO" in s or "INSERT INTO" in s]
            assert len(writes) == 1 and writes[0].startswith("BEGIN EXECUTE IMMEDIATE 'SET "), (name, sent)
            assert "DROP VIEW IF EXISTS" in writes[0] and not any(s.startswith(("SET ", "RESET ")) for s in sent)
            assert spark.sql(consistency_sql(spark_db, TableName(DB, name))).count() == 0, name
            assert spark.sql("SET spark.databricks.delta.commitInfo.userMetadata").collect()[0][1] == "<undefined>"
            assert not [r for r in spark.sql("SHOW TABLES").collect() if r.tableName.startswith("__ivm_")], name
