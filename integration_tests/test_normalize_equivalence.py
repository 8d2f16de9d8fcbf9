"""The normalized SQL of every accepted case returns what the model's own SQL returns, on Spark.

`analyze` rewrites a model (qualifies, expands stars, writes JOIN ... USING as Spark resolves
it, merges CTEs and subqueries, turns outer joins that a predicate nullifies into inner ones,
keeps the model's spelling of output names; predicates stay as written). The refresh
algorithms run `plan.normalized_sql`, so any difference from the model's SQL would be a
silent wrong result. For each accepted case of tests/unit/cases.py and each of a few generated
data sets (NULLs in join and group keys, duplicate rows, empty tables; the suite runs the first,
--stress all), both queries must return the same column names, the same column types and the
same multiset of rows.

Every schema of the table gets its own database (eq_shop, eq_ora, ...); the tables (Parquet: the
comparison needs no Delta) are created once and refilled per data set.
"""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from decimal import Decimal

import pytest

from dbt_ivm.analyze import analyze
from tests.spark_sources import session_settings
from tests.unit.cases import ACCEPTED, SCHEMAS

pytestmark = pytest.mark.spark

# Small domains so that joins match often; the strings include the literals the cases filter on.
VALUES = {
    "int": [0, 1, 2, 3],
    "string": ["a", "b", "abc", "paid", "gold", "north"],
    "double": [0.5, 1.0, 2.25],
    "date": [date(2024, 1, 1), date(2024, 6, 30)],
    "decimal": [
        Decimal("0.00"),
        Decimal("5.50"),
        Decimal("10.00"),
        Decimal("99.99"),
        Decimal("150.00"),
        Decimal("500.25"),
    ],
}
# (seed, rows per table, chance of NULL, tables left empty). Duplicate rows in every table. The
# suite runs the first (the suite's time: the second costs about a minute); --stress runs both.
DATASETS = [
    (1, 12, 0.15, frozenset()),
    (2, 8, 0.4, frozenset({"eq_shop.regions", "eq_ora.test_inner", "eq_nica.t", "eq_pg.t"})),
]
NEVER_ROWS = {"fold_false"}  # WHERE FALSE: no data set can give rows
CHUNK = 10  # queries per Spark job: one huge UNION ALL plans slowly
# For a few rows per table one task per shuffle is plenty (the suite's session compiles no code
# already: conftest.TEST_SETTINGS). Set for this module only, restored afterwards.
FAST_CONF = {"spark.sql.shuffle.partitions": "1"}


# Columns the cases filter on get their own small domains, so that the filters match some rows.
COLUMN_VALUES = {
    "tier": ["gold", "silver", "gold"],
    "status": ["paid", "sent", "new"],
    "name": ["north", "abc", "b"],
    "whe": [0, 1, 0, 2],
}


def _kind(spark_type: str) -> str:
    return "decimal" if spark_type.startswith("decimal") else spark_type


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _table_sql(key: str) -> str:
    return ".".join(_quote(p) for p in key.split("."))


def _rows(rng: random.Random, columns: dict[str, str], n: int, null_chance: float) -> list[tuple]:
    domains = [COLUMN_VALUES.get(c, VALUES[_kind(t)]) for c, t in columns.items()]
    rows = [tuple(None if rng.random() < null_chance else rng.choice(d) for d in domains) for _ in range(n)]
    return rows + rng.sample(rows, min(2, len(rows)))  # duplicate rows


def _schemas_in_use() -> list[str]:
    return sorted({c.schema for c in ACCEPTED})


def _tables_in_use() -> dict[str, dict[str, str]]:
    return {k: cols for s in _schemas_in_use() for k, cols in SCHEMAS[s].items()}


def _literal(value, spark_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if isinstance(value, str):
        return "'" + value.replace("'", "\\'") + "'"
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    return f"CAST({value} AS {spark_type})"


def _values(columns: dict[str, str], rows: list[tuple]) -> str:
    types = list(columns.values())
    return ", ".join("(" + ", ".join(map(_literal, row, types)) + ")" for row in rows)


def _fill(spark, seed: int, n: int, null_chance: float, empty: frozenset[str], create: bool) -> None:
    """Give every source this data set, a few tables at a time (a write is mostly waiting):
    CREATE TABLE ... AS VALUES the first time (the databases are dropped before), then INSERT
    OVERWRITE. Parquet, not Delta: the test compares two queries over the same rows, and Delta's
    work per scan (its log, file filtering) doubled the test's time (79 s against 47 s alone)."""
    rng = random.Random(seed)
    statements = []
    for key, columns in _tables_in_use().items():
        rows = [] if key in empty else _rows(rng, columns, n, null_chance)
        table = _table_sql(key)
        if create:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(key.split('.')[0])}")
            names = ", ".join(map(_quote, columns))
            statements.append(
                f"CREATE TABLE {table} USING parquet AS SELECT * FROM VALUES "
                f"{_values(columns, rows or [(None,) * len(columns)])} AS v({names})" + ("" if rows else " WHERE false")
            )
        elif rows:
            statements.append(f"INSERT OVERWRITE {table} VALUES {_values(columns, rows)}")
        else:
            statements.append(f"INSERT OVERWRITE {table} SELECT * FROM {table} WHERE false")
    _run_all(spark, [lambda st=st: spark.sql(st) for st in statements])


def _batch(spark, queries: dict[str, str]) -> dict[str, Counter]:
    """Rows of several queries in one Spark job: each row as JSON (NULLs kept), tagged by its query."""
    parts = [
        f"SELECT {i} AS q, to_json(struct(r.*), map('ignoreNullFields', 'false')) AS row FROM ({sql}) AS r"
        for i, sql in enumerate(queries.values())
    ]
    keys = list(queries)
    out: dict[str, Counter] = {k: Counter() for k in keys}
    for q, row in spark.sql(" UNION ALL ".join(parts)).collect():
        out[keys[q]][row] += 1
    return out


def _run_all(spark, jobs: list, workers: int = 4) -> list:
    """Run the thunks side by side: a Spark job on tiny tables is mostly fixed latency."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: job(), jobs))


def _rows_job(spark, chunk: dict):
    def run() -> dict:
        try:
            return dict(_batch(spark, chunk))
        except Exception:  # find the query that fails; the others still count
            out: dict = {}
            for key, sql in chunk.items():
                try:
                    out.update(_batch(spark, {key: sql}))
                except Exception as e:  # reported as this case's problem
                    out[key] = e
            return out

    return run


def _signature_job(spark, key, sql: str):
    def run() -> dict:
        try:
            return {key: [(f.name, f.dataType.simpleString()) for f in spark.sql(sql).schema]}
        except Exception as e:  # reported as this case's problem
            return {key: e}

    return run


def _chunks(queries: dict) -> list[dict]:
    items = list(queries.items())
    return [dict(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)]


def _merge(parts: list[dict]) -> dict:
    return {k: v for part in parts for k, v in part.items()}


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"


@pytest.fixture(scope="module")
def outcomes(spark, request):
    """{case id: (problems over all data sets, rows returned over all data sets)}."""
    queries = {("model", c.id): c.sql for c in ACCEPTED}
    queries.update({("normalized", c.id): analyze(c.sql, SCHEMAS[c.schema]).normalized_sql for c in ACCEPTED})
    problems: dict[str, list[str]] = {c.id: [] for c in ACCEPTED}
    rows: dict[str, int] = {c.id: 0 for c in ACCEPTED}
    _drop_databases(spark)  # left over by an interrupted run
    with session_settings(spark, FAST_CONF):
        datasets = DATASETS if request.config.getoption("--stress") else DATASETS[:1]
        for number, (seed, n, null_chance, empty) in enumerate(datasets):
            _fill(spark, seed, n, null_chance, empty, create=number == 0)
            if number == 0:  # names and types do not depend on the data
                signatures = _merge(_run_all(spark, [_signature_job(spark, k, q) for k, q in queries.items()]))
                for case in ACCEPTED:
                    want, got = signatures[("model", case.id)], signatures[("normalized", case.id)]
                    if isinstance(want, Exception) or isinstance(got, Exception):
                        problems[case.id].append(_error(want if isinstance(want, Exception) else got))
                    elif want != got:
                        problems[case.id].append(f"columns {want} != {got}")
            results = _merge(_run_all(spark, [_rows_job(spark, chunk) for chunk in _chunks(queries)]))
            for case in ACCEPTED:
                want, got = results[("model", case.id)], results[("normalized", case.id)]
                if isinstance(want, Exception) or isinstance(got, Exception):
                    problems[case.id].append(f"data set {seed}: {_error(want if isinstance(want, Exception) else got)}")
                    continue
                if want != got:
                    problems[case.id].append(
                        f"data set {seed}: rows missing {dict(want - got)}, rows extra {dict(got - want)}"
                    )
                rows[case.id] += sum(want.values())
        yield {c.id: (problems[c.id], rows[c.id]) for c in ACCEPTED}
    _drop_databases(spark)


def _drop_databases(spark) -> None:
    for db in sorted({k.split(".")[0] for k in _tables_in_use()}):
        spark.sql(f"DROP DATABASE IF EXISTS {_quote(db)} CASCADE")


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.id)
def test_normalized_sql_returns_the_same_multiset(outcomes, case):
    problems, rows = outcomes[case.id]
    assert not problems, (
        f"{case.sql}\n  normalized: {analyze(case.sql, SCHEMAS[case.schema]).normalized_sql}\n  "
        + "\n  ".join(problems)
    )
    if case.id not in NEVER_ROWS:
        assert rows > 0, "no data set gave this view a row: the comparison proves nothing"
