"""kill -9 of the `dbt run` process at statement boundaries of a refresh, over the Thrift Server,
for every view class: the next `dbt run` gives the view its SQL gives, so no change is lost or
applied twice. The server may finish a statement after its client died (a kill while the write
runs: the connection is cut mid-MERGE), and the next run may start while it still runs.

The boundaries are counted, not listed: one refresh of each model runs with the adapter's test
hook logging its statements (`dbt/adapters/ivm_spark/faults.py`), then a refresh is killed after
each statement k (and during its one write, found by the hook: `write`). Each killed run logs its
statements too, so a case checks that the kill came where it meant to: after k statements of a
refresh (`killed_where_meant`: their shapes, `faults.shape`, what each is and writes, not its
data, are those of the next run, which refreshes the same change set, or from the write on the
logged run's), or after the write was sent.
The suite runs a sample (the join view, killed during its write); `IVM_KILL_MATRIX=1` runs every
class and every k.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
import yaml
from dbt.tests.util import get_connection, run_dbt

from dbt.adapters.ivm_spark.faults import is_write, shape
from dbt_ivm.history import KEEPS_ROWS
from dbt_ivm.metadata import Watermark
from integration_tests.fixtures import (
    BUYERS,
    CDF,
    CUSTOMER_IDS,
    IDS_COUNTED,
    ORDER_CUSTOMERS,
    ORDERS_MV,
    OUTER_MODELS,
    SHOP_ROWS,
    SHOP_TABLES,
    SOURCES_YML,
    STATUS_COUNTS,
    STATUS_SHARES,
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
if MATRIX:  # the matrix's only: the suite kills the join's refresh and cuts the aggregate's
    MODELS |= {"k_setops": CUSTOMER_IDS, "k_exists": BUYERS, "k_union_agg": IDS_COUNTED, "k_calc": STATUS_SHARES}
# the matrix's models (IVM_KILL_MODELS=k_join,k_aggregate: those only; default every one)
MATRIX_MODELS = [m for m in os.environ.get("IVM_KILL_MODELS", "").split(",") if m] or list(MODELS)
# The connection cuts during the write (the fault hook's): the server's session lost ("cut"), or
# kept with the answer lost ("lose"), under the profile's `query_retries` (dbt-spark re-submits
# the statement after a lost connection that many times). The suite runs the re-submission;
# IVM_CUT_FAULTS=cut: the matrix runs that fault only.
FAULTS = [f for f in os.environ.get("IVM_CUT_FAULTS", "").split(",") if f] or ["lose", "cut"]
CUTS = [(fault, retries) for fault in FAULTS for retries in (0, 1)] if MATRIX else [("lose", 1)]


def changes(n: int) -> list[str]:
    """Round n's changes: an insert, an update and a delete of orders, an update of customers."""
    return [
        f"INSERT INTO {{schema}}.orders VALUES ({100 + n}, {10 + n % 5}, {n}.5, 'open'), ({200 + n}, 11, 1.0, NULL)",
        f"UPDATE {{schema}}.orders SET amount = amount + 1, status = 's{n % 3}' WHERE order_id % 3 = {n % 3}",
        f"DELETE FROM {{schema}}.orders WHERE order_id = {200 + n - 1}",
        f"UPDATE {{schema}}.customers SET name = concat(name, '{n % 10}') WHERE customer_id = {10 + n % 5}",
    ]


def killed_where_meant(sent: list[str], ran: list[str], hook: dict[str, str], repaired: list[str]) -> None:
    """A killed run's statements (`ran`) show the kill where `hook` meant it: during the write (the
    write was sent), or after statement k of a refresh. Its path is the next run's (`repaired`)
    while it had not sent its write: the next run refreshed the same change set from the same
    state, and a class's path may depend on the change set's data (the aggregate's recompute of the
    groups that lost their minimum). Once it had sent its write, the statements from its write on
    are those from the write of the logged run (`sent`) on. Either path's write is the logged
    run's (the same target and kind: a refresh's, not a rebuild's)."""
    [(when, k)] = hook.items()
    if k == "write":
        assert any(is_write(s) for s in ran), ("no write was sent before the kill", ran[-3:])
        return
    wrote = next((i for i, s in enumerate(ran) if is_write(s)), None)
    logged_write = next(i for i, s in enumerate(sent) if is_write(s))
    ours, path = (ran, repaired) if wrote is None else (ran[wrote:], sent[logged_write:])
    kind = shape if wrote is None else unreleased
    diverged = next((i for i, (a, b) in enumerate(zip(ours, path, strict=False), 1) if kind(a) != kind(b)), None)
    at = (diverged or len(ours)) - 1
    assert len(ran) == int(k) and len(ours) <= len(path) and diverged is None, (
        f"{when}={k}: the killed run sent {len(ran)} statements, its path left the "
        f"{'next' if wrote is None else 'logged'} run's at {diverged} (of {len(ours)})",
        *([f"killed run: {kind(ours[at])}", f"its path: {kind(path[at])}"] if ours and at < len(path) else []),
    )
    path_write = next((s for s in path if is_write(s)), "")
    assert unreleased(path_write) == unreleased(sent[logged_write]), (when, k, shape(path_write))


def unreleased(statement: str) -> str:
    """`statement`'s shape without the releases of cached tables (`DROP VIEW`) a write's script
    ends with: which tables a refresh cached depends on its path."""
    said = shape(statement)
    if not said.startswith("BEGIN "):
        return said
    return "; ".join(p for p in said.removesuffix(" END").split("; ") if not p.startswith("DROP VIEW "))


def dbt_process(project, name: str | None, profiles: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """`dbt run` of one model (None: every model) in its own process, with the fault hook's `env`
    (`profiles`: the directory of another profiles.yml)."""
    dbt = Path(sys.executable).with_name("dbt")
    args = [str(dbt), "run", *(["-s", name] if name else []), "--project-dir", str(project.project_root)]
    args += ["--profiles-dir", str(profiles or project.profiles_dir)]
    return subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


def outcomes(failed: list[str], case: str, run: Callable[[], str], name: str) -> str:
    """`run`'s outcome, or its failure, added to `failed`: the matrix goes on from model `name`
    rebuilt."""
    try:
        return run()
    except AssertionError as e:
        failed.append(f"{case}: {str(e)[:1500]}")
        run_dbt(["run", "-s", name, "--full-refresh"], expect_pass=None)
        return f"FAILED {str(e)[:1500]}"


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
        """The statements one refresh of `name` sends (it refreshes round n's changes, one round's as
        each case's: the model caught up first, since an earlier model's cases moved its sources
        by many commits, which a refresh reads more of)."""
        log = tmp_path / f"{name}.statements"
        caught_up = dbt_process(project, name)
        assert caught_up.returncode == 0, caught_up.stdout[-3000:]
        self.change(project, n)
        ran = dbt_process(project, name, IVM_FAULT_STATEMENT_LOG=str(log))
        assert ran.returncode == 0 and "refreshed" in ran.stdout, ran.stdout[-3000:]
        return log.read_text().splitlines()

    def killed_then_repaired(self, project, name: str, n: int, sent: list[str], log: Path, **hook: str) -> str:
        """The next run's outcome: its message's first word, `lost the race` when the killed
        run's write landed meanwhile (the run after then catches up). The killed run logs its
        statements to `log`: the kill must have come where `hook` meant it (`sent`: the logged
        run's statements; the next run's go to `log` with suffix `.next`)."""
        self.change(project, n)
        killed = dbt_process(project, name, IVM_FAULT_STATEMENT_LOG=str(log), **hook)
        assert killed.returncode == -9, (hook, killed.stdout[-3000:])
        repair_log = log.with_suffix(".next")
        repaired = dbt_process(project, name, IVM_FAULT_STATEMENT_LOG=str(repair_log))  # a process as the killed run's
        [result] = json.loads((Path(project.project_root) / "target" / "run_results.json").read_text())["results"]
        outcome = str(result["message"]).split(":")[0]
        if repaired.returncode:  # the killed run's write landed meanwhile: this one lost the race
            assert "committed first" in str(result["message"]), result["message"]
            outcome = "lost the race, then " + str(run_dbt(["run", "-s", name])[0].message).split(":")[0]
        assert self.equal_to_its_sql(project, name), (name, hook)
        killed_where_meant(sent, log.read_text().splitlines(), hook, repair_log.read_text().splitlines())
        return outcome

    def test_the_next_run_repairs_a_killed_refresh(self, project, tmp_path):
        run_dbt(["run", *([] if MATRIX else ["-s", "k_join"])])  # the suite kills the join's refresh only
        n = 0
        counted = {}
        failed: list[str] = []
        for name in MATRIX_MODELS if MATRIX else ["k_join"]:
            n += 1
            sent = self.statements(project, name, tmp_path, n) if MATRIX else []
            counted[name] = (len(sent), next((k for k, s in enumerate(sent, 1) if is_write(s)), None))
            kills = [{"IVM_FAULT_KILL_DURING_STATEMENT": "write"}]
            # the last boundaries first: the class's own statements (the first are the same reads
            # in every class), so a matrix stopped early has run the ones that differ
            kills += [{"IVM_FAULT_KILL_AFTER_STATEMENTS": str(k)} for k in range(len(sent), 0, -1)]
            for hook in kills:
                n += 1
                [(when, k)] = hook.items()
                case = f"{name} killed {'during' if 'DURING' in when else 'after'} statement {k}"
                log = tmp_path / f"{name}.{n}.statements"
                repaired = partial(self.killed_then_repaired, project, name, n, sent, log, **hook)
                started = time.monotonic()
                said = outcomes(failed, case, repaired, name)
                print(f"\n{case}: {said} ({time.monotonic() - started:.0f} s)", flush=True)
        print(f"\nstatements per refresh (count, the write's index): {counted}")
        assert not failed, failed

    def profiles(self, project, tmp_path: Path, retries: int) -> Path:
        """A profiles directory: the test's profile with `query_retries: retries`."""
        profiles = yaml.safe_load((Path(project.profiles_dir) / "profiles.yml").read_text())
        for target in profiles["test"]["outputs"].values():
            target["query_retries"] = retries
        (tmp_path / f"retries{retries}").mkdir(exist_ok=True)
        (tmp_path / f"retries{retries}" / "profiles.yml").write_text(yaml.safe_dump(profiles))
        return tmp_path / f"retries{retries}"

    def history(self, project, name: str) -> list[dict[str, object]]:
        with get_connection(project.adapter):
            _, table = project.adapter.execute(f"DESCRIBE HISTORY {project.test_schema}.{name}__ivm", fetch=True)
        return [dict(zip(table.column_names, row, strict=True)) for row in table.rows]

    def marks(self, project, name: str) -> list[Watermark]:
        """The storage's watermarks, oldest first. Every commit of the storage that may change its
        rows carries one, no two the same token (a change set written twice would be a second
        commit of one token, or one without a watermark)."""
        history = self.history(project, name)
        marks = [Watermark.decode(r["userMetadata"], r["version"]) for r in history]  # type: ignore[arg-type]
        unmarked = [r["operation"] for r, m in zip(history, marks, strict=True) if m is None]
        assert all(op in KEEPS_ROWS for op in unmarked), (name, unmarked)
        tokens = [m.token for m in marks if m is not None]
        assert len(tokens) == len(set(tokens)), (name, tokens)
        return [m for m in reversed(marks) if m is not None]

    def cut_then_repaired(self, project, tmp_path: Path, name: str, n: int, fault: str, retries: int) -> str:
        """A refresh of round n's changes with its connection cut during its write, then the next
        run: their outcomes. The cut run settles its write before it answers (`commit.settled`):
        it succeeds exactly when its write committed, no write of it lands later (the next run
        never loses a race to it), and the change set is applied by one commit (a commit that
        settled a write that did not land, the fence, records the state before it)."""
        self.change(project, n)
        before = len(self.marks(project, name))
        hook = {"cut": "IVM_FAULT_CUT_DURING_STATEMENT", "lose": "IVM_FAULT_LOSE_ANSWER_OF_STATEMENT"}[fault]
        cut = dbt_process(project, name, self.profiles(project, tmp_path, retries), **{hook: "write"})
        assert cut.returncode in (0, 1), cut.stdout[-3000:]
        [result] = json.loads((Path(project.project_root) / "target" / "run_results.json").read_text())["results"]
        retried = "re-submitted, " if "Connection lost during query execution (attempt 1/" in cut.stdout else ""
        settled = "landed on its first submission, " if "it landed on its first submission" in cut.stdout else ""
        said = [line.strip() for line in (result["message"] or "").splitlines() if line.strip()]
        outcome = retried + settled + (said[-1].split(". ")[0][:160] if cut.returncode else said[0].split(":")[0])
        marks = self.marks(project, name)
        [its] = marks[before:]  # the cut run's write, or the fence that settled it
        landed = its.sources != marks[before - 1].sources
        assert (cut.returncode == 0) == landed, (name, fault, retries, outcome, its.encode())
        results = run_dbt(["run", "-s", name], expect_pass=None)
        assert str(results[0].status) == "success", (name, fault, retries, outcome, results[0].message)
        outcome += ", then " + str(results[0].message).split(":")[0]
        assert self.equal_to_its_sql(project, name), (name, fault, retries, outcome)
        marks = self.marks(project, name)
        applied = [
            m for m, after in zip(marks[before - 1 :], marks[before:], strict=False) if after.sources != m.sources
        ]
        assert len(applied) == 1, (name, fault, retries, [m.encode() for m in marks[before:]])
        return outcome

    def test_a_connection_cut_during_the_write(self, project, tmp_path):
        """The connection of a refresh cut while its write (the script that sets its watermark
        and idempotent-write pair around its MERGE) runs: whether dbt-spark re-submits it or not,
        the run succeeds exactly when its write landed, the next run succeeds, the view equals its
        SQL and each change set is applied once."""
        names = MATRIX_MODELS if MATRIX else ["k_aggregate"]
        run_dbt(["run", "-s", *names])
        n = 500
        failed: list[str] = []
        for name in names:
            for fault, retries in CUTS:
                n += 1
                case = f"{name} connection {fault}, query_retries {retries}"
                cut = partial(self.cut_then_repaired, project, tmp_path, name, n, fault, retries)
                started = time.monotonic()
                said = outcomes(failed, case, cut, name)
                print(f"\n{case}: {said} ({time.monotonic() - started:.0f} s)", flush=True)
        assert not failed, failed

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
