"""`policy.Costs` fitted to recorded benchmark runs, as a linear program.

    .venv/bin/python -m benchmarks.fit benchmarks/results/20261126-1m-10m.csv ...

Needs scipy (`pip install -e ".[bench]"`). Once a case's inputs are fixed (`benchmarks.auto.recorded`),
both estimates are linear in the constants, and so is the sign `auto` chooses by, `refresh - tie *
rebuild`. That makes the fit a linear program over the constants:

- every case whose two measured paths differ by more than 1.1x must put its estimates on the
  faster side of the tie line, `margin` off it (where no constants can, a slack pays `penalty`
  per second);
- a change row costs at least what a source row costs a join's rebuild (`change >= scan + join +
  write`): the runs change at most a tenth of the data, and without it a change of all of it
  could be priced as cheaper than the rebuild;
- within those, the sum of both estimates' relative errors is the smallest.

Prints the constants, to three digits, as `policy.Costs` takes them, and what they choose for
each case (`docs/journal.md`, "auto refitted to the sorted build").
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Sequence

from benchmarks.auto import against_faster, measured
from benchmarks.run import Case
from dbt_ivm.policy import COSTS, Costs, Inputs, choose

REFRESH = (
    "fixed",
    "fixed_join",
    "scan_joined",
    "change",
    "removal",
    "compensate_fixed",
    "compensate",
    "probe",
    "merge_fixed",
    "merge_filtered",
    "merge",
)
REBUILD = ("rebuild_fixed", "scan", "join", "write")
FITTED = REFRESH + REBUILD
# Not fitted (kept from `base`): `recompute`, which no benchmark view exercises.
ZERO = {name: 0.0 for name in (*FITTED, "recompute")}


def features(inputs: Inputs) -> tuple[list[float], list[float]]:
    """Each fitted constant's coefficient in the refresh's and in the rebuild's estimate."""
    refresh = [Costs(**{**ZERO, name: 1.0}).refresh(inputs) if name in REFRESH else 0.0 for name in FITTED]
    rebuild = [Costs(**{**ZERO, name: 1.0}).rebuild(inputs) if name in REBUILD else 0.0 for name in FITTED]
    return refresh, rebuild


def faster(case: Case, tie: float = 1.1) -> int:
    """+1: the rebuild must be chosen, -1: the refresh, 0: either is within `tie` of the other."""
    if case.refresh_s > tie * case.rebuild_s:
        return 1
    if case.rebuild_s > tie * case.refresh_s:
        return -1
    return 0


def fit(
    cases: Sequence[tuple[Case, Inputs]],
    margin: float = 0.03,
    penalty: float = 100.0,
    base: Costs = COSTS,
) -> Costs:
    """The constants of the linear program above (`base.tie` is the tie line), to three digits."""
    import numpy as np
    from scipy.optimize import linprog

    k, n = len(FITTED), len(cases)
    chosen = [(j, want) for j, (case, _) in enumerate(cases) if (want := faster(case, base.tie))]
    m = len(chosen)
    # variables: the constants, each case's two relative errors, each choice's slack
    objective = np.concatenate([np.zeros(k), np.ones(2 * n), np.full(m, penalty)])
    rows, bounds = [], []

    def row(coefficients: Sequence[float], at: dict[int, float]) -> np.ndarray:
        out = np.zeros(k + 2 * n + m)
        out[:k] = coefficients
        for i, value in at.items():
            out[i] = value
        return out

    coefficients = [tuple(np.array(f) for f in features(inputs)) for _, inputs in cases]
    for j, (case, _) in enumerate(cases):
        refresh, rebuild = coefficients[j]
        for sign in (1.0, -1.0):  # |estimate / measured - 1| <= error
            rows.append(row(sign * refresh / case.refresh_s, {k + j: -1.0}))
            bounds.append(sign)
            rows.append(row(sign * rebuild / case.rebuild_s, {k + n + j: -1.0}))
            bounds.append(sign)
    for q, (j, want) in enumerate(chosen):
        refresh, rebuild = coefficients[j]
        if want > 0:  # refresh >= (1 + margin) * tie * rebuild
            constraint = (1 + margin) * base.tie * rebuild - refresh
        else:  # (1 + margin) * refresh <= tie * rebuild
            constraint = (1 + margin) * refresh - base.tie * rebuild
        rows.append(row(constraint, {k + 2 * n + q: -1.0}))
        bounds.append(0.0)
    floor = np.zeros(k)  # scan + join + write - change <= 0
    for name, sign in (("change", -1.0), ("scan", 1.0), ("join", 1.0), ("write", 1.0)):
        floor[FITTED.index(name)] = sign
    rows.append(row(floor, {}))
    bounds.append(0.0)
    solved = linprog(objective, A_ub=np.array(rows), b_ub=np.array(bounds), bounds=(0, None), method="highs")
    if not solved.success:
        raise RuntimeError(f"the fit failed: {solved.message}")
    return dataclasses.replace(base, **{name: float(f"{x:.3g}") for name, x in zip(FITTED, solved.x[:k], strict=True)})


def ratio(case: Case, inputs: Inputs, costs: Costs) -> float:
    """The time of the path `costs` choose, against the faster path as measured."""
    return against_faster(case, choose(inputs, costs).rebuild)


def errors(cases: Sequence[tuple[Case, Inputs]], costs: Costs) -> tuple[float, float]:
    """The median relative error of the refresh's and of the rebuild's estimate."""
    return (
        statistics.median(abs(costs.refresh(i) / c.refresh_s - 1) for c, i in cases),
        statistics.median(abs(costs.rebuild(i) / c.rebuild_s - 1) for c, i in cases),
    )


def summary(cases: Sequence[tuple[Case, Inputs]], costs: Costs) -> str:
    ratios = [ratio(c, i, costs) for c, i in cases]
    refresh, rebuild = errors(cases, costs)
    over = sum(r > 1.1 for r in ratios)
    return (
        f"{len(cases)} cases: {over} over 1.1x the faster path, worst {max(ratios):.2f}x; "
        f"median estimate error: refresh {refresh:.0%}, rebuild {rebuild:.0%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="benchmarks/results/<run>.csv")
    parser.add_argument("--margin", type=float, default=0.03, help="how far off the tie line (default 3 %%)")
    args = parser.parse_args(argv)
    cases = measured(args.csv)
    costs = fit(cases, args.margin)
    for case, inputs in cases:
        r = ratio(case, inputs, costs)
        print(
            f"{case.n:>9} {case.view:<9} {case.kind:<15} {case.fraction:>7.2%}: "
            f"refresh {case.refresh_s:6.2f} s (estimated {costs.refresh(inputs):6.2f}), "
            f"rebuild {case.rebuild_s:6.2f} s (estimated {costs.rebuild(inputs):6.2f}): {r:.2f}x the faster"
            + ("  <- over 1.1x" if r > 1.1 else "")
        )
    print(f"now:    {summary(cases, COSTS)}")
    print(f"fitted: {summary(cases, costs)}")
    for name in FITTED:
        print(f"    {name}: float = {getattr(costs, name)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
