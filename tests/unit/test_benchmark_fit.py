"""benchmarks.fit: `policy.Costs` as the linear program over the recorded runs gives it."""

from __future__ import annotations

import dataclasses

from benchmarks.auto import FITTED_RUNS, measured
from benchmarks.fit import FITTED, errors, faster, features, fit, ratio
from dbt_ivm.policy import COSTS, Inputs


def test_each_estimate_is_linear_in_the_fitted_constants():
    """What the linear program relies on: coefficients times constants are the estimates."""
    constants = [getattr(COSTS, name) for name in FITTED]
    for _, inputs in measured(FITTED_RUNS):
        refresh, rebuild = features(inputs)
        assert abs(sum(a * b for a, b in zip(refresh, constants, strict=True)) - COSTS.refresh(inputs)) < 1e-9
        assert abs(sum(a * b for a, b in zip(rebuild, constants, strict=True)) - COSTS.rebuild(inputs)) < 1e-9


def test_policy_takes_the_fit_of_the_current_codes_runs():
    """Refitting the runs `COSTS` came from gives its choices and its errors: a hand edit of the
    constants, or a run added without refitting, shows here (docs/journal.md, "auto
    refitted to the sorted build")."""
    cases = measured(FITTED_RUNS)
    fitted = fit(cases)
    assert [ratio(c, i, fitted) for c, i in cases] == [ratio(c, i, COSTS) for c, i in cases]
    for now, refit in zip(errors(cases, COSTS), errors(cases, fitted), strict=True):
        assert abs(now - refit) < 0.005 and refit < 0.15
    # every case whose paths differ by more than 1.1x is chosen right
    assert not [(c.view, c.kind, c.fraction) for c, i in cases if faster(c) and ratio(c, i, fitted) > 1.1]


def test_a_change_of_most_of_the_data_rebuilds_though_no_run_has_one():
    """The floor on a change row's cost: the runs change at most a tenth of the data."""
    fitted = fit(measured(FITTED_RUNS))
    assert fitted.change >= fitted.scan + fitted.join + fitted.write
    most = Inputs({"db.f": 12_000_000}, {"db.f": 0}, False, 10_000_000, 10_000_000)
    assert fitted.rebuild(most) * fitted.tie < fitted.refresh(most)
    free = dataclasses.replace(fitted, change=0.0)  # a change row priced at nothing
    assert free.rebuild(most) * free.tie > free.refresh(most)
