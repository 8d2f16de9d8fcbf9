"""`refresh_policy`: whether a run refreshes from the changes or rebuilds the view.

- `auto` (the default): refresh, unless this refresh's inputs say a rebuild is cheaper. The
  inputs are read before any change row is: each moved source's change rows (its commits'
  metrics), every source's rows at the pinned version and the view's stored rows (carried in the
  watermark and moved on by the commits' metrics; counted, which Delta answers from its log,
  only when the watermark has none). The estimate is a linear cost model (`Costs`) fitted to
  `benchmarks/` figures on the 2-core reference machine; `explain` prints it.
- `incremental`: never rebuilds on its own; a refresh that cannot run incrementally (the model
  changed, the stored state is from an older release, the session's settings changed) fails with
  the reason instead. `--full-refresh` still rebuilds, and so does the repair of a view a broken
  `unique_key` made wrong (the commit is made by then; the run still fails, naming the key).
- `full`: every run rebuilds, as `materialized='table'` would, but the view keeps its watermark,
  so switching back to `auto` refreshes from there.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from dbt_ivm.classes.identities import MAX_FILTER_IDENTITIES
from dbt_ivm.errors import ConfigError


class RefreshPolicy(enum.Enum):
    AUTO = "auto"
    INCREMENTAL = "incremental"
    FULL = "full"


def parse_policy(value: object) -> RefreshPolicy:
    """The model config's value; None is `auto`."""
    if value is None:
        return RefreshPolicy.AUTO
    try:
        return RefreshPolicy(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(repr(p.value) for p in RefreshPolicy)
        raise ConfigError(f"refresh_policy must be one of {choices}, not {value!r}") from None


@dataclass(frozen=True)
class Costs:
    """Seconds per refresh and per row, fitted to figures measured on the 2-core reference
    machine at 1M and 10M rows (docs/ARCHITECTURE.md, "Cost"):

    refresh = fixed + if several source occurrences: fixed_join (staging each change, the key ranges)
              + scan_joined * (rows of the other sources each change is joined with, narrowed to its keys)
              + change * (change rows)
              + if the view has a null-supplied source: compensate * (those joined rows again)
                + unless only appends the class inserts: compensate_fixed (the padded rows' checks)
              + if a moved source deleted or updated rows: removal (an aggregate's lost-groups count,
                the MERGE's deletes)
              + if a MIN or MAX can lose its extreme (`aggregates.loses_extremes`): recompute * (rows of every source)
              + if only appends the class inserts (`Inputs.appends_only`): probe * view rows (the probe
                of the stored identities when it runs, the INSERT into a larger storage)
                else: merge_fixed + view rows * (merge_filtered if the changed identities fit the
                      MERGE's identity filter else merge)
    rebuild = rebuild_fixed + scan * (rows of every source) + if several: join * (the same rows)
              + write * view rows

    `auto` rebuilds only when the estimated rebuild is cheaper by more than `tie`.
    """

    # Fitted on 2026-11-26 to the 96 cases of the current code's runs (`benchmarks.auto.FITTED_RUNS`)
    # by `python -m benchmarks.fit` (the method and the runs are recorded in docs/journal.md): a
    # linear program that makes every case whose two paths differ by more than 1.1x choose the
    # faster one with its estimates at least 3 % off the tie line, charges a change row at least
    # what a source row costs a join's rebuild (so a change of most of the data rebuilds), and
    # minimises the estimates' relative error; to three digits. Every one of the 96 takes a path
    # within 1.1x of the faster (tests/unit/test_policy.py).
    # `recompute` is an earlier fit's: no case of these runs has a MIN or MAX that does not
    # count its extreme's rows.
    fixed: float = 1.68
    fixed_join: float = 2.28
    scan_joined: float = 0.0
    change: float = 7.19e-06
    removal: float = 0.997
    compensate_fixed: float = 2.86
    compensate: float = 0.0
    recompute: float = 0.4e-6
    probe: float = 2.12e-08
    merge_fixed: float = 0.0
    merge_filtered: float = 0.0
    merge: float = 1.08e-07
    rebuild_fixed: float = 1.05
    scan: float = 5.84e-08
    join: float = 4.72e-07
    write: float = 7.43e-07
    filter_limit: int = MAX_FILTER_IDENTITIES
    # Rebuild when rebuild * tie < refresh: estimates within 10 % of each other are a tie, and a
    # tie refreshes.
    tie: float = 1.1

    def refresh(self, inputs: Inputs) -> float:
        changes = sum(v or 0 for v in inputs.changes.values())
        joined = sum(inputs.joined.values())
        seconds = self.fixed + self.scan_joined * joined + self.change * changes
        if inputs.joins:
            seconds += self.fixed_join
        if inputs.removes:
            seconds += self.removal
        if inputs.compensates:
            seconds += self.compensate * joined + (0.0 if inputs.appends_only else self.compensate_fixed)
        if inputs.removes_extremes:
            seconds += self.recompute * inputs.source_rows
        if inputs.appends_only:
            return seconds + self.probe * inputs.view_rows
        per_row = self.merge_filtered if changes <= self.filter_limit else self.merge
        return seconds + self.merge_fixed + per_row * inputs.view_rows

    def rebuild(self, inputs: Inputs) -> float:
        per_row = self.scan + (self.join if inputs.joins else 0.0)
        return self.rebuild_fixed + per_row * inputs.source_rows + self.write * inputs.view_rows

    def describe(self) -> list[str]:
        us = 1e6
        return [
            f"  refresh ≈ {self.fixed} s (+ {self.fixed_join} s joining several sources)"
            f" + {self.scan_joined * us:g} µs per row of the other sources a change joins"
            f" + {self.change * us:g} µs per change row",
            f"            + after deletes or updates: {self.removal} s; with an outer join: {self.compensate * us:g} µs"
            f" per joined row again (+ {self.compensate_fixed} s unless only appends);"
            f" with an uncounted MIN/MAX after deletes or updates: {self.recompute * us:g} µs per source row",
            f"            + only appends: {self.probe * us:g} µs per stored row;"
            f" else {self.merge_fixed} s + {self.merge_filtered * us:g} µs per stored row"
            f" ({self.merge * us:g} µs past {self.filter_limit} change rows)",
            f"  rebuild ≈ {self.rebuild_fixed} s + {self.scan * us:g} µs per source row"
            f" (+ {self.join * us:g} µs joining several) + {self.write * us:g} µs per view row",
            f"  rebuilds when the rebuild's estimate times {self.tie} is below the refresh's (else a tie: refreshes)",
        ]


COSTS = Costs()


@dataclass(frozen=True)
class Inputs:
    """What a refresh knows before it reads a change row."""

    changes: Mapping[str, int | None]  # moved source -> its change rows (None: the history does not say)
    joined: Mapping[str, int]  # moved source -> rows of the other sources its changes are joined with
    # every moved source only appended, and the class writes a change set of added rows by INSERT
    # (`ViewRules.INSERTS`: joins and outer joins; an outer join's may still MERGE, when an added
    # row replaces a padded one): no MERGE
    appends_only: bool
    source_rows: int  # rows of all the view's sources (each occurrence counted)
    view_rows: int  # rows the view stores
    joins: bool = False  # several source occurrences: the rebuild joins them
    compensates: bool = False  # a null-supplied source: the change set reads the preserved side again
    removes: bool = False  # a moved source deleted or updated rows (its commits did more than append)
    removes_extremes: bool = False  # a MIN or MAX not counting its extreme's rows, and a source deleted or updated rows


@dataclass(frozen=True)
class Choice:
    rebuild: bool
    reason: str
    inputs: Inputs | None = None  # what it was chosen from (`benchmarks.auto` replays choices from them)


def choose(inputs: Inputs, costs: Costs | None = None) -> Choice:
    """Rebuild when the estimated rebuild is cheaper than the estimated refresh by more than the
    estimates' error (`Costs.tie`; by `COSTS` by default)."""
    costs = costs or COSTS
    unknown = sorted(k for k, v in inputs.changes.items() if v is None)
    if unknown:
        return Choice(False, f"incremental: the history of {', '.join(unknown)} does not count its changes", inputs)
    refresh, rebuild = costs.refresh(inputs), costs.rebuild(inputs)
    figures = (
        f"{sum(v or 0 for v in inputs.changes.values())} change rows, {inputs.source_rows} source rows, "
        f"{inputs.view_rows} view rows: refresh ≈ {refresh:.1f} s, rebuild ≈ {rebuild:.1f} s"
    )
    if rebuild * costs.tie < refresh:
        return Choice(True, f"rebuild, estimated cheaper ({figures})", inputs)
    if rebuild < refresh:
        return Choice(False, f"incremental, the estimates within {costs.tie}x of each other ({figures})", inputs)
    return Choice(False, f"incremental ({figures})", inputs)
