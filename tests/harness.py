"""Randomized differential harness: random DML on Delta sources, refresh through the engine,
compare every view with its full recompute.

A `Family` is a set of source tables and the views over them. One round applies
random inserts / updates / deletes to one, several or all sources (NULLs in keys,
duplicate rows, tables emptied and refilled, a new row whose only match goes in the same
round; keyed tables get fresh ids and mostly appends, so views with a declared unique key take
the append path), refreshes every view through `dbt_ivm.maintain` on the shared Spark
session, and compares each view with its
definition recomputed at the versions the view consumed, as multisets.
Later view classes plug in by adding a Family.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from dbt_ivm import consistency
from dbt_ivm.catalog import backing_table, parse_describe_extended, read_watermark
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer, Outcome, StoredView, consistency_sql, pinned_model_sql, stored_view
from dbt_ivm.stored_view import stored_upstreams

# Small domains so that joins match, keys collide, and NULLs are common.
KEYS = [0, 1, 2, 3, None]
WORDS = ["a", "b", "c", None]
NUMS = [0.5, 1.0, 2.5, None]
# Doubles with NaN and the infinities: a sum that adds them cannot subtract them again.
SPECIAL = [0.5, 1.0, 2.5, None, 0.5, 1.0, None, float("nan"), float("inf"), float("-inf")]
MONEY = [Decimal("1.25"), Decimal("-3.10"), Decimal("7.05"), Decimal("0.00"), None]
# Text that an INT join key compares as a number: '1' and '01' are distinct strings, one key.
# Many spellings of few numbers: stored values rarely repeat, the numbers they cast to often do.
CODES = [*("0" * zeros + str(n) for n in range(4) for zeros in range(30)), None]


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, int | string | double | decimal(10,2))
    key: str | None = None  # a column of fresh unique ids: never updated, never duplicated


@dataclass(frozen=True)
class View:
    name: str
    sql: str  # with {db} for the database
    unique_key: tuple[str, ...] = ()
    aggregated: bool = False
    cluster_by: tuple[str, ...] = ()  # its builds sort and group the rows (`layout.clustered`)


@dataclass(frozen=True)
class Family:
    name: str
    tables: tuple[Table, ...]
    views: tuple[View, ...]
    # table -> chance it changes in a round (at least one does); None: one, several, all or none
    odds: tuple[tuple[str, float], ...] | None = None
    # rows a round deleted may come back in a later round (an outer join's last match, re-inserted)
    restores: bool = False
    # the odds that a changed table's new row joins another changed table's orphan, which goes in
    # the same round (`Harness.adopt`)
    adopts: float = 0.0


@dataclass
class Mismatch:
    round: int
    view: str
    changed: list[str]
    diff: list[Any]
    statements: list[str]


@dataclass
class Report:
    family: str
    rounds: int = 0
    view_checks: int = 0
    refreshes: int = 0
    no_change: int = 0
    unchanged: int = 0  # checks of views none of whose sources changed: "no changes", not compared again
    builds: int = 0
    appends: int = 0  # refreshes that took the append path
    mismatches: list[Mismatch] = field(default_factory=list)
    multi_source_rounds: int = 0
    flips: int = 0  # outer joins: refreshes that flipped padded rows by a unique key
    compensations: int = 0  # and those that compensated them by the general algorithm
    counted: int = 0  # and those that compensated them by counting matches (`_Term._counted`)
    adoptions: int = 0  # new rows whose only match went in the same round
    by_view: dict[str, int] = field(default_factory=dict)  # view -> its refreshes (each compared: `check`)

    def checked(self) -> str:
        """The refreshes compared with a recompute, in all and per view (a refresh of a view whose
        sources did not change is a mismatch by itself: `Harness.check`)."""
        views = ", ".join(f"{v} {n}" for v, n in sorted(self.by_view.items()))
        return f"{self.family}: {self.refreshes} checked refreshes ({views})"

    def summary(self) -> str:
        outer = (
            f", {self.flips} with a unique-key flip, {self.compensations} with NS-compensation, "
            f"{self.counted} with counted NS-compensation"
        ) * bool(self.flips or self.compensations or self.counted)
        adopted = f", {self.adoptions} adopted orphans" * bool(self.adoptions)
        return (
            f"{self.family}: {self.rounds} rounds, {self.view_checks} view checks "
            f"({self.refreshes} refreshes, {self.appends} by the append path, {self.no_change} without changes, "
            f"{self.unchanged} of them over unchanged sources, "
            f"{self.builds} builds{outer}), "
            f"{self.multi_source_rounds} rounds changed several sources{adopted}, "
            f"{len(self.mismatches)} mismatches"
        )


def literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, Decimal):
        return f"{value}BD"
    if isinstance(value, float) and value != value:
        return "double('NaN')"
    if isinstance(value, float) and abs(value) == float("inf"):
        return f"double('{'-' if value < 0 else ''}Infinity')"
    return repr(value)


def domain(kind: str) -> list[Any]:
    kinds = {"int": KEYS, "string": WORDS, "double": NUMS, "decimal(10,2)": MONEY, "double special": SPECIAL}
    return (kinds | {"string codes": CODES} | NEAR_LIMITS | EDGES)[kind]


class Harness:
    def __init__(self, spark: Any, db: Any, family: Family, seed: int, database: str | None = None, threads: int = 3):
        self.spark = spark
        self.db = db
        self.family = family
        self.rng = random.Random(seed)
        self.database = database or f"h_{family.name}_{seed}"
        self.report = Report(family.name)
        self.threads = threads
        self.lock = threading.Lock()
        self.next_id = 0
        self.removed: dict[str, list[tuple]] = {}  # the rows each table's last delete removed
        # orphans (see `random_rows`) draw from their own generator: the other draws stay as without them
        self.orphan_rng = random.Random(f"orphans {seed}")
        self.orphans: dict[Table, int] = {}  # the key of each table's last orphan
        self.orphan_key = 0  # the last one, counted down
        # view -> whether its rows differed from the recompute when last compared (what it still
        # holds: a view is compared again once it writes anything, see `check`)
        self.compared: dict[str, bool] = {}
        self.globals: dict[str, bool] = {}  # view -> whether it is a global aggregate (`global_row`)
        self.branches: dict[str, list[str]] = {}  # view -> a set operation's count columns (`bad_counts`)
        # Asked once per view: the harness changes rows, never a schema. View -> the fast_mvs
        # among its sources (`stored_upstreams`); view -> its column types (`agree`).
        self.chained: dict[str, dict[str, Any]] = {}
        self.columns: dict[str, dict[str, str]] = {}
        self.recorded: dict[str, StoredView] = {}  # view -> what its build recorded (`stored`)
        self.model_sqls: dict[str, str] = {}  # view -> the pinned model SQL its last compare ran

    # -- set up ------------------------------------------------------------------------

    def sql(self, text: str) -> list[Any]:
        return self.spark.sql(text).collect()

    def qualified(self, table: str) -> str:
        return f"`{self.database}`.`{table}`"

    def setup(self) -> None:
        self.sql(f"DROP DATABASE IF EXISTS `{self.database}` CASCADE")
        self.sql(f"CREATE DATABASE `{self.database}`")
        for t in self.family.tables:
            cols = ", ".join(f"`{c}` {k.split()[0]}" for c, k in t.columns)
            self.sql(
                f"CREATE TABLE {self.qualified(t.name)} ({cols}) USING DELTA "
                "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
            )
            rows = self.random_rows(t, self.rng.choice([0, 3, 5, 8]))
            if rows:
                self.insert(t, rows)
        for level in levels(self.family.views):
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                list(pool.map(self.materialize, level))

    def random_row(self, t: Table) -> tuple:
        return tuple(self.fresh_id() if c == t.key else self.rng.choice(domain(k)) for c, k in t.columns)

    def random_rows(self, t: Table, n: int) -> list[tuple]:
        """`n` random rows; where the family adopts, one more: an orphan, whose int columns all hold
        a fresh key (negative: no other row's), so it joins no other table's row yet."""
        rows = [self.random_row(t) for _ in range(n)]
        if rows and self.family.adopts:
            self.orphan_key -= 1
            self.orphans[t] = self.orphan_key
            rows.append(self.keyed_row(t, self.orphan_key))
        return rows

    def keyed_row(self, t: Table, key: int) -> tuple:
        return tuple(key if kind == "int" else self.orphan_rng.choice(domain(kind)) for _, kind in t.columns)

    def fresh_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def insert(self, t: Table, rows: list[tuple]) -> None:
        values = ", ".join("(" + ", ".join(literal(v) for v in r) + ")" for r in rows)
        self.sql(f"INSERT INTO {self.qualified(t.name)} VALUES {values}")

    # -- one round -----------------------------------------------------------------------

    def predicate(self, t: Table) -> str:
        col, kind = self.rng.choice([c for c in t.columns if c[0] != t.key])
        value = self.rng.choice(domain(kind))
        if value is None:
            return f"`{col}` IS NULL"
        return f"`{col}` {self.rng.choice(['=', '=', '<>', '<'])} {literal(value)}"

    def mutate(self, t: Table) -> None:
        """1-3 random statements on one table: each its own Delta commit."""
        for _ in range(self.rng.randint(1, 3)):
            ops = ["insert", "dup", "update", "delete", "noop_update", "wipe", "restore"]
            weights = [12, 0, 3, 2, 1, 0.3] if t.key else [5, 2, 4, 3, 1, 0.3]
            op = self.rng.choices(ops, weights=[*weights, 3 if self.removed.get(t.name) else 0])[0]
            target = self.qualified(t.name)
            if op in ("delete", "wipe") and self.family.restores:
                where = self.predicate(t) if op == "delete" else "TRUE"
                self.removed[t.name] = [tuple(r) for r in self.sql(f"SELECT * FROM {target} WHERE {where}")]
                self.sql(f"DELETE FROM {target} WHERE {where}")
                continue
            if op == "insert":
                self.insert(t, self.random_rows(t, self.rng.randint(1, 4)))
            elif op == "dup":  # duplicate existing rows: bag semantics
                self.sql(f"INSERT INTO {target} SELECT * FROM {target} WHERE {self.predicate(t)}")
            elif op == "update":
                col, kind = self.rng.choice([c for c in t.columns if c[0] != t.key])
                self.sql(
                    f"UPDATE {target} SET `{col}` = {literal(self.rng.choice(domain(kind)))} WHERE {self.predicate(t)}"
                )
            elif op == "noop_update":  # pre and post images equal
                col, _ = self.rng.choice(t.columns)
                self.sql(f"UPDATE {target} SET `{col}` = `{col}` WHERE {self.predicate(t)}")
            elif op == "delete":
                self.sql(f"DELETE FROM {target} WHERE {self.predicate(t)}")
            elif op == "restore":  # what an earlier delete removed comes back: first matches again
                self.insert(t, self.removed.pop(t.name))
            else:
                self.sql(f"DELETE FROM {target}")

    def adopt(self, changed: list[Table]) -> None:
        """Each changed table may take a new row with the key of another changed table's orphan, which
        goes: where the new row's table comes first in a join, its term joins the new row to the
        orphan as it was and the other's term removes that match, so a new group's only match is
        added and removed by different terms (an outer join leaves the group its padded row: a SUM
        over no value, NULL)."""
        for t in changed:
            others = [o for o in changed if o != t and o in self.orphans]
            if not others or self.orphan_rng.random() >= self.family.adopts:
                continue
            other = self.orphan_rng.choice(others)
            key = self.orphans.pop(other)
            self.insert(t, [self.keyed_row(t, key)])
            matches = " OR ".join(f"`{c}` = {key}" for c, kind in other.columns if kind == "int")
            self.sql(f"DELETE FROM {self.qualified(other.name)} WHERE {matches}")
            self.report.adoptions += 1

    def round(self, number: int) -> None:
        tables = list(self.family.tables)
        how = (
            "odds" if self.family.odds else self.rng.choices(["one", "several", "all", "none"], weights=[4, 3, 2, 1])[0]
        )
        if how == "odds":
            odds = dict(self.family.odds or ())
            changed = [t for t in tables if self.rng.random() < odds[t.name]] or [self.rng.choice(tables)]
        elif how == "one":
            changed = [self.rng.choice(tables)]
        elif how == "several":
            changed = self.rng.sample(tables, self.rng.randint(1, len(tables)))
        elif how == "all":
            changed = tables
        else:
            changed = []
        self.adopt(changed)  # first: each orphan adopted was there at the last refresh
        for t in changed:
            self.mutate(t)
        if len(changed) > 1:
            self.report.multi_source_rounds += 1
        # The views refresh and are checked concurrently (one session, as dbt's threads share it):
        # the sources do not change meanwhile, and each view writes only its own storage.
        touched = {t.name for t in changed}
        views = self.family.views
        tables = {v.name: reached(v, views) for v in views}
        checks: dict[str, tuple[list[str], list[Any]]] = {}
        for level in levels(views):  # a chain's levels in order, as dbt runs them; each level's views at once
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                found = list(pool.map(lambda v: self.check(v, bool(touched & tables[v.name])), level))
            checks.update({v.name: c for v, c in zip(level, found, strict=True)})
        for v in views:
            statements, diff = checks[v.name]
            self.report.view_checks += 1
            if diff:
                self.report.mismatches.append(Mismatch(number, v.name, [t.name for t in changed], diff, statements))
        self.report.rounds += 1

    def check(self, v: View, changed: bool) -> tuple[list[str], list[Any]]:
        """Refresh `v`, then compare it with its recompute: (the refresh's statements, differences).

        A view none of whose sources changed since it was last compared must refresh to "no
        changes", and is then as it was compared: it is not compared again."""
        statements, outcome = self.materialize(v)
        if not changed and v.name in self.compared:
            if outcome.action == "no changes":
                with self.lock:
                    self.report.unchanged += 1
                return statements, []
            with self.lock:
                del self.compared[v.name]
                self.model_sqls.pop(v.name, None)
            return statements, [("refreshed without a change to its sources", outcome.action, outcome.message)]
        return statements, self.compare(v, dict(outcome.versions))

    def materialize(self, v: View) -> tuple[list[str], Outcome]:
        m = Maintainer(
            self.db,
            TableName(self.database, v.name),
            v.sql.format(db=f"`{self.database}`"),
            unique_key=v.unique_key or None,
            cluster_by=v.cluster_by or None,
            refresh_policy="incremental",  # `auto` would rebuild views this small: the refresh is under test
            change_feed=any(v.name in sources(w) for w in self.family.views),  # another view reads it
        )
        outcome = m.materialize()
        with self.lock:
            self.count(outcome, m.statements)
            if outcome.action == "refreshed":
                self.report.by_view[v.name] = self.report.by_view.get(v.name, 0) + 1
        return list(m.statements), outcome

    def count(self, outcome: Outcome, statements: list[str]) -> None:
        self.report.appends += outcome.path == "append"
        # the change set, and the levels of nested outer joins cached for it (`classes.stager`)
        deltas = [s for s in statements if s.startswith(("CACHE TABLE `__ivm_delta", "CACHE TABLE `__ivm_level"))]
        self.report.flips += any("__ivm_flow" in s for s in deltas)
        self.report.compensations += any("-1 AS `__ivm_d`" in s for s in deltas)  # X's rows unmatched before
        self.report.counted += any("`__ivm_dn`" in s for s in deltas)  # the change's own matches per key
        if outcome.action == "built":
            self.report.builds += 1
        elif outcome.action == "refreshed":
            self.report.refreshes += 1
        else:
            self.report.no_change += 1

    def compare(self, v: View, pinned: dict[str, int]) -> list[Any]:
        """Rows where the view and its recompute differ (`rows_differing`), plus hidden-state checks."""
        view = TableName(self.database, v.name)
        stored = self.stored(view)
        diff = self.rows_differing(view, stored)
        with self.lock:
            self.compared[v.name] = bool(diff)
        floor = "< 0" if self.global_row(v) else "<= 0"  # a global aggregate keeps its one row at count 0
        bad = self.sql(f"SELECT count(*) FROM {backing_table(view).sql()} WHERE {self.bad_counts(v, floor)}")[0][0]
        if bad:
            diff.append(("non-positive counts", bad))
        if dict(stored.mark.sources) != pinned:
            diff.append(("watermark", dict(stored.mark.sources), pinned))
        return diff

    def stored(self, view: TableName) -> StoredView:
        """`stored_view`, its recorded definition read once (the harness never changes a view's
        SQL) and its watermark each time."""
        if view.name not in self.recorded:
            self.recorded[view.name] = stored_view(self.db, view)
            return self.recorded[view.name]
        mark = read_watermark(self.db, backing_table(view))
        assert mark is not None, f"{view} lost its watermark"
        return dataclasses.replace(self.recorded[view.name], mark=mark)

    def rows_differing(self, view: TableName, stored: StoredView) -> list[Any]:
        """`multiset_diff` of the view and the model's SQL run on the sources as of the watermark
        (the harness makes no change during a refresh, so that is also their current state). Both
        are read into Python and compared there: an oracle of its own, cheaper than the
        consistency test's query (`agree` checks that query against it)."""
        if view.name not in self.chained:
            self.chained[view.name] = stored_upstreams(self.db, stored)
        model_sql = pinned_model_sql(self.db, stored, self.chained[view.name])
        with self.lock:
            self.model_sqls[view.name] = model_sql
        model = self.spark.sql(model_sql)
        floats = [i for i, f in enumerate(model.schema.fields) if f.dataType.typeName() in consistency.FLOAT_TYPES]
        return multiset_diff(self.sql(f"SELECT * FROM {view.sql()}"), model.collect(), floats)

    def bad_counts(self, v: View, floor: str) -> str:
        """The predicate of a stored row whose count is wrong: `__ivm_count <floor>`, or for a set
        operation (one count per branch, `__ivm_c<i>`) a negative count or none positive."""
        if v.name not in self.branches:
            backing = backing_table(TableName(self.database, v.name)).sql()
            names = [r[0] for r in self.sql(f"DESCRIBE {backing}")]
            self.branches[v.name] = [n for n in names if re.fullmatch(r"__ivm_c[0-9]+", n)]
        counts = ", ".join(self.branches[v.name])
        return f"least({counts}) < 0 OR greatest({counts}) = 0" if counts else f"__ivm_count {floor}"

    def global_row(self, v: View) -> bool:
        """Whether `v` is a global aggregate (its storage has no group column): asked once."""
        if v.name not in self.globals:
            backing = backing_table(TableName(self.database, v.name)).sql()
            self.globals[v.name] = v.aggregated and "__ivm_g_0" not in {r[0] for r in self.sql(f"DESCRIBE {backing}")}
        return self.globals[v.name]

    def agree(self, v: View) -> list[Any]:
        """The consistency test's query (`consistency_sql`, what `fast_mv_consistent` runs) finds
        differences where `rows_differing` does, and none where it does not: where it did when
        the view was last compared, if it was (the view and its sources are as they were then)."""
        view = TableName(self.database, v.name)
        found = self.sql(self.consistency_sql(view))
        differs = self.compared.get(v.name)
        if differs is None:
            differs = bool(self.rows_differing(view, stored_view(self.db, view)))
        if bool(found) == differs:
            return []
        return [("the consistency test disagrees", [tuple(r) for r in found])]

    def consistency_sql(self, view: TableName) -> str:
        """The consistency test's query (`maintain.consistency_sql`); for a view compared before,
        built by the same function from what that compare read, the model's pinned SQL (the view
        and its sources are as they were then, see `agree`): no metadata read again."""
        model_sql = self.model_sqls.get(view.name)
        if model_sql is None:
            return consistency_sql(self.db, view)
        if view.name not in self.columns:
            self.columns[view.name] = parse_describe_extended(self.db.query(f"DESCRIBE TABLE {view.sql()}"))[0]
        return consistency.consistency_sql(view, model_sql, self.columns[view.name])

    def run(self, rounds: int, deadline: float | None = None, progress: bool = False) -> Report:
        """`rounds` rounds, or fewer if the wall clock passes `deadline` (time.time())."""
        import time

        self.setup()
        for i in range(rounds):
            if deadline is not None and time.time() > deadline:
                break
            self.round(i)
            if progress:
                print(f"  [{time.strftime('%H:%M:%S')}] {self.report.summary()}", flush=True)
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            disagreements = list(pool.map(self.agree, self.family.views))
        for v, diff in zip(self.family.views, disagreements, strict=True):
            if diff:
                self.report.mismatches.append(Mismatch(self.report.rounds, v.name, [], diff, []))
        return self.report

    def drop(self) -> None:
        self.sql(f"DROP DATABASE IF EXISTS `{self.database}` CASCADE")


def sources(v: View) -> set[str]:
    """The tables and views `v` reads."""
    return set(re.findall(r"\{db\}\.(\w+)", v.sql))


def reached(v: View, views: tuple[View, ...]) -> set[str]:
    """The tables `v` reads, directly or through the family's views it reads (a chain)."""
    by_name = {w.name: w for w in views}
    found = set()
    for name in sources(v):
        found |= reached(by_name[name], views) if name in by_name else {name}
    return found


def levels(views: tuple[View, ...]) -> list[list[View]]:
    """The views in dbt's order: each level reads only tables and the levels before it."""
    done: set[str] = set()
    names = {v.name for v in views}
    out = []
    while len(done) < len(views):
        level = [v for v in views if v.name not in done and (sources(v) & names) <= done]
        assert level, "a cycle of views"
        out.append(level)
        done |= {v.name for v in level}
    return out


def multiset_diff(view: list[Any], model: list[Any], floats: list[int]) -> list[Any]:
    """Rows in one multiset and not the other, as the consistency test defines it (`render.
    consistency_sql`): NULLs equal, duplicates counted; rows equal on their other columns pair
    the n-th smallest floats with the n-th smallest, and a pair differs when a float differs by
    more than `consistency.FLOAT_TOLERANCE` relative to the larger. NaN and the infinities equal
    only themselves."""
    groups: dict[tuple, tuple[list[tuple], list[tuple]]] = {}
    for side, rows in enumerate((view, model)):
        for row in rows:
            values = tuple(hashable(x) for x in row)
            exact = tuple(x for i, x in enumerate(values) if i not in floats)
            groups.setdefault(exact, ([], []))[side].append(values)
    diff: list[Any] = []
    for v_rows, m_rows in groups.values():
        for rows in (v_rows, m_rows):
            rows.sort(key=lambda r: [float_order(r[i]) for i in floats])
        for i in range(max(len(v_rows), len(m_rows))):
            if i >= len(v_rows):
                diff.append(("missing from the view", *m_rows[i]))
            elif i >= len(m_rows):
                diff.append(("extra in the view", *v_rows[i]))
            elif not all(close(v_rows[i][f], m_rows[i][f]) for f in floats):
                diff.append(("differs beyond the float tolerance", v_rows[i], m_rows[i]))
    return diff


def hashable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(hashable(x) for x in value)
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(x)) for k, x in value.items()))
    return value


def float_order(x: float | None) -> tuple:
    """Spark's ascending order of a double: NULL first, NaN last."""
    return (0, 0.0) if x is None else (2, 0.0) if math.isnan(x) else (1, x)


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= consistency.FLOAT_TOLERANCE * max(abs(a), abs(b), consistency.FLOAT_FLOOR)


# -- the families under test ---------------------------------------------------------------

T = Table("t", (("k", "int"), ("v", "string"), ("x", "double")))
SINGLE = Family(
    "single",
    (T,),
    (
        View("s_filter", "SELECT k, v, x * 2 AS x2 FROM {db}.t WHERE v IS NOT NULL OR k > 1", cluster_by=("k",)),
        View("s_computed", "SELECT k, coalesce(v, 'none') AS v2, x + k AS s, upper(v) AS u FROM {db}.t WHERE x > 0.7"),
        View("s_star", "SELECT * FROM {db}.t"),
        View("s_project", "SELECT k FROM {db}.t WHERE k IS NULL OR v = 'a'"),
    ),
)

A = Table("a", (("k", "int"), ("j", "int"), ("v", "string"), ("x", "double")))
B = Table("b", (("k", "int"), ("j", "int"), ("w", "string"), ("y", "double")))
C = Table("c", (("j", "int"), ("z", "string")))
D = Table("d", (("j", "int"), ("k", "int"), ("u", "string")))
E = Table("e", (("k", "int"), ("t", "string")))
JOINS = Family(
    "joins",
    (A, B, C, D, E),
    (
        View("j_two", "SELECT a.k, a.v, b.w FROM {db}.a JOIN {db}.b ON a.k = b.k", cluster_by=("v", "k")),
        View("j_three", "SELECT a.v, b.w, c.z FROM {db}.a a JOIN {db}.b b ON a.k = b.k JOIN {db}.c c ON b.j = c.j"),
        View(
            "j_five",
            "SELECT a.v, b.w, c.z, d.u, e.t FROM {db}.a a JOIN {db}.b b ON a.k = b.k "
            "JOIN {db}.c c ON b.j = c.j JOIN {db}.d d ON c.j = d.j JOIN {db}.e e ON d.k = e.k",
        ),
        View("j_self", "SELECT a1.k, a1.v AS v1, a2.v AS v2 FROM {db}.a a1 JOIN {db}.a a2 ON a1.k = a2.j"),
        View(
            "j_self3",
            "SELECT a1.v AS v1, a2.v AS v2, a3.x FROM {db}.a a1 JOIN {db}.a a2 ON a1.j = a2.k "
            "JOIN {db}.a a3 ON a2.j = a3.k",
        ),
        View("j_nonequi", "SELECT a.k, b.k AS bk, a.x, b.y FROM {db}.a JOIN {db}.b ON a.x < b.y"),
        View("j_comma", "SELECT a.k, b.w, a.x + b.y AS s FROM {db}.a, {db}.b WHERE a.k = b.k AND b.w IS NOT NULL"),
        View("j_nullsafe", "SELECT a.v, b.w FROM {db}.a JOIN {db}.b ON a.k <=> b.k AND a.j <=> b.j"),
        View("j_cross", "SELECT a.v, e.t FROM {db}.a CROSS JOIN {db}.e WHERE a.k = 1"),
    ),
)

# Keyed sources (fresh ids, mostly appends) under views that declare a unique key, and one that
# does not.
F = Table("f", (("id", "int"), ("k", "int"), ("v", "string")), key="id")
G = Table("g", (("gid", "int"), ("k", "int"), ("w", "string")), key="gid")
KEYED = Family(
    "keyed",
    (F, G),
    (
        View("k_single", "SELECT id, k, upper(v) AS u FROM {db}.f WHERE v IS NOT NULL OR k > 1", ("id",)),
        View("k_join", "SELECT f.id, g.gid, f.v, g.w FROM {db}.f f JOIN {db}.g g ON f.k = g.k", ("id", "gid")),
        # no declared key: appends above the stored ids skip the probe (the watermark's highs)
        View("k_join_undeclared", "SELECT f.id, f.v, g.w FROM {db}.f f JOIN {db}.g g ON f.k = g.k"),
        View(
            "k_self",
            "SELECT f1.id AS id1, f2.id AS id2, f2.v FROM {db}.f f1 JOIN {db}.f f2 ON f1.k = f2.k",
            ("id1", "id2"),
        ),
    ),
)

# Aggregate views: grouped and global, NULL keys and values, DECIMAL and DOUBLE, HAVING, DISTINCT,
# aggregates without a rule, over one source, a self-join and 2- and 3-way joins.
P = Table("p", (("k", "int"), ("g", "string"), ("x", "double special"), ("m", "decimal(10,2)")))
Q = Table("q", (("k", "int"), ("w", "string")))
R = Table("r", (("w", "string"), ("z", "int")))


def _agg(name: str, sql: str) -> View:
    return View(name, sql, aggregated=True)


AGGREGATES = Family(
    "aggregates",
    (P, Q, R),
    (
        _agg(
            "a_all",
            "SELECT g, count(*) AS n, count(x) AS cx, sum(x) AS sx, avg(x) AS ax, min(x) AS lo, max(x) AS hi "
            "FROM {db}.p GROUP BY g",
        ),
        _agg("a_decimal", "SELECT k, sum(m) AS sm, avg(m) AS am, min(m) AS lo, max(m) AS hi FROM {db}.p GROUP BY k"),
        _agg("a_global", "SELECT count(*) AS n, sum(m) AS s, avg(x) AS a, min(g) AS lo, max(k) AS hi FROM {db}.p"),
        _agg("a_global_where", "SELECT count(*) AS n, max(x) AS hi, sum(k) AS s FROM {db}.p WHERE k > 2"),
        _agg("a_having", "SELECT g, sum(k) AS s FROM {db}.p GROUP BY g HAVING count(*) > 1 AND min(k) >= 0"),
        _agg("a_distinct", "SELECT DISTINCT g, k FROM {db}.p"),
        _agg(
            "a_expressions",
            "SELECT coalesce(g, 'none') AS gg, k % 2 AS parity, sum(x) / count(*) AS ratio, round(avg(m), 1) AS r "
            "FROM {db}.p GROUP BY coalesce(g, 'none'), k % 2",
        ),
        _agg("a_no_rule", "SELECT k, count(DISTINCT g) AS dg, stddev(x) AS sd FROM {db}.p GROUP BY k"),
        _agg(
            "a_join",
            "SELECT q.w, count(*) AS n, sum(p.m) AS s, max(p.x) AS hi FROM {db}.p p JOIN {db}.q q ON p.k = q.k "
            "GROUP BY q.w",
        ),
        _agg(
            "a_join3",
            "SELECT r.z, count(*) AS n, min(p.g) AS lo, sum(p.k) AS s FROM {db}.p p JOIN {db}.q q ON p.k = q.k "
            "JOIN {db}.r r ON q.w = r.w GROUP BY r.z",
        ),
        _agg("a_key_not_shown", "SELECT sum(x) AS sx, count(*) AS n FROM {db}.p GROUP BY g"),
        _agg(
            "a_global_no_rule",
            "SELECT count(DISTINCT p.k) AS dk, variance(p.x) AS v FROM {db}.p p JOIN {db}.q q ON p.k = q.k",
        ),
        _agg("a_self", "SELECT p1.g, count(*) AS n FROM {db}.p p1 JOIN {db}.p p2 ON p1.k = p2.k GROUP BY p1.g"),
    ),
    odds=(("p", 0.85), ("q", 0.35), ("r", 0.35)),  # most views read p alone: change it most rounds
)

# Outer-join views: the seeds' examples (Oracle's outer/inner pair with duplicates; Nica's V2, V3,
# V4 and a V1-like tree of full joins over inner-join groups), LEFT, RIGHT and FULL, three levels
# of nesting, a parenthesized join on the null-supplied side, NULL keys, NULL-tolerant and
# non-equi conditions, a self-join, the anti-join pattern and aggregates over outer joins.
OR = Table("r", (("k", "int"), ("j", "int"), ("v", "string")))
OS = Table("s", (("k", "int"), ("j", "int"), ("w", "string")))
OT = Table("t", (("j", "int"), ("z", "string")))
OU = Table("u", (("k", "int"), ("u", "string")))
ON = Table("n", (("id", "int"), ("w", "string")), key="id")  # unique ids: the unique-key flip
OUTER = Family(
    "outer",
    (OR, OS, OT, OU, ON),
    (
        View("o_left", "SELECT r.k, r.v, s.w FROM {db}.r r LEFT JOIN {db}.s s ON r.k = s.k", cluster_by=("w",)),
        # ON parenthesized: each conjunct counts (`render.conjuncts`), the `<` too
        View("o_right", "SELECT r.v, s.k, s.w FROM {db}.r r RIGHT JOIN {db}.s s ON (r.k = s.k AND r.j < s.j)"),
        View("o_full", "SELECT r.k AS rk, s.k AS sk, r.v, s.w FROM {db}.r r FULL JOIN {db}.s s ON r.k = s.k"),
        View(
            "o_v4",  # Nica's V4: (R LEFT JOIN (S JOIN T)) JOIN U
            "SELECT r.v, s.w, t.z, u.u FROM {db}.r r LEFT JOIN ({db}.s s JOIN {db}.t t ON s.j = t.j) "
            "ON r.k = s.k JOIN {db}.u u ON r.k = u.k",
        ),
        View(
            "o_paren",
            "SELECT r.k, r.v, s.w, t.z FROM {db}.r r LEFT JOIN ({db}.s s JOIN {db}.t t ON s.j = t.j) ON s.k = r.k",
        ),
        View(
            "o_v2",  # Nica's V2: (R LEFT JOIN T) FULL JOIN S, the full join's ON on the padded T
            "SELECT r.v, t.z, s.w FROM {db}.r r LEFT JOIN {db}.t t ON r.j = t.j FULL JOIN {db}.s s ON t.j = s.j",
        ),
        View(
            "o_v3",  # Nica's V3: (R FULL JOIN T) FULL JOIN S
            "SELECT r.k, t.z, s.w FROM {db}.r r FULL JOIN {db}.t t ON r.j = t.j FULL JOIN {db}.s s ON t.j = s.j",
        ),
        View(
            "o_three_levels",
            "SELECT r.v, s.w, t.z, u.u FROM {db}.r r LEFT JOIN {db}.s s ON r.k = s.k "
            "LEFT JOIN {db}.t t ON s.j = t.j LEFT JOIN {db}.u u ON t.z = u.u",
        ),
        View(
            "o_tolerant",  # an ORM's NULL-tolerant condition (Nica)
            "SELECT r.v, s.w, coalesce(s.j, -1) AS sj FROM {db}.r r LEFT JOIN {db}.s s "
            "ON r.k = s.k OR (r.k IS NULL AND s.k IS NULL)",
        ),
        View("o_keyed", "SELECT r.k, r.v, n.w FROM {db}.r r LEFT JOIN {db}.n n ON n.id = r.j AND n.w <> 'c'"),
        View("o_self", "SELECT r1.k, r1.v, r2.v AS v2 FROM {db}.r r1 LEFT JOIN {db}.r r2 ON r1.k = r2.j"),
        View("o_anti", "SELECT r.k, r.v FROM {db}.r r LEFT JOIN {db}.s s ON r.k = s.k WHERE s.k IS NULL"),
        View(
            "o_v1",  # a V1-like tree: (R JOIN U) FULL JOIN (S LEFT JOIN T)
            "SELECT r.v, u.u, s.w, t.z FROM {db}.r r JOIN {db}.u u ON r.k = u.k "
            "FULL JOIN ({db}.s s LEFT JOIN {db}.t t ON s.j = t.j) ON r.j = s.j",
        ),
        _agg(
            "o_agg_left",
            "SELECT r.k, count(*) AS n, count(s.k) AS matched, sum(s.j) AS sj, max(s.w) AS hi "
            "FROM {db}.r r LEFT JOIN {db}.s s ON r.k = s.k GROUP BY r.k",
        ),
        _agg(
            "o_agg_full",
            "SELECT count(*) AS n, count(r.v) AS rv, count(s.w) AS sw, min(t.z) AS lo "
            "FROM {db}.r r FULL JOIN {db}.s s ON r.k = s.k LEFT JOIN {db}.t t ON s.j = t.j "
            "LEFT JOIN {db}.u u ON s.j = 1",  # u: no column read, only its rows' number
        ),
    ),
    restores=True,
    adopts=0.2,
)


# Subqueries and CTEs merged into the query as dbt projects write them: a point-in-time join to a
# range by BETWEEN, dbt_utils' surrogate key (nested calls) in a CTE, dbt's inlined ephemeral model
# (a filtered `__dbt__cte__` CTE) on a LEFT JOIN's null-supplied side, a merged boolean projection
# read inside another predicate.
SURROGATE_KEY = (
    "md5(cast(concat(coalesce(cast(k AS string), '_dbt_utils_surrogate_key_null_'), '-', "
    "coalesce(cast(v AS string), '_dbt_utils_surrogate_key_null_')) AS string))"
)
MERGED = Family(
    "merged",
    (OR, OS),
    (
        View(
            "m_between", "SELECT r.k, r.v, s.w FROM {db}.r r JOIN {db}.s s ON r.k = s.k AND r.j BETWEEN s.j AND s.j + 1"
        ),
        View(
            "m_between_left",
            "SELECT r.k, r.j, s.w FROM {db}.r r LEFT JOIN {db}.s s "
            "ON r.k = s.k AND r.j BETWEEN s.j - 1 AND s.j AND s.w IS NOT NULL",
        ),
        View(
            "m_surrogate_key",
            f"WITH keyed AS (SELECT {SURROGATE_KEY} AS sk, k, upper(upper(v)) AS uv FROM {{db}}.r WHERE j IS NOT NULL) "
            "SELECT keyed.sk, keyed.uv, s.w FROM keyed JOIN {db}.s s ON keyed.k = s.k",
        ),
        View(
            "m_ephemeral",
            "WITH __dbt__cte__s AS (SELECT k, j, upper(w) AS w FROM {db}.s WHERE w <> 'c' AND j IS NOT NULL) "
            "SELECT r.k, r.v, e.w, e.j FROM {db}.r r LEFT JOIN __dbt__cte__s e ON r.k = e.k",
        ),
        View(
            "m_boolean",
            "WITH f AS (SELECT k, w, j > 1 OR w = 'a' AS hot FROM {db}.s) "
            "SELECT r.k, r.v, f.w, f.hot FROM {db}.r r LEFT JOIN f ON r.k = f.k AND NOT f.hot",
        ),
    ),
    restores=True,
    adopts=0.2,
)

# Join keys of different types: Spark casts the STRING side to a number before it compares, so
# keys distinct as stored ('1', '01') are one key to the join (the unique-key flip must not trust
# the stored values).
CA = Table("a", (("k", "int"), ("v", "string")))
CP = Table("p", (("id", "int"), ("code", "string codes"), ("w", "string")), key="id")
COERCED = Family(
    "coerced",
    (CA, CP),
    (
        View("c_left", "SELECT a.k, a.v, p.w FROM {db}.a a LEFT JOIN {db}.p p ON a.k = p.code"),
        View("c_full", "SELECT a.k, p.code, p.w FROM {db}.a a FULL JOIN {db}.p p ON a.k = p.code"),
        _agg(
            "c_counts",
            "SELECT a.k, count(*) AS n, count(p.w) AS matched FROM {db}.a a LEFT JOIN {db}.p p ON p.code = a.k "
            "GROUP BY a.k",
        ),
    ),
    restores=True,
)


# What analysis used to rewrite (issue #47): JOIN ... USING chains under outer joins, whose later
# joins compare the merged column (COALESCE after FULL, the right key after RIGHT), and predicates
# with arithmetic on DOUBLE values at a boundary (0.35 + 0.05 < 0.4 in DOUBLE) and on INT values
# at the limit (2147483647 + 1 wraps around with ANSI off); folded, both change which rows pass.
EDGES = {
    "double edge": [0.35, 0.36, 0.3, 0.4, None],
    "int edge": [2147483647, 2147483646, 2, 3, None],
}
UA = Table("ua", (("k", "int"), ("v", "string")))
UB = Table("ub", (("k", "int"), ("w", "string")))
UC = Table("uc", (("k", "int"), ("z", "string")))
UE = Table("ue", (("k", "int"), ("n", "int edge"), ("x", "double edge")))
USING = Family(
    "using",
    (UA, UB, UC, UE),
    (
        View(
            "u_full",
            "SELECT k, ua.v, ub.w, uc.z FROM {db}.ua FULL JOIN {db}.ub USING (k) FULL JOIN {db}.uc USING (k)",
        ),
        View(
            "u_right",
            "SELECT k, ua.v, ub.w, uc.z FROM {db}.ua RIGHT JOIN {db}.ub USING (k) RIGHT JOIN {db}.uc USING (k)",
        ),
        _agg(
            "u_agg",
            "SELECT k, count(*) AS c, count(uc.z) AS cz FROM {db}.ua FULL JOIN {db}.ub USING (k) "
            "LEFT JOIN {db}.uc USING (k) GROUP BY k",
        ),
        View("u_pred", "SELECT k, n, x FROM {db}.ue WHERE x + 0.05 >= 0.4 OR n + 1 > 3"),
        View(
            "u_pred_on",
            "SELECT ua.k, ua.v, ue.n FROM {db}.ua LEFT JOIN {db}.ue ON ue.k = ua.k AND ue.x + 0.05 >= 0.4 "
            "AND ue.n + 1 > 3",
        ),
    ),
    restores=True,
)


# -- sums near their type's limits, under both ANSI settings -----------------------------------
# Large values are positive, two of them pass the limit, and their sums never come near it
# (DECIMAL(38, 0): multiples of 1.5E37, never 1E38 +- 0.5E37; BIGINT: 4 and 5 E18 never sum to
# 9.22E18 +- 0.2E18), so the small ones cannot tip a sum across it: Spark's own SUM overflows,
# whatever order it adds the rows in, exactly when the group's sum is past the limit (else the
# model's result would depend on the order). With ANSI off a DECIMAL sum past it is NULL and a
# BIGINT one wraps; with ANSI on the model's SQL fails, and the refresh must fail too
# (`AnsiHarness`).
NEAR_LIMITS: dict[str, list[Any]] = {
    "decimal(38,0) near": [Decimal(45 * 10**36), Decimal(6 * 10**37), Decimal(1), Decimal(-1), Decimal(0), None],
    "bigint near": [4 * 10**18, 5 * 10**18, 1, -1, None],
}
OVERFLOW = re.compile(r"ARITHMETIC_OVERFLOW|NUMERIC_VALUE_OUT_OF_RANGE")
X = Table("x", (("k", "int"), ("m", "decimal(38,0) near"), ("n", "bigint near")))
LIMITS = Family(
    "limits",
    (X,),
    (
        _agg("l_grouped", "SELECT k, sum(m) AS sm, sum(n) AS sn, avg(n) AS an, count(*) AS c FROM {db}.x GROUP BY k"),
        _agg("l_global", "SELECT count(m) AS c, sum(m) AS sm, max(m) AS hi, avg(n) AS an FROM {db}.x WHERE k > 0"),
    ),
)


# Chains: fast_mv views over fast_mv views (`dbt_ivm.upstream`), refreshed level by level as dbt
# runs them, every level compared with its own SQL: a filter under a join under an aggregate; an
# outer join in the middle with an aggregate on top; a diamond (a join of two views over the
# same source); an aggregate feeding a join; DISTINCT and HAVING levels.
CP = Table("cp", (("k", "int"), ("g", "string"), ("m", "decimal(10,2)")))
CQ = Table("cq", (("k", "int"), ("w", "string")))
CR = Table("cr", (("w", "string"), ("z", "int")))
CHAINS = Family(
    "chains",
    (CP, CQ, CR),
    (
        View("c_stg", "SELECT k, g, m FROM {db}.cp WHERE k IS NULL OR k <> 3"),
        View("c_join", "SELECT s.k, s.g, s.m, q.w FROM {db}.c_stg s JOIN {db}.cq q ON s.k = q.k"),
        _agg("c_agg", "SELECT w, count(*) AS n, sum(m) AS sm, min(g) AS lo FROM {db}.c_join GROUP BY w"),
        View("c_outer", "SELECT q.k, q.w, s.g, s.m FROM {db}.cq q LEFT JOIN {db}.c_stg s ON q.k = s.k"),
        _agg("c_outer_agg", "SELECT w, count(g) AS ng, count(*) AS n, max(m) AS hi FROM {db}.c_outer GROUP BY w"),
        View("c_diamond", "SELECT j.w, s.g, s.m FROM {db}.c_join j JOIN {db}.c_stg s ON j.k = s.k AND j.g = s.g"),
        View("c_agg_join", "SELECT r.z, a.w, a.n, a.sm FROM {db}.c_agg a JOIN {db}.cr r ON a.w = r.w"),
        _agg("c_distinct", "SELECT DISTINCT g, k FROM {db}.cp"),
        _agg("c_distinct_count", "SELECT g, count(*) AS n, sum(k) AS sk FROM {db}.c_distinct GROUP BY g"),
        _agg("c_having", "SELECT g, sum(k) AS s, count(*) AS n FROM {db}.cp GROUP BY g HAVING count(*) > 1"),
        View("c_having_join", "SELECT h.g, h.s, q.w FROM {db}.c_having h LEFT JOIN {db}.cq q ON h.s = q.k"),
        _agg("c_global", "SELECT count(*) AS n, sum(sm) AS total FROM {db}.c_agg"),
        # a window level (keep the latest per group) over a level, and an aggregate over it
        View(
            "c_latest",
            "SELECT k, g, m FROM (SELECT k, g, m, row_number() OVER (PARTITION BY g ORDER BY k DESC, m) AS rn "
            "FROM {db}.c_stg) s WHERE rn = 1",
        ),
        _agg("c_latest_count", "SELECT count(*) AS n, sum(m) AS sm, max(k) AS hi FROM {db}.c_latest"),
    ),
)


# Window views (`classes.windows`): every window function, NULL partition keys (k), rows moving
# between partitions (an update of k), partitions emptied by deletes, ties under RANK, ROWS and
# RANGE frames, windows over joins, the SCD-2 patterns, a view that is one partition, SELECT
# DISTINCT over windows (by a partition key it selects, and one partition), and windows over groups. Where a
# function's value depends on the order among ties, the ORDER BY is total (ts, id: ids are unique).
WT = Table("w", (("id", "int"), ("k", "int"), ("ts", "int"), ("v", "string"), ("x", "double")), key="id")
WL = Table("l", (("k", "int"), ("name", "string")))
_BY_TS = "PARTITION BY k ORDER BY ts, id"
WINDOWS = Family(
    "windows",
    (WT, WL),
    (
        # the functions over one table, PARTITION BY k (NULL keys, rows moving by update), batched
        # into few views: each view is a build and a refresh per round
        View(
            "w_ranks",
            f"SELECT id, k, ts, row_number() OVER ({_BY_TS}) AS rn, rank() OVER (PARTITION BY k ORDER BY ts) AS r, "
            "dense_rank() OVER (PARTITION BY k ORDER BY ts DESC) AS dr, "
            "percent_rank() OVER (PARTITION BY k ORDER BY ts) AS pr, "
            "cume_dist() OVER (PARTITION BY k ORDER BY ts) AS cd FROM {db}.w",
        ),
        View("w_ntile", f"SELECT id, ntile(3) OVER ({_BY_TS}) AS nt FROM {{db}}.w WHERE v IS NOT NULL OR x > 1"),
        View(
            "w_values",
            f"SELECT id, first_value(v) OVER ({_BY_TS}) AS fv, last_value(v) IGNORE NULLS OVER ({_BY_TS}) AS lv, "
            f"nth_value(x, 2) OVER ({_BY_TS}) AS n2, "
            "first_value(x) OVER (PARTITION BY k ORDER BY ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND "
            f"UNBOUNDED FOLLOWING) AS whole, lag(x, 2, -1.0) OVER ({_BY_TS}) AS l2, lead(v) OVER ({_BY_TS}) AS nv, "
            f"lag(v, 1, 'none') OVER ({_BY_TS}) AS pv, last_value(x, true) OVER (PARTITION BY k ORDER BY ts, id "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS x_filled FROM {db}.w",
        ),
        View(  # SCD-2 end dates and the current flag, beside aggregates over frames
            "w_scd2",
            f"SELECT id, k, ts AS eff, lead(ts) OVER ({_BY_TS}) AS end_ts, "
            f"CASE WHEN lead(ts) OVER ({_BY_TS}) IS NULL THEN true ELSE false END AS is_current, "
            "sum(x) OVER (PARTITION BY k ORDER BY ts, id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS rolling, "
            "sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS ranged, "
            f"count(*) OVER (PARTITION BY k) AS n, avg(x) OVER ({_BY_TS}) AS running, "
            "max(v) OVER (PARTITION BY k) AS hi FROM {db}.w",
        ),
        View(
            "w_latest",
            "SELECT id, k, v FROM (SELECT id, k, v, row_number() OVER (PARTITION BY k ORDER BY ts DESC, id DESC) "
            "AS rn FROM {db}.w) s WHERE rn = 1",
        ),
        View(
            "w_latest_cte",
            "WITH ranked AS (SELECT k, v, x, row_number() OVER (PARTITION BY v ORDER BY x DESC, id) AS rn "
            "FROM {db}.w) SELECT k, v, coalesce(x, 0.0) AS x FROM ranked WHERE rn = 1 AND k IS NOT NULL",
        ),
        # keep-the-first (`classes.windows.first_rows`): over a join, NULLS LAST on a double, and with a
        # WHERE and NULL partition keys; a touched partition is recomputed only where a removed row
        # has its kept row's ORDER BY values
        View(
            "w_first_join",
            "SELECT id, name, x FROM (SELECT w.id, l.name, w.x, row_number() OVER (PARTITION BY l.name ORDER BY "
            "w.x DESC NULLS LAST, w.id) AS rn FROM {db}.w w JOIN {db}.l l ON w.k = l.k) d WHERE rn = 1",
        ),
        View(
            "w_first_where",
            "SELECT k, v, x, ts FROM (SELECT k, v, x, ts, row_number() OVER (PARTITION BY v ORDER BY x NULLS LAST, "
            "ts DESC, id) AS rn FROM {db}.w WHERE x IS NULL OR x > 0.7) s WHERE 1 = rn",
        ),
        View(
            "w_one_partition",
            "SELECT id, row_number() OVER (ORDER BY ts, id) AS pos, sum(x) OVER () AS total FROM {db}.w "
            "WHERE v IS NOT NULL",
        ),
        View(
            "w_join",
            "SELECT w.id, l.name, rank() OVER (PARTITION BY l.name ORDER BY w.ts) AS r FROM {db}.w w "
            "JOIN {db}.l l ON w.k = l.k",
        ),
        View(
            "w_shared_partition",
            "SELECT id, rank() OVER (PARTITION BY k, v ORDER BY ts) AS r, count(*) OVER (PARTITION BY k) AS n "
            "FROM {db}.w",
        ),
        View(
            "w_expression_partition",
            "SELECT id, v, dense_rank() OVER (PARTITION BY coalesce(v, 'none') ORDER BY x) AS d FROM {db}.w "
            "WHERE k IS NOT NULL OR x > 1",
        ),
        View(
            "w_left_join",
            "SELECT w.id, l.name, row_number() OVER (PARTITION BY l.name ORDER BY w.id) AS rn FROM {db}.w w "
            "LEFT JOIN {db}.l l ON w.k = l.k",
        ),
        View(  # TPC-DI's trades: DISTINCT over windows by a key it selects; small v domain: duplicates
            "w_distinct",
            "SELECT DISTINCT k, v, min(ts) OVER (PARTITION BY k) AS created, max(ts) OVER (PARTITION BY k) AS closed "
            "FROM {db}.w",
        ),
        View("w_distinct_one", "SELECT DISTINCT v, max(x) OVER () AS top FROM {db}.w WHERE k IS NOT NULL"),
        # windows over an aggregate's groups: partitioned by a group key (NULL keys, HAVING, an
        # aggregate of the aggregate OVER the partition), and the top groups of each partition over a
        # join, written as CTEs (merged into one grouped SELECT)
        View(
            "w_rank_groups",
            "SELECT k, v, count(*) AS n, rank() OVER (PARTITION BY k ORDER BY count(*) DESC) AS r, "
            "sum(count(*)) OVER (PARTITION BY k) AS kn, max(ts) AS last_ts FROM {db}.w GROUP BY k, v "
            "HAVING min(ts) > 0 OR count(*) > 1",
        ),
        View(
            "w_top_groups",
            "WITH g AS (SELECT l.name, w.v, sum(w.ts) AS total FROM {db}.w w JOIN {db}.l l ON w.k = l.k "
            "GROUP BY l.name, w.v), r AS (SELECT name, v, total, dense_rank() OVER (PARTITION BY name ORDER BY "
            "total DESC) AS pos FROM g) SELECT name, v, total FROM r WHERE pos <= 2",
        ),
    ),
    odds=(("w", 0.85), ("l", 0.35)),  # most views read w alone: change it most rounds
)


# Set operations (`classes.setops`): UNION ALL of two and three branches, over joins and an outer
# join, UNION, INTERSECT and EXCEPT with and without ALL, nested as Spark parses them, a SELECT
# DISTINCT branch, a branch filtered to empty, the same table in two branches, and branch types
# that Spark widens (INT with DECIMAL(10,2), STRING with INT). Small domains: many duplicates, NULLs.
SA = Table("sa", (("k", "int"), ("v", "string"), ("x", "double")))
SB = Table("sb", (("k", "int"), ("w", "string"), ("m", "decimal(10,2)")))
SC = Table("sc", (("j", "int"), ("z", "string")))
SETOPS = Family(
    "setops",
    (SA, SB, SC),
    (
        View("o_all2", "SELECT k, v FROM {db}.sa UNION ALL SELECT k, w FROM {db}.sb"),
        View(
            "o_all3",
            "SELECT k, v FROM {db}.sa WHERE x > 0.7 UNION ALL SELECT k, w FROM {db}.sb UNION ALL "
            "SELECT j, z FROM {db}.sc",
        ),
        View(
            "o_joins",
            "SELECT a.k, b.w AS s FROM {db}.sa a JOIN {db}.sb b ON a.k = b.k UNION ALL "
            "SELECT c.j, a.v FROM {db}.sc c LEFT JOIN {db}.sa a ON c.j = a.k",
        ),
        View("o_union", "SELECT k, v FROM {db}.sa UNION SELECT k, w FROM {db}.sb"),
        View("o_intersect", "SELECT k, v FROM {db}.sa INTERSECT SELECT k, w FROM {db}.sb"),
        View("o_intersect_all", "SELECT k FROM {db}.sa INTERSECT ALL SELECT j FROM {db}.sc"),
        View("o_except", "SELECT v FROM {db}.sa EXCEPT SELECT z FROM {db}.sc"),
        View("o_except_all", "SELECT k, v FROM {db}.sa EXCEPT ALL SELECT k, w FROM {db}.sb"),
        View(
            "o_nested",
            "SELECT k FROM {db}.sa UNION SELECT k FROM {db}.sb EXCEPT ALL SELECT j FROM {db}.sc "
            "UNION ALL SELECT k FROM {db}.sb INTERSECT SELECT j FROM {db}.sc",
        ),
        View("o_distinct", "SELECT DISTINCT v FROM {db}.sa UNION ALL SELECT w FROM {db}.sb"),
        View("o_empty", "SELECT k, v FROM {db}.sa UNION ALL SELECT k, w FROM {db}.sb WHERE k > 100"),
        View("o_self", "SELECT k, v FROM {db}.sa UNION ALL SELECT k, v FROM {db}.sa WHERE x > 0.7 OR v IS NULL"),
        # the aggregate over a UNION ALL that a subquery cannot hold: a fast_mv over the union's fast_mv
        View("o_chain", "SELECT k, count(*) AS n, max(v) AS top FROM {db}.o_all2 GROUP BY k", aggregated=True),
        View(
            "o_widened",
            "SELECT k, m, w FROM {db}.sb UNION ALL "
            "SELECT a.k, a.k AS km, c.j FROM {db}.sa a JOIN {db}.sc c ON a.k = c.j",
        ),
    ),
)


class AnsiHarness(Harness):
    """A `Harness` run with `spark.sql.ansi.enabled` set to `ansi` (restored after). Where the
    model's SQL fails on an overflow, its refresh must fail too (and then the view is not
    compared); where the model does not fail, the view is compared as always. The sources get
    the same rows under both settings (no draw depends on a result): `overflows`, the checks
    where the model failed with ANSI on, are those where its sum was past the limit without."""

    def __init__(self, *args: Any, ansi: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.ansi = ansi
        self.overflows = 0

    def run(self, rounds: int, deadline: float | None = None, progress: bool = False) -> Report:
        before = self.spark.conf.get("spark.sql.ansi.enabled")
        self.spark.conf.set("spark.sql.ansi.enabled", self.ansi)
        try:
            return super().run(rounds, deadline, progress)
        finally:
            self.spark.conf.set("spark.sql.ansi.enabled", before)

    def model_failure(self, v: View) -> str | None:
        """The overflow the model's SQL fails with now, or None (without ANSI: never, not asked)."""
        if self.ansi != "true":
            return None
        try:
            self.sql(v.sql.format(db=f"`{self.database}`"))
        except Exception as e:
            if OVERFLOW.search(str(e)):
                return str(e).splitlines()[0]
            raise
        return None

    def materialize(self, v: View) -> tuple[list[str], Outcome]:
        try:
            return super().materialize(v)
        except Exception as e:
            if OVERFLOW.search(str(e)) and self.model_failure(v):
                return [], Outcome("failed", str(e).splitlines()[0])
            raise

    def check(self, v: View, changed: bool) -> tuple[list[str], list[Any]]:
        failure = self.model_failure(v)
        if failure is None:
            return super().check(v, changed)
        statements, outcome = self.materialize(v)
        with self.lock:
            self.compared.pop(v.name, None)
            self.model_sqls.pop(v.name, None)
            self.overflows += 1
        return statements, [] if outcome.action == "failed" else [("the model fails, the refresh did not", failure)]

    def agree(self, v: View) -> list[Any]:
        return [] if self.model_failure(v) else super().agree(v)


# Semi-join views (`classes.semijoins`): EXISTS, NOT EXISTS, IN and NOT IN, maintained by
# correlation key. NULLs on both sides (KEYS holds NULL), inner sets often empty (`w = 'c'` on few
# rows, tables emptied), duplicates on both sides (no unique ids: `dup` copies rows), several
# correlation columns, predicates inside the subquery and on the outer query, and both sides changed
# in one round. `s` is read inside and `r` outside, `r` also inside (a self anti-join).
QR = Table("r", (("id", "int"), ("k", "int"), ("j", "int"), ("v", "string")))
QS = Table("s", (("k", "int"), ("j", "int"), ("w", "string")))
QT = Table("t", (("k", "int"), ("z", "string")))
SUBQUERIES = Family(
    "subqueries",
    (QR, QS, QT),
    (
        View("q_exists", "SELECT r.id, r.v FROM {db}.r r WHERE EXISTS (SELECT 1 FROM {db}.s s WHERE s.k = r.k)"),
        View(
            "q_not_exists",
            "SELECT r.id, r.k, r.v FROM {db}.r r WHERE r.v IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM {db}.s s WHERE s.k = r.k AND s.w <> 'a')",
        ),
        View("q_in", "SELECT id, j FROM {db}.r WHERE k IN (SELECT k FROM {db}.s WHERE w IS NOT NULL)"),
        View("q_not_in", "SELECT id, k FROM {db}.r WHERE k NOT IN (SELECT k FROM {db}.s)"),
        View("q_not_in_empty", "SELECT id, j, v FROM {db}.r WHERE j NOT IN (SELECT j FROM {db}.s WHERE w = 'c')"),
        View(
            "q_exists_two_keys",
            "SELECT r.id, r.k, r.j FROM {db}.r r WHERE EXISTS (SELECT * FROM {db}.s s WHERE s.k = r.k AND s.j = r.j)",
        ),
        View(
            "q_not_exists_two_keys",
            "SELECT r.id, r.v FROM {db}.r r WHERE r.j > 0 AND NOT EXISTS "
            "(SELECT 1 FROM {db}.s s WHERE s.j = r.j AND s.k <=> r.k AND s.w IS NOT NULL)",
        ),
        View("q_uncorrelated", "SELECT id, k FROM {db}.r WHERE EXISTS (SELECT 1 FROM {db}.s WHERE w = 'b')"),
        View(
            "q_outer_join",
            "SELECT r.id, t.z FROM {db}.r r JOIN {db}.t t ON r.j = t.k "
            "WHERE NOT EXISTS (SELECT 1 FROM {db}.s s WHERE s.k = r.k)",
        ),
        View(
            "q_two_tests",
            "SELECT r.id, r.k FROM {db}.r r WHERE EXISTS (SELECT 1 FROM {db}.s s WHERE s.k = r.k AND s.j = r.j) "
            "AND r.k NOT IN (SELECT k FROM {db}.t WHERE z <> 'a')",
        ),
        View("q_in_or", "SELECT id, v FROM {db}.r WHERE v = 'a' OR j IN (SELECT j FROM {db}.s)"),
        View(
            "q_correlated_not_in",
            "SELECT r.id, r.j FROM {db}.r r WHERE r.j NOT IN (SELECT s.j FROM {db}.s s WHERE s.k = r.k)",
        ),
        View("q_self_anti", "SELECT id, v FROM {db}.r WHERE k NOT IN (SELECT j FROM {db}.r WHERE v = 'b')"),
        View(
            "q_join_inside",
            "SELECT r.id FROM {db}.r r WHERE EXISTS "
            "(SELECT 1 FROM {db}.s s JOIN {db}.t t ON s.j = t.k WHERE s.k = r.k AND t.z IS NOT NULL)",
        ),
    ),
    odds=(("r", 0.6), ("s", 0.6), ("t", 0.4)),
)


# A calculated SELECT over an aggregate (`analyze.calculated`): ratios that divide by a count
# that may be 0 (NULL, as the model gives), CASE, casts, arithmetic, renames and reordering over
# an aggregate's columns in an outer query or CTE, an outer WHERE (HAVING after the inner one),
# over a global aggregate, DISTINCT, aggregates without a rule, a join and a LEFT JOIN, and a
# chain of CTEs. Doubles with NaN and the infinities (p.x) and NULLs everywhere.
CALCULATED = Family(
    "calculated",
    (P, Q),
    (
        _agg(
            "c_ratio",
            "WITH s AS (SELECT g, sum(x) AS sx, count(x) AS cx, count(*) AS n, sum(m) AS sm FROM {db}.p GROUP BY g) "
            "SELECT n, g AS grp, sx / cx AS mean, sm / n AS per_row FROM s WHERE n > 1 OR g IS NULL",
        ),
        _agg(
            "c_case",
            "SELECT s.k, CASE WHEN s.lo IS NULL THEN 'none' WHEN s.hi - s.lo > 1 THEN 'wide' ELSE 'narrow' END "
            "AS spread, cast(s.sm AS bigint) AS whole, s.sm * 2 - 1 AS calc FROM (SELECT k, min(x) AS lo, "
            "max(x) AS hi, sum(m) AS sm FROM {db}.p GROUP BY k HAVING count(*) > 1) s WHERE s.sm IS NULL OR s.sm <> 0",
        ),
        _agg(
            "c_global",
            "SELECT t.n - t.cx AS nulls, t.sm / t.cm AS avg_m, t.hi FROM (SELECT count(*) AS n, count(x) AS cx, "
            "sum(m) AS sm, count(m) AS cm, max(g) AS hi FROM {db}.p) t WHERE t.n >= 0",
        ),
        _agg(
            "c_join",
            "SELECT upper(a.w) AS w, a.n, round(a.s / a.n, 1) AS avg_m, a.lo <= a.hi AS ordered FROM (SELECT q.w, "
            "count(*) AS n, sum(p.m) AS s, min(p.k) AS lo, max(q.k) AS hi FROM {db}.p p JOIN {db}.q q ON p.k = q.k "
            "GROUP BY q.w) a WHERE a.n > 1 OR a.w IS NULL",
        ),
        _agg(
            "c_distinct",
            "SELECT concat(coalesce(d.g, '-'), cast(d.k AS string)) AS gk, d.k * 10 AS k10 "
            "FROM (SELECT DISTINCT g, k FROM {db}.p) d",
        ),
        _agg(
            "c_no_rule",
            "SELECT k, dg * 2 AS dg2, coalesce(sd, -1.0) AS sd FROM (SELECT k, count(DISTINCT g) AS dg, "
            "stddev(x) AS sd FROM {db}.p GROUP BY k) s WHERE dg > 0",
        ),
        _agg(
            "c_left",
            "SELECT a.k, a.matched / a.n AS share, -a.hi AS neg FROM (SELECT q.k, count(*) AS n, "
            "count(p.g) AS matched, max(p.m) AS hi FROM {db}.q q LEFT JOIN {db}.p p ON q.k = p.k GROUP BY q.k) a",
        ),
        _agg(
            "c_chain",
            "WITH a AS (SELECT k, g, max(m) AS top, min(m) AS low, count(*) AS n FROM {db}.p GROUP BY k, g), "
            "b AS (SELECT g, k, top - low AS spread, n FROM a WHERE n > 1) "
            "SELECT g, spread, k FROM b WHERE spread IS NOT NULL",
        ),
    ),
    odds=(("p", 0.85), ("q", 0.35)),
)


# Aggregates over a UNION ALL subquery or CTE (`analyze.union_leaf`): COUNT, SUM, MIN/MAX, AVG,
# HAVING, COUNT(DISTINCT) and STDDEV by group recompute, a global aggregate, SELECT DISTINCT, NULL
# keys, NaN and the infinities, branches that are joins and outer joins, a table read by two
# branches and by a join in each, branch types Spark widens (DOUBLE and DECIMAL, DECIMAL and INT,
# a NULL literal), a branch filtered to empty, and an outer WHERE over the union's columns; and
# joins over a UNION ALL, two UNION ALLs joined and a SELECT over one (`analyze.union_join`);
# windows over a UNION ALL.
LA = Table("la", (("k", "int"), ("g", "string"), ("x", "double special")))
LB = Table("lb", (("k", "int"), ("g", "string"), ("y", "double"), ("m", "decimal(10,2)")))
LC = Table("lc", (("j", "int"), ("z", "string")))
_FEEDS = "SELECT 'a' AS feed, k, x FROM {db}.la UNION ALL SELECT 'b', k, y FROM {db}.lb"
UNIONS = Family(
    "unions",
    (LA, LB, LC),
    (
        _agg(
            "u_feeds",
            f"SELECT feed, k, count(*) AS n, sum(x) AS s, max(x) AS hi, min(x) AS lo FROM ({_FEEDS}) u "
            "GROUP BY feed, k",
        ),
        _agg(
            "u_avg_having",
            "SELECT g, avg(x) AS ax, count(x) AS cx FROM (SELECT g, x FROM {db}.la UNION ALL "
            "SELECT g, m FROM {db}.lb) u GROUP BY g HAVING count(*) > 1",
        ),
        _agg(
            "u_no_rule",
            "SELECT k, count(DISTINCT g) AS dg, stddev(x) AS sd FROM (SELECT k, g, y AS x FROM {db}.lb "
            "UNION ALL SELECT j, z, 1.5 FROM {db}.lc) u GROUP BY k",
        ),
        _agg(
            "u_global",
            "SELECT count(*) AS n, sum(m) AS s, max(g) AS hi, min(m) AS lo FROM (SELECT g, m FROM {db}.lb "
            "UNION ALL SELECT g, k FROM {db}.la WHERE k > 1 UNION ALL SELECT z, j FROM {db}.lc WHERE j > 100) u",
        ),
        _agg(
            "u_self",
            "SELECT k, count(*) AS n, min(x) AS lo, max(g) AS hg FROM (SELECT k, g, x FROM {db}.la UNION ALL "
            "SELECT k, g, x FROM {db}.la WHERE g IS NOT NULL UNION ALL SELECT j, z, NULL FROM {db}.lc) u GROUP BY k",
        ),
        _agg(
            "u_joins",
            "SELECT z, count(*) AS n, sum(x) AS s, max(k) AS hk FROM (SELECT c.z, a.x, a.k FROM {db}.la a "
            "JOIN {db}.lc c ON a.k = c.j UNION ALL SELECT c.z, b.y, b.k FROM {db}.lb b LEFT JOIN {db}.lc c "
            "ON b.k = c.j) u GROUP BY z",
        ),
        _agg(
            "u_cte_where",
            "WITH u AS (SELECT k, g, x FROM {db}.la UNION ALL SELECT k, g, m FROM {db}.lb) "
            "SELECT g, sum(x) AS s, max(k) AS hk, count(*) AS n FROM u WHERE x > 0.7 OR k IS NULL GROUP BY g",
        ),
        _agg("u_distinct", "SELECT DISTINCT g, k FROM (SELECT g, k FROM {db}.la UNION ALL SELECT z, j FROM {db}.lc) u"),
        # joins over a UNION ALL (`analyze.union_join`): inner with an outer WHERE, a LEFT JOIN over a
        # CTE whose NULL branch the ON compares (cast) and whose types the outputs widen, and SELECT
        # DISTINCT over a RIGHT JOIN; lc both in the union and joined to it
        View(
            "u_join",
            f"SELECT u.feed, u.k, u.x, c.z FROM ({_FEEDS}) u JOIN {{db}}.lc c ON u.k = c.j "
            "WHERE u.x > 0.7 OR u.feed = 'b'",
        ),
        View(
            "u_left_join",
            "WITH u AS (SELECT k, g, m AS v FROM {db}.lb UNION ALL SELECT k, NULL, NULL FROM {db}.la WHERE x > 0.7 "
            "UNION ALL SELECT j, z, j FROM {db}.lc) "
            "SELECT u.k, u.v, u.g, c.z FROM u LEFT JOIN {db}.lc c ON u.k = c.j AND u.g = c.z",
        ),
        View(
            "u_right_join",
            "SELECT DISTINCT c.z, u.g FROM {db}.lc c RIGHT JOIN (SELECT k, g FROM {db}.la UNION ALL "
            "SELECT k, g FROM {db}.lb UNION ALL SELECT NULL, z FROM {db}.lc) u ON c.j = u.k",
        ),
        # the UNION ALL on the null-supplied side of a LEFT JOIN (`analyze.union_padded`): an ON beyond
        # the equality, a branch WHERE, an expression and an outer WHERE over the union's columns
        View(
            "u_left_null",
            "SELECT c.j, c.z, u.k, u.g, coalesce(u.x, -1.0) AS xx FROM {db}.lc c LEFT JOIN (SELECT k, g, x "
            "FROM {db}.la WHERE x > 0.3 UNION ALL SELECT k, g, y FROM {db}.lb) u ON u.k = c.j AND u.g <> c.z "
            "WHERE c.j > 1 OR u.x IS NULL",
        ),
        # a FULL JOIN with the UNION ALL (`analyze.union_padded`): each branch preserved, the padded rows
        # of lc, a branch WHERE, an ON beyond the equality and an outer WHERE over both sides
        View(
            "u_full",
            "SELECT c.j, c.z, u.k, u.g, coalesce(u.x, c.j) AS xx FROM {db}.lc c FULL JOIN (SELECT k, g, x "
            "FROM {db}.la WHERE x > 0.3 UNION ALL SELECT k, g, y FROM {db}.lb) u ON u.k = c.j AND u.g <> c.z "
            "WHERE c.z IS NULL OR u.k > 0 OR u.x IS NULL",
        ),
        # a SELECT with no join over a UNION ALL (`analyze.union_join`): a WHERE and expressions over
        # columns a branch gives as NULL (cast to the other branches' types)
        View(
            "u_select",
            "SELECT k, x * 2 AS x2, coalesce(g, '-') AS gg, g FROM (SELECT k, g, x FROM {db}.la UNION ALL "
            "SELECT k, NULL, y FROM {db}.lb UNION ALL SELECT j, z, NULL FROM {db}.lc) u WHERE x > 0.3 OR k IS NULL",
        ),
        # two UNION ALLs joined (`analyze.union_join`): one branch per combination of their branches,
        # la in both unions (a self-join in one combination), then a LEFT JOIN on the second's columns
        View(
            "u_two_unions",
            f"SELECT u.feed, u.k, v.g, v.x AS vx, c.z FROM ({_FEEDS}) u JOIN (SELECT k, g, x FROM {{db}}.la "
            "WHERE x > 0.3 UNION ALL SELECT j, z, j FROM {db}.lc) v ON u.k = v.k LEFT JOIN {db}.lc c ON v.g = c.z",
        ),
        # windows over a UNION ALL (`analyze.union_leaf`, `classes.windows`): an SCD-2 end value and a
        # rank over two feeds by key (NULL keys, NaN) in a derived table without an alias, windows by
        # a string with NULLs over a CTE with a WHERE over the union, and keep-the-latest (`rn = 1`)
        # in a CTE over a CTE
        View(
            "u_window_scd2",
            "SELECT * FROM (SELECT k, g, x, lead(x) OVER (PARTITION BY k ORDER BY x, g) AS nx, row_number() OVER "
            "(PARTITION BY k ORDER BY x DESC, g) AS rn FROM (SELECT k, g, x FROM {db}.la UNION ALL SELECT k, g, y "
            "FROM {db}.lb) u)",
        ),
        View(
            "u_window_cte",
            "WITH u AS (SELECT k, g, m AS v FROM {db}.lb UNION ALL SELECT j, z, j FROM {db}.lc WHERE j > 1) "
            "SELECT g, k, v, count(*) OVER (PARTITION BY g) AS n, max(v) OVER (PARTITION BY g) AS hi, "
            "dense_rank() OVER (PARTITION BY g ORDER BY v) AS dr FROM u WHERE v > 0 OR k IS NULL",
        ),
        View(
            "u_window_latest",
            "WITH u AS (SELECT k, g, x FROM {db}.la UNION ALL SELECT j, z, j FROM {db}.lc), d AS (SELECT k, g, x, "
            "row_number() OVER (PARTITION BY k ORDER BY x DESC, g) AS rn FROM u) SELECT k, g, x FROM d WHERE rn = 1",
        ),
        # an aggregate and windows over a join with a UNION ALL (`analyze.union_leaf_join`): the join
        # over each branch read as one leaf; a WHERE over both sides, and windows by the joined side's
        # column, NULL where a LEFT JOIN's preserved union row matches nothing
        _agg(
            "u_join_agg",
            f"SELECT c.z, u.feed, count(*) AS n, sum(u.x) AS s, max(u.k) AS hk, min(u.x) AS lo FROM ({_FEEDS}) u "
            "JOIN {db}.lc c ON u.k = c.j WHERE u.x > 0.3 OR c.z IS NULL GROUP BY c.z, u.feed",
        ),
        View(
            "u_join_window",
            "SELECT u.k, u.g, c.z, lead(u.x) OVER (PARTITION BY c.z ORDER BY u.x, u.k, u.g) AS nx, count(*) OVER "
            "(PARTITION BY c.z) AS n FROM (SELECT k, g, x FROM {db}.la UNION ALL SELECT k, g, y FROM {db}.lb) u "
            "LEFT JOIN {db}.lc c ON u.k = c.j",
        ),
        View(  # windows over the groups of an aggregate over the join with the union
            "u_window_groups",
            "SELECT c.z, u.g, count(*) AS n, rank() OVER (PARTITION BY c.z ORDER BY count(*) DESC) AS r FROM "
            "(SELECT k, g, x FROM {db}.la UNION ALL SELECT k, g, y FROM {db}.lb) u JOIN {db}.lc c ON u.k = c.j "
            "GROUP BY c.z, u.g",
        ),
        _agg(
            "u_expressions",
            "SELECT k % 2 AS parity, coalesce(g, '-') AS gg, sum(v) AS s, max(v) AS hi, count(*) AS n "
            "FROM (SELECT k, g, m AS v FROM {db}.lb UNION ALL SELECT k, g, k FROM {db}.la) u "
            "GROUP BY k % 2, coalesce(g, '-')",
        ),
    ),
)
