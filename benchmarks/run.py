"""The benchmark users read: refresh vs rebuild on TPC-H-like Delta sources, one Spark session.

    .venv/bin/python -m benchmarks.run                       # N = 1M and 10M lineitem rows (hours)
    .venv/bin/python -m benchmarks.run --quick               # tiny data, seconds: the test suite runs it

Sources (change data feed on, fixed seed): `lineitem` (N rows, the fact), `orders` (N/4) and
`customer` (N/40). Views, one per class: a 3-way inner join, a filter over one source, an
aggregate by group over a join, a global aggregate, and a LEFT JOIN of orders with lineitem.
Change batches: a fraction of the fact, insert-only, mixed and scattered over the whole fact,
and mixed and local to its newest 1 % (a third each inserted, updated, deleted). Each refresh
is checked against the recompute and compared, in the same run, with a rebuild of the same
view (`--full-refresh`) and a `table` model of the same SQL (CREATE OR REPLACE TABLE ... AS);
insert-only changes of the join also with a dbt-spark `incremental` model (`merge` strategy on
the fact's key, as users write it today); insert-only changes also with the refresh after it
(another batch, no rebuild in between: what a view refreshed on a schedule sees). Each timing is
the median of `--repeats` runs; with it go the statements the refresh issued, the costliest kinds
of them, the rows and data files it read from storage and the rows its rebuild read (Spark's scan
metrics, `rows_read`), and the driver's peak heap.

Writes `benchmarks/results/<run>.csv` (one row per case), `<run>.md` (the table, the machine,
the ratios, the scaling figure t(10N)/t(N)) and, with matplotlib installed, `<run>.png`;
`benchmarks/RESULTS.md` is the `.md` of the run on the reference machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dbt_ivm.history import changed_rows
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, consistency_sql
from dbt_ivm.session import SparkDatabase, get_spark

DB = "ivm_benchmark"
RESULTS = os.path.join(os.path.dirname(__file__), "results")
CDF = "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)"

# The sources' columns and types (`setup` creates them)
TABLES: dict[str, dict[str, str]] = {
    "customer": {"c_custkey": "BIGINT", "c_name": "STRING", "c_mktsegment": "STRING"},
    "orders": {"o_orderkey": "BIGINT", "o_custkey": "BIGINT", "o_orderstatus": "STRING", "o_totalprice": "DOUBLE"},
    "lineitem": {
        "l_orderkey": "BIGINT",
        "l_linenumber": "INT",
        "l_quantity": "INT",
        "l_extendedprice": "DOUBLE",
        "l_discount": "DOUBLE",
    },
}
VIEWS: dict[str, str] = {
    "join": (
        "select l.l_orderkey, l.l_linenumber, l.l_quantity, l.l_extendedprice, o.o_orderstatus, c.c_name "
        f"from {DB}.lineitem l join {DB}.orders o on l.l_orderkey = o.o_orderkey "
        f"join {DB}.customer c on o.o_custkey = c.c_custkey"
    ),
    "filter": (
        "select l_orderkey, l_linenumber, l_extendedprice * (1 - l_discount) as revenue "
        f"from {DB}.lineitem where l_discount > 0.05"
    ),
    "aggregate": (
        "select c.c_mktsegment, o.o_orderstatus, count(*) as n, sum(l.l_extendedprice) as revenue, "
        f"max(l.l_quantity) as top from {DB}.lineitem l join {DB}.orders o on l.l_orderkey = o.o_orderkey "
        f"join {DB}.customer c on o.o_custkey = c.c_custkey group by c.c_mktsegment, o.o_orderstatus"
    ),
    "global": f"select count(*) as n, sum(l_extendedprice) as revenue, max(l_quantity) as top from {DB}.lineitem",
    "outer": (
        "select o.o_orderkey, o.o_orderstatus, l.l_linenumber, l.l_quantity "
        f"from {DB}.orders o left join {DB}.lineitem l on l.l_orderkey = o.o_orderkey"
    ),
}
# The column each view is laid out by (`cluster_by`): the changes of the "mixed local" kind, and
# every insert, are local in the order key. The aggregates store one row per group: no layout.
CLUSTER_BY = {"join": "l_orderkey", "filter": "l_orderkey", "outer": "o_orderkey"}
KINDS = ("insert-only", "mixed scattered", "mixed local")
# --quick: sizes, fractions, (view, change kind) pairs, repeats; the test suite runs it
QUICK = ([2000], [0.01], [*((view, "mixed scattered") for view in VIEWS), ("join", "insert-only")], 1)


@dataclass
class Case:
    n: int
    view: str
    kind: str
    fraction: float
    changed_rows: int = 0
    refresh_s: float = 0.0
    rebuild_s: float = 0.0
    table_s: float = 0.0
    incremental_s: float | None = None  # the dbt-spark incremental model (insert-only join only)
    # insert-only: the next refresh, of another batch, with no rebuild in between (as users run
    # refreshes: the watermark then carries the stored highs, `Watermark.highs`)
    next_refresh_s: float | None = None
    path: str = ""  # the refresh's path: merge | insert | append | empty
    auto: str = ""  # what refresh_policy auto chose for this change: incremental | rebuild
    auto_s: float = 0.0  # auto's time: its estimate plus the path it chose
    statements: int = 0  # statements one refresh issued
    view_rows: int = 0
    peak_memory_mb: float = 0.0  # the driver JVM's peak heap use during the refresh
    largest_costs: str = ""  # the median refresh's costliest kinds of statement
    rows_read: int = 0  # rows the median refresh read from storage: data files and change feeds
    files_read: int = 0  # data files it read (after Delta's data skipping)
    rebuild_rows_read: int = 0  # the same for the rebuild that followed it
    auto_reason: str = ""  # auto's log line: its inputs and both estimates (the last run's)
    auto_inputs: str = ""  # what auto chose from (`policy.Inputs`, JSON; the last run's): `benchmarks.auto` replays it
    runs: list[float] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.rebuild_s / self.refresh_s if self.refresh_s else 0.0


class CountingDatabase(SparkDatabase):
    """Counts and times the statements a refresh issues."""

    def __init__(self, spark: Any):
        super().__init__(spark)
        self.count = 0
        self.timings: list[tuple[float, str]] = []

    def execute(self, sql: str) -> None:
        self.count += 1
        started = time.time()
        super().execute(sql)
        self.timings.append((time.time() - started, sql))

    def query(self, sql: str) -> list[dict[str, Any]]:
        self.count += 1
        started = time.time()
        rows = super().query(sql)
        self.timings.append((time.time() - started, sql))
        return rows

    def reset(self) -> None:
        self.count, self.timings = 0, []


STAGED = re.compile(r"CACHE TABLE `__ivm_([a-z]+)")


def unscripted(sql: str) -> list[str]:
    """The statements of a SQL script (`dbt_ivm.batch.script`) but its settings' SETs and RESETs;
    any other statement as it is."""
    text = sql.strip()
    if not (text.startswith("BEGIN ") and text.endswith("; END")):
        return [sql]
    return [s for s in text[len("BEGIN ") : -len("; END")].split("; ") if not s.startswith("EXECUTE IMMEDIATE ")]


def statement_kind(sql: str) -> str:
    """What a refresh's statement does, for the costs column: the write, a staged table by its
    role (a source's change set, the view's change set, a level of an outer join), a query, or
    metadata (DESCRIBE, SHOW, SET, releases). A script is its write, else its first statement."""
    parts = unscripted(sql)
    writes = [p for p in parts if p.lstrip().upper().startswith(("MERGE", "INSERT"))]
    sql = (writes or parts or [sql])[0]
    head = sql.lstrip().split(None, 1)[0].upper()
    if head in ("MERGE", "INSERT"):
        return head
    if staged := STAGED.match(sql.lstrip()):
        return f"stage {staged[1]}"
    return "query" if head in ("SELECT", "WITH") else "metadata"


def next_execution(spark: Any) -> int:
    """The id Spark's next SQL execution gets: above every one its status store still holds (it
    keeps the newest 1,000 (`spark.sql.ui.retainedExecutions`), so their count is not an id)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return max((executions.apply(i).executionId() for i in range(executions.size())), default=-1) + 1


def execution_metrics(spark: Any, since: int) -> Iterator[tuple[int, str, str, str]]:
    """(execution id, plan node, metric, value) of every finished SQL execution from id `since` on,
    from Spark's status store: what its UI shows per operator (rows, files, times)."""
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    for i in range(executions.size()):
        execution = executions.apply(i)
        if execution.executionId() < since or execution.metricValues() is None:
            continue
        values, nodes = execution.metricValues(), store.planGraph(execution.executionId()).allNodes()
        for j in range(nodes.size()):
            node, metrics = nodes.apply(j), nodes.apply(j).metrics()
            for k in range(metrics.size()):
                value = values.get(metrics.apply(k).accumulatorId())
                if value.isDefined():
                    yield execution.executionId(), node.name(), metrics.apply(k).name(), str(value.get())


# A scan of stored rows: a table's data files (`Scan parquet <table>`; Delta's own log scans are
# unnamed or `Scan ExistingRDD`) and a change feed (`Scan DeltaCDFRelation`); cached staged
# tables (`Scan In-memory table`) are not storage.
STORAGE_SCAN = re.compile(r"Scan (parquet \S|DeltaCDFRelation)")


def rows_read(spark: Any, since: int) -> tuple[int, int]:
    """(rows, data files) the statements since execution `since` read from storage."""
    rows = files = 0
    for _, node, metric, value in execution_metrics(spark, since):
        if STORAGE_SCAN.match(node) and metric in ("number of output rows", "number of files read"):
            count = int(value.replace(",", ""))
            rows, files = (rows + count, files) if metric == "number of output rows" else (rows, files + count)
    return rows, files


def largest_costs(timings: list[tuple[float, str]], top: int = 3) -> str:
    by_kind: dict[str, float] = {}
    for seconds, sql in timings:
        by_kind[statement_kind(sql)] = by_kind.get(statement_kind(sql), 0.0) + seconds
    ranked = sorted(by_kind.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in ranked)


def maintainer(db: CountingDatabase, view: str, policy: str | None = None) -> Maintainer:
    """The view's model as a user would configure it: its `cluster_by`, and `policy`."""
    return Maintainer(db, TableName(DB, view), VIEWS[view], refresh_policy=policy, cluster_by=CLUSTER_BY.get(view))


def setup(spark: Any, n: int) -> None:
    """`lineitem` (n rows, order keys 0..n/4, 4 lines each), `orders` (n/4), `customer` (n/40): fixed values."""
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    for table, columns in TABLES.items():
        spark.sql(f"CREATE TABLE {DB}.{table} ({', '.join(f'{c} {t}' for c, t in columns.items())}) {CDF}")
    customers, orders = max(1, n // 40), max(1, n // 4)
    spark.sql(
        f"INSERT INTO {DB}.customer SELECT id, concat('Customer#', id), "
        f"element_at(array('AUTOMOBILE','BUILDING','FURNITURE','HOUSEHOLD','MACHINERY'), int(id % 5) + 1) "
        f"FROM range({customers})"
    )
    spark.sql(
        f"INSERT INTO {DB}.orders SELECT id, (id * 7919) % {customers}, "
        f"element_at(array('F','O','P'), int(id % 3) + 1), (id % 9973) * 3.5 FROM range({orders})"
    )
    spark.sql(
        f"INSERT INTO {DB}.lineitem SELECT id DIV 4, int(id % 4), int(id % 50) + 1, (id % 9973) * 1.5, "
        f"pmod(hash(id), 11) / 100.0 FROM range({orders * 4})"
    )


def change(spark: Any, n: int, kind: str, fraction: float, batch: int) -> int:
    """A change batch of `fraction` of the fact; returns the change rows its commits report.

    New lines go to new orders (and their orders row, for the joins to match). The update and
    the delete each hit about a third of the batch, among the original lines that still exist
    (line id = 4 * l_orderkey + l_linenumber, 0..n-1): all of them (scattered), or the newest
    (local): the newest 1 %, widened while it holds fewer than four times the batch's rows
    (earlier batches' deletes thin it out). A hash of the line and the batch picks them, each
    batch its own, disjoint for its update and its delete, so a delete finds the rows the kind
    names however many batches ran before it (until the original lines run out).
    """
    k = max(1, int(n * fraction / (1 if kind == "insert-only" else 3)))
    base = n * (batch + 1)  # order keys above every existing one
    orders = max(1, k // 4)
    spark.sql(
        f"INSERT INTO {DB}.orders SELECT {base} + id, (id * 31) % {max(1, n // 40)}, 'O', 1.0 FROM range({orders})"
    )
    spark.sql(
        f"INSERT INTO {DB}.lineitem SELECT {base} + (id % {orders}), int(4 + id DIV {orders}), 7, 2.0, 0.07 "
        f"FROM range({k})"
    )
    if kind != "insert-only":
        first, existing = changed_window(spark, n, k, kind == "mixed local")
        # each line a bucket of `existing`, at random: k buckets updated, k others deleted
        where = f"{LINE} >= {first} AND {LINE} < {n} AND pmod(xxhash64({LINE}, {batch}), {max(existing, 2 * k)})"
        spark.sql(f"UPDATE {DB}.lineitem SET l_quantity = l_quantity + 1 WHERE {where} < {k}")
        spark.sql(f"DELETE FROM {DB}.lineitem WHERE {where} BETWEEN {k} AND {2 * k - 1}")
    commits = 1 if kind == "insert-only" else 3  # of lineitem
    history = [r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {DB}.lineitem LIMIT {commits}").collect()]
    version = int(history[0]["version"])
    return changed_rows(history, version - commits + 1, version) or 0


LINE = "(4 * l_orderkey + l_linenumber)"  # an original line's id, 0..n-1


def changed_window(spark: Any, n: int, k: int, local: bool) -> tuple[int, int]:
    """The first line id an update or delete may hit, and how many original lines from it on
    still exist: every line (scattered), or the newest 1 %, widened until it holds 4k lines."""
    width = max(n // 100, 4 * k) if local else n
    while True:
        first = max(0, n - width)
        existing = int(
            spark.sql(f"SELECT count(*) FROM {DB}.lineitem WHERE {LINE} >= {first} AND {LINE} < {n}").first()[0]
        )
        if not local or existing >= 4 * k or first == 0:
            return first, existing
        width *= 2


@contextmanager
def peak_heap(spark: Any) -> Iterator[list[float]]:
    """The driver JVM's heap high-water mark while the block runs, in MB."""
    jvm = spark.sparkContext._jvm
    pools = [
        p for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans() if p.getType().name() == "HEAP"
    ]
    for p in pools:
        p.resetPeakUsage()
    out: list[float] = []
    yield out
    out.append(sum(p.getPeakUsage().getUsed() for p in pools) / 2**20)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.time()
    result = fn()
    return time.time() - t, result


def table_model(spark: Any, view: str) -> float:
    """A dbt `table` model of the same SQL: CREATE OR REPLACE TABLE ... AS."""
    return timed(lambda: spark.sql(f"CREATE OR REPLACE TABLE {DB}.{view}_table USING DELTA AS {VIEWS[view]}"))[0]


def incremental_model(spark: Any) -> float:
    """The join as a dbt-spark incremental model with the `merge` strategy on the fact's key:
    new rows above the model's highest order key, merged on (l_orderkey, l_linenumber)."""
    target = f"{DB}.join_incremental"
    if not spark.catalog.tableExists(target):
        spark.sql(f"CREATE TABLE {target} USING DELTA AS {VIEWS['join']}")
        return 0.0
    sql = (
        f"MERGE INTO {target} AS t USING (SELECT * FROM ({VIEWS['join']}) "
        f"WHERE l_orderkey > (SELECT max(l_orderkey) FROM {target})) AS s "
        "ON t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    return timed(lambda: spark.sql(sql))[0]


def check_recomputed(spark: Any, db: CountingDatabase, name: TableName, after: str) -> None:
    """The view equals its model's SQL run on the sources (`consistency_sql`), or the run stops."""
    if differing := spark.sql(consistency_sql(db, name)).count():
        raise AssertionError(f"{after}: {differing} rows differ from the recompute")


def run_case(
    spark: Any, db: CountingDatabase, n: int, view: str, kind: str, fraction: float, repeats: int, batch: list[int]
) -> Case:
    case = Case(n, view, kind, fraction)
    name = TableName(DB, view)
    refreshes, rebuilds, tables, incrementals, autos, costs, reads, nexts = [], [], [], [], [], [], [], []
    if view == "join" and kind == "insert-only":  # the incremental model, built now: its next runs take new rows
        spark.sql(f"DROP TABLE IF EXISTS {DB}.join_incremental")
        incremental_model(spark)
    for _ in range(repeats):
        batch[0] += 1
        case.changed_rows = change(spark, n, kind, fraction, batch[0])
        estimator = maintainer(db, view)
        choice = estimator.estimate()  # its inspect is the refresh's own: only the estimate's queries count
        autos.append((estimator.auto_seconds, choice is not None and choice.rebuild))
        case.auto_reason = choice.reason if choice else ""
        case.auto_inputs = json.dumps(asdict(choice.inputs)) if choice and choice.inputs else ""
        db.reset()
        since = next_execution(spark)
        with peak_heap(spark) as peak:
            seconds, outcome = timed(maintainer(db, view, "incremental").materialize)
        refreshes.append(seconds)
        costs.append(largest_costs(db.timings))
        read = rows_read(spark, since)
        case.peak_memory_mb = max(case.peak_memory_mb, peak[0])
        case.statements, case.path = db.count, outcome.path or outcome.action
        check_recomputed(spark, db, name, f"{view} after {kind} {fraction}")
        if kind == "insert-only":
            batch[0] += 1
            change(spark, n, kind, fraction, batch[0])
            nexts.append(timed(maintainer(db, view, "incremental").materialize)[0])
            check_recomputed(spark, db, name, f"{view} after a second {kind} {fraction}")
        since = next_execution(spark)
        rebuilds.append(timed(lambda: maintainer(db, view).materialize(full_refresh=True))[0])
        reads.append((*read, rows_read(spark, since)[0]))
        tables.append(table_model(spark, view))
        if view == "join" and kind == "insert-only":
            incrementals.append(incremental_model(spark))
    case.runs = refreshes
    median = refreshes.index(statistics.median_low(refreshes))
    case.largest_costs = costs[median]
    case.rows_read, case.files_read, case.rebuild_rows_read = reads[median]
    case.auto = "rebuild" if sum(rebuild for _, rebuild in autos) * 2 > len(autos) else "incremental"
    case.auto_s = statistics.median(
        estimate + (rebuild_s if rebuild else refresh_s)
        for (estimate, rebuild), refresh_s, rebuild_s in zip(autos, refreshes, rebuilds, strict=True)
    )
    case.refresh_s = statistics.median(refreshes)
    case.rebuild_s = statistics.median(rebuilds)
    case.table_s = statistics.median(tables)
    if incrementals:
        case.incremental_s = statistics.median(incrementals)
    if nexts:
        case.next_refresh_s = statistics.median(nexts)
    case.view_rows = int(spark.sql(f"SELECT count(*) FROM {DB}.{view}").collect()[0][0])
    return case


def run(
    spark: Any,
    sizes: list[int],
    fractions: list[float],
    cases_of: list[tuple[str, str]],
    repeats: int,
    label: str,
    log: Callable[[str], None] = print,
    results: str = RESULTS,
    scaled: tuple[str, ...] = (),
) -> tuple[list[Case], str]:
    """Every (view, change kind) of `cases_of` at every size and fraction; each view's no-change refresh.

    The views of `scaled` also run, at each size after the first, the fractions that change as
    many rows as `fractions` do at the first size: the scaling figure's cases.
    """
    db = CountingDatabase(spark)
    cases: list[Case] = []
    os.makedirs(results, exist_ok=True)
    path = os.path.join(results, f"{label}.csv")
    views = list(dict.fromkeys(view for view, _ in cases_of))
    for n in sizes:
        setup(spark, n)
        batch = [0]
        for view in views:
            maintainer(db, view).materialize(full_refresh=True)
        for view in views:
            # caught up, untimed: its first case must not also carry the batches of the views before it;
            # under auto, as users run it, so that its watermark carries the sizes auto's estimates use
            maintainer(db, view).materialize()
            same_rows = [f * sizes[0] / n for f in fractions] if view in scaled and n != sizes[0] else []
            for kind in (k for v, k in cases_of if v == view):
                for fraction in sorted({*fractions, *same_rows}):
                    case = run_case(spark, db, n, view, kind, fraction, repeats, batch)
                    cases.append(case)
                    log(
                        f"N={n:>9} {view:<9} {kind:<15} {fraction:>7.2%}: refresh {case.refresh_s:6.2f} s "
                        f"({case.path}, {case.statements} statements), rebuild {case.rebuild_s:6.2f} s, "
                        f"table {case.table_s:6.2f} s"
                        + (f", incremental model {case.incremental_s:6.2f} s" if case.incremental_s else "")
                        + f": {case.speedup:5.1f}x; auto chose {case.auto} ({case.auto_s:6.2f} s)"
                    )
                    write_csv(cases, path)
            # right after its cases (each ends with a rebuild): nothing changed since
            seconds, outcome = timed(maintainer(db, view).materialize)
            log(f"N={n:>9} {view:<9} no change: {seconds:.2f} s ({outcome.message})")
            cases.append(Case(n, view, "no change", 0.0, 0, seconds, path=outcome.action))
            write_csv(cases, path)
    return cases, path


def write_csv(cases: list[Case], path: str) -> None:
    with open(path, "w", newline="") as f:
        fields = [k for k in asdict(cases[0]) if k != "runs"] + ["speedup", "runs"]
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for c in cases:
            row = {k: v for k, v in asdict(c).items() if k != "runs"}
            w.writerow({**row, "speedup": round(c.speedup, 2), "runs": " ".join(f"{r:.2f}" for r in c.runs)})


def read_csv(path: str) -> list[Case]:
    """The cases of a run's CSV (for `--report`: the table and the plot again, from the figures)."""
    types = {f.name: f.type for f in fields(Case)}
    cases = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            values: dict[str, Any] = {}
            for name, text in row.items():
                kind = str(types.get(name, ""))
                if name not in types or name == "runs":
                    continue
                if kind.startswith("int"):
                    values[name] = int(text)
                elif kind.startswith("float | None"):
                    values[name] = float(text) if text else None
                elif kind.startswith("float"):
                    values[name] = float(text)
                else:
                    values[name] = text
            cases.append(Case(**values, runs=[float(r) for r in row.get("runs", "").split()]))
    return cases


def machine() -> str:
    """What the figures were measured on."""
    import platform

    cores = os.cpu_count()
    memory = ""
    if os.path.exists("/proc/meminfo"):
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        memory = f", {kb / 2**20:.0f} GiB"
    return f"{platform.machine()}, {cores} cores{memory}, Python {platform.python_version()}, local[2] Spark session"


def scaling(cases: list[Case]) -> list[tuple[str, str, int, float]]:
    """(view, kind, changed rows, t(10N)/t(N)): the refresh at 10N against N for the same number of
    changed rows (fraction f at N, f/10 at 10N); ideal 1.0."""
    out = []
    by = {(c.view, c.kind, c.n, round(c.fraction * c.n)): c for c in cases if c.kind in KINDS}
    for (view, kind, n, rows), small in sorted(by.items()):
        big = by.get((view, kind, 10 * n, rows))
        if big and small.refresh_s:
            out.append((view, kind, rows, big.refresh_s / small.refresh_s))
    return out


def report(cases: list[Case], csv_path: str) -> str:
    """benchmarks/RESULTS.md: the table, the machine, the ratios and the scaling figure."""
    timed_statements = any(c.largest_costs for c in cases)  # runs before the statement timings lack them
    counted_reads = any(c.rows_read for c in cases)  # and before the scan metrics, the rows read
    costs_header = " refresh's largest costs |" if timed_statements else ""
    costs_header += " rows read: refresh (files) / rebuild |" if counted_reads else ""
    lines = [
        "# Benchmark results",
        "",
        f"`python -m benchmarks.run` on {machine()}; raw figures: `{os.path.relpath(csv_path)}`.",
        "Each time is the median of the runs; every refresh was checked against the recompute.",
        "",
        f"| N | view | change | fraction | changed rows | refresh | path |{costs_header} rebuild | table "
        "| speed-up | auto |",
        "|---|---|---|---|---|---|---|" + "---|" * (timed_statements + counted_reads) + "---|---|---|---|",
    ]
    for c in cases:
        costs = f" {c.largest_costs} |" if timed_statements else ""
        if c.kind == "no change":
            costs += " |" if counted_reads else ""
            lines.append(f"| {c.n:,} | {c.view} | no change | | 0 | {c.refresh_s:.2f} s | |{costs} | | | |")
            continue
        if counted_reads:
            costs += f" {_rows(c.rows_read)} ({c.files_read:,}) / {_rows(c.rebuild_rows_read)} |"
        auto = f"{c.auto} {c.auto_s:.2f} s ({c.auto_s / min(c.refresh_s, c.rebuild_s):.2f}x the faster)"
        incremental = f"; incremental model {c.incremental_s:.2f} s" if c.incremental_s else ""
        following = f" (next {c.next_refresh_s:.2f} s)" if c.next_refresh_s else ""
        lines.append(
            f"| {c.n:,} | {c.view} | {c.kind} | {c.fraction:.2%} | {c.changed_rows:,} | "
            f"{c.refresh_s:.2f} s{following} | {c.path} ({c.statements} statements) |{costs} {c.rebuild_s:.2f} s | "
            f"{c.table_s:.2f} s{incremental} | {c.speedup:.1f}x | {auto} |"
        )
    scaled = scaling(cases)
    if scaled:
        lines += ["", "Scaling at a fixed number of changed rows, t(10N)/t(N) (ideal 1.0):", ""]
        lines += [f"- {view}, {kind}, {rows:,} changed rows: {ratio:.2f}" for view, kind, rows, ratio in scaled]
    return "\n".join(lines) + "\n"


def _rows(n: int) -> str:
    """A row count for the table: 950, 13.3k, 10.2M."""
    if n < 1000:
        return str(n)
    return f"{n / 1e3:.1f}k" if n < 1e6 else f"{n / 1e6:.1f}M"


def plotted(cases: list[Case], path: str) -> str:
    """The run's log line about its plot: where it is, or why there is none."""
    png = plot(cases, path)
    return f", plot: {png}" if png else '; no plot: matplotlib is not installed (pip install -e ".[bench]")'


def plot(cases: list[Case], path: str) -> str | None:
    """Refresh and rebuild time vs change fraction, one panel per view class, log scales."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    views = sorted({c.view for c in cases}, key=list(VIEWS).index)
    fig, axes = plt.subplots(1, len(views), figsize=(4 * len(views), 3.6), squeeze=False)
    for ax, view in zip(axes[0], views, strict=True):
        for n in sorted({c.n for c in cases}):
            for kind in KINDS:
                points = sorted(
                    (c.fraction, c.refresh_s, c.rebuild_s)
                    for c in cases
                    if c.view == view and c.n == n and c.kind == kind
                )
                if points:
                    ax.plot(
                        [p[0] for p in points], [p[1] for p in points], marker="o", label=f"refresh {kind}, N={n:g}"
                    )
            fractions = sorted({c.fraction for c in cases if c.view == view and c.n == n and c.kind in KINDS})
            rebuild = [
                (f, statistics.median(c.rebuild_s for c in cases if c.view == view and c.n == n and c.fraction == f))
                for f in fractions
            ]
            if rebuild:
                style = "k--x" if n == min(c.n for c in cases) else "k:+"
                ax.plot([p[0] for p in rebuild], [p[1] for p in rebuild], style, label=f"rebuild, N={n:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(view)
        ax.set_xlabel("changed fraction of the fact")
        ax.set_ylabel("seconds")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    out = path.replace(".csv", ".png")
    fig.savefig(out, dpi=110)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny data, one run per case: seconds")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.0001, 0.001, 0.01, 0.1])
    ap.add_argument("--views", nargs="+", default=list(VIEWS), choices=list(VIEWS))
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--scaled",
        nargs="*",
        default=[],
        choices=list(VIEWS),
        help="views that also run, at the larger sizes, as many changed rows as at the first (the scaling figure)",
    )
    ap.add_argument("--label", default=time.strftime("run-%Y%m%d-%H%M"))
    ap.add_argument("--report", metavar="CSV", help="write the .md and the plot of an earlier run's CSV, run nothing")
    args = ap.parse_args()
    if args.report:
        cases = read_csv(args.report)
        with open(args.report.replace(".csv", ".md"), "w") as f:
            f.write(report(cases, args.report))
        print(f"report: {args.report.replace('.csv', '.md')}" + plotted(cases, args.report))
        return
    pairs = [(view, kind) for view in args.views for kind in args.kinds]
    if args.quick:
        args.sizes, args.fractions, pairs, args.repeats = QUICK
        args.label = "quick"
    spark = get_spark(tempfile.mkdtemp(prefix="ivm-benchmark-"))
    cases, path = run(spark, args.sizes, args.fractions, pairs, args.repeats, args.label, scaled=tuple(args.scaled))
    with open(path.replace(".csv", ".md"), "w") as f:
        f.write(report(cases, path))
    print(f"results: {path} (and .md)" + plotted(cases, path))


if __name__ == "__main__":
    main()
