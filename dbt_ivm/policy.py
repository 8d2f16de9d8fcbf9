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

from dbt_ivm.classes.joins import MAX_FILTER_IDENTITIES
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

    refresh = fixed + scan * (rows of the other sources each change is joined with)
              + change * (change rows)
              + if the view has a null-supplied source: compensate * (those joined rows again)
              + if a MIN or MAX can lose its extreme (`ViewPlan.loses_extremes`): recompute * (rows of every source)
              + if only appends to a monotone view: probe * view rows (the stored identities read once)
                else: merge_fixed + view rows * (merge_filtered if the changed identities fit the
                      MERGE's identity filter else merge)
    rebuild = rebuild_fixed + scan * (rows of every source) + if several: join * (the same rows)
              + write * view rows

    `auto` rebuilds only when the estimated rebuild is cheaper by more than `tie`: the estimates'
    median error against the benchmark's times is 14-18 %, so within it the two paths tie, and a
    tie refreshes (its cost follows the change; it rewrites no stored file that did not change).
    """

    # Least squares (non-negative, in seconds) over the 48 cases of benchmarks/results/20261123.csv
    # and 20261124-10m.csv (1M and 10M rows, 5 views, 3 change kinds; `benchmarks/RESULTS.md`),
    # rounded. The change rows' cost is held at the earlier fit's 70 µs: every case changed
    # 0.01-0.1 %, which leaves it unmeasured; the probe and the filtered MERGE keep a small floor.
    fixed: float = 3.4
    scan: float = 0.19e-6
    change: float = 70e-6
    compensate: float = 0.9e-6
    recompute: float = 0.4e-6
    probe: float = 0.02e-6
    merge_fixed: float = 1.0
    merge_filtered: float = 0.1e-6
    merge: float = 0.4e-6
    rebuild_fixed: float = 0.35
    join: float = 0.6e-6
    write: float = 2.5e-6
    filter_limit: int = MAX_FILTER_IDENTITIES
    # Rebuild when rebuild * tie < refresh. Over the 69 cases of the four runs (1M and 10M, the
    # 1M run over every fraction), the choice is within 1.1x of the faster path in 67 with 1.2
    # (worst 1.13x) and in 64 without it (worst 1.31x), the same for 1.2-1.25 (`docs/ARCHITECTURE.md`).
    tie: float = 1.2

    def refresh(self, inputs: Inputs) -> float:
        changes = sum(v or 0 for v in inputs.changes.values())
        joined = sum(inputs.joined.values())
        seconds = self.fixed + self.scan * joined + self.change * changes
        if inputs.compensates:
            seconds += self.compensate * joined
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
            f"  refresh ≈ {self.fixed} s + {self.scan * us:g} µs per row of the other sources a change joins"
            f" + {self.change * us:g} µs per change row",
            f"            + with an outer join: {self.compensate * us:g} µs per joined row again;"
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
    appends_only: bool  # every moved source only appended, and the view is monotone: no MERGE
    source_rows: int  # rows of all the view's sources (each occurrence counted)
    view_rows: int  # rows the view stores
    joins: bool = False  # several source occurrences: the rebuild joins them
    compensates: bool = False  # a null-supplied source: the change set reads the preserved side again
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
