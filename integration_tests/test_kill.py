"""kill -9 of the `dbt run` process at statement boundaries of a refresh, over the Thrift Server,
for every view class: the next `dbt run` gives the view its SQL gives, so no change is lost or
applied twice. The server may finish a statement after its client died (a kill while the write
runs: the connection is cut mid-MERGE), and the next run may start while it still runs.

The boundaries are counted, not listed: one refresh of each model runs with the adapter's test
hook logging its statements (`dbt/adapters/ivm_spark/faults.py`), then a refresh is killed after
each statement k (and during its one write). The suite runs a sample (the join view, killed
during its write); `IVM_KILL_MATRIX=1` runs every class and every k.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt

from integration_tests.fixtures import (
    CDF,
    ORDER_CUSTOMERS,
    ORDERS_MV,
    OUTER_MODELS,
    SHOP_ROWS,
    SHOP_TABLES,
    SOURCES_YML,
    STATUS_COUNTS,
    model,
    recompute,
)
from integration_tests.thrift_server import ThriftServer, thrift_profile

pytestmark = pytest.mark.spark

MODELS = {
    "k_join": ORDER_CUSTOMERS,
    "k_outer": OUTER_MODELS["customer_orders"],
    "k_aggregate": STATUS_COUNTS,
    "k_window": "select order_id, status, amount, sum(amount) over (partition by status) as status_total from {orders}",
    "k_single": ORDERS_MV,
}
MATRIX = os.environ.get("IVM_KILL_MATRIX") == "1"
WRITES = ("MERGE INTO", "INSERT INTO", "CREATE OR REPLACE TABLE")  # a refresh's one write to its storage


def is_write(statement: str) -> bool:
    """The refresh's write: alone, or in the script that sets its confs around it (`batch`)."""
    text = statement.upper()
    return text.startswith(WRITES) or (text.startswith("BEGIN ") and any(f"; {w}" in text for w in WRITES))


def changes(n: int) -> list[str]:
    """Round n's changes: an insert, an update and a delete of orders, an update of customers."""
    return [
        f"INSERT INTO {{schema}}.orders VALUES ({100 + n}, {10 + n % 5}, {n}.5, 'open'), ({200 + n}, 11, 1.0, NULL)",
        f"UPDATE {{schema}}.orders SET amount = amount + 1, status = 's{n % 3}' WHERE order_id % 3 = {n % 3}",
        f"DELETE FROM {{schema}}.orders WHERE order_id = {200 + n - 1}",
        f"UPDATE {{schema}}.customers SET name = concat(name, '{n % 10}') WHERE customer_id = {10 + n % 5}",
    ]


def dbt_process(project, name: str | None, **env: str) -> subprocess.CompletedProcess:
    """`dbt run` of one model (None: every model) in its own process, with the fault hook's `env`."""
    dbt = Path(sys.executable).with_name("dbt")
    args = [str(dbt), "run", *(["-s", name] if name else []), "--project-dir", str(project.project_root)]
    args += ["--profiles-dir", str(project.profiles_dir)]
    return subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


class TestKillAtEveryStatement:
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, thrift_server: ThriftServer) -> dict[str, object]:
        return thrift_profile(thrift_server, threads=1)

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {f"{name}.sql": model(sql) for name, sql in MODELS.items()} | {"sources.yml": SOURCES_YML}

    @pytest.fixture(scope="class", autouse=True)
    def sources(self, project) -> None:
        for name in ("orders", "customers"):
            project.run_sql(f"CREATE TABLE {{schema}}.{name} ({SHOP_TABLES[name]}) {CDF}")
            project.run_sql(f"INSERT INTO {{schema}}.{name} VALUES {SHOP_ROWS[name]}")

    def change(self, project, n: int) -> None:
        for statement in changes(n):
            project.run_sql(statement)

    def equal_to_its_sql(self, project, name: str) -> bool:
        rows = project.run_sql(f"SELECT * FROM {{schema}}.{name}", fetch="all")
        expected = project.run_sql(recompute(MODELS[name], project.test_schema), fetch="all")
        return Counter(map(tuple, rows)) == Counter(map(tuple, expected))

    def statements(self, project, name: str, tmp_path: Path, n: int) -> list[str]:
        """The statements one refresh of `name` sends (it refreshes round n's changes)."""
        log = tmp_path / f"{name}.statements"
        self.change(project, n)
        ran = dbt_process(project, name, IVM_FAULT_STATEMENT_LOG=str(log))
        assert ran.returncode == 0 and "refreshed" in ran.stdout, ran.stdout[-3000:]
        return log.read_text().splitlines()

    def killed_then_repaired(self, project, name: str, n: int, **hook: str) -> None:
        self.change(project, n)
        killed = dbt_process(project, name, **hook)
        assert killed.returncode == -9, (hook, killed.stdout[-3000:])
        results = run_dbt(["run", "-s", name], expect_pass=None)
        if str(results[0].status) != "success":  # the killed run's write landed meanwhile: this one lost the race
            assert "committed first" in str(results[0].message), results[0].message
            run_dbt(["run", "-s", name])
        assert self.equal_to_its_sql(project, name), (name, hook)

    def test_the_next_run_repairs_a_killed_refresh(self, project, tmp_path):
        run_dbt(["run"])
        n = 0
        counted = {}
        for name in MODELS if MATRIX else ["k_join"]:
            n += 1
            sent = self.statements(project, name, tmp_path, n)
            write = next(k for k, s in enumerate(sent, 1) if is_write(s))
            counted[name] = (len(sent), write)
            kills = [{"IVM_FAULT_KILL_DURING_STATEMENT": str(write)}]
            after = range(1, len(sent) + 1) if MATRIX else []
            kills += [{"IVM_FAULT_KILL_AFTER_STATEMENTS": str(k)} for k in after]
            for hook in kills:
                n += 1
                self.killed_then_repaired(project, name, n, **hook)
        print(f"\nstatements per refresh (count, the write's index): {counted}")

    @pytest.mark.stress
    def test_two_runs_at_once_while_the_sources_change(self, project, request):
        """Rounds of two `dbt run`s of every model at once, each in its own process over the
        server, while the sources change: each run succeeds or loses a race cleanly (`committed
        first`), and a run after them leaves every view equal to its SQL (a change applied twice
        or lost would stay)."""
        rounds = request.config.getoption("--rounds") or 20
        run_dbt(["run"])
        lost = 0
        for n in range(rounds):
            self.change(project, 1000 + n)
            with ThreadPoolExecutor(3) as pool:
                writes = pool.submit(self.change, project, 2000 + n)
                runs = [pool.submit(dbt_process, project, None) for _ in range(2)]
                writes.result()
                for ran in (r.result() for r in runs):
                    assert ran.returncode == 0 or "committed first" in ran.stdout, (n, ran.stdout[-3000:])
                    lost += ran.returncode != 0
            run_dbt(["run"])
            wrong = [name for name in MODELS if not self.equal_to_its_sql(project, name)]
            assert not wrong, f"round {n}: {wrong} differ from their SQL"
        print(f"\n{rounds} rounds of two dbt runs at once: zero wrong views; runs that lost a race: {lost}")
