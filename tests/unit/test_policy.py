"""refresh_policy: the config's values, and auto's choice from a refresh's inputs."""

from __future__ import annotations

import pytest

from dbt_ivm.errors import ConfigError
from dbt_ivm.history import changed_rows, rows_after
from dbt_ivm.policy import COSTS, Inputs, RefreshPolicy, choose, parse_policy
from tests.unit.test_history import commit


def test_the_policy_config_takes_three_values_and_names_them_when_wrong():
    assert parse_policy(None) is RefreshPolicy.AUTO
    assert parse_policy(" Incremental ") is RefreshPolicy.INCREMENTAL
    assert parse_policy("full") is RefreshPolicy.FULL
    with pytest.raises(ConfigError, match=r"one of 'auto', 'incremental', 'full', not 'always'"):
        parse_policy("always")


def inputs(changes, view_rows=10_000_000, source_rows=10_011_000, appends_only=False, joined=11_000):
    return Inputs({"db.f": changes}, {"db.f": joined}, appends_only, source_rows, view_rows)


def test_auto_refreshes_small_changes_of_a_large_view_and_rebuilds_small_views():
    assert not choose(inputs(20_000)).rebuild  # 0.1 % of 10M rows
    assert not choose(inputs(20_000, appends_only=True)).rebuild
    small = choose(inputs(20, view_rows=2_000, source_rows=2_050))  # the MERGE's fixed cost dominates
    assert small.rebuild and "rebuild, estimated cheaper" in small.reason
    # appends take no MERGE: a refresh at a million rows
    assert not choose(inputs(1_000, view_rows=1_000_000, source_rows=1_001_000, appends_only=True)).rebuild


def test_auto_rebuilds_when_most_of_the_source_changed_and_refreshes_when_unknown():
    assert choose(inputs(12_000_000)).rebuild
    unknown = choose(inputs(None))
    assert not unknown.rebuild and "does not count its changes" in unknown.reason


def test_a_change_joined_with_a_large_source_costs_its_scan():
    """A dimension's change is joined with the fact: the refresh reads the fact once, without writing it."""
    dimension = choose(Inputs({"db.c": 2_000}, {"db.c": 10_001_000}, False, 10_011_000, 10_000_000))
    assert not dimension.rebuild
    assert "refresh ≈" in dimension.reason and "rebuild ≈" in dimension.reason
    assert len(COSTS.describe()) == 3


def test_changed_rows_counts_appends_updates_deletes_and_merges():
    history = [
        commit(9, "MERGE", blind=False, rows=None)
        | {
            "operationMetrics": {"numTargetRowsInserted": "1", "numTargetRowsUpdated": "2", "numTargetRowsDeleted": "3"}
        },
        commit(8, "OPTIMIZE", blind=False, rows=None),
        commit(7, "UPDATE", blind=False, rows=None) | {"operationMetrics": {"numUpdatedRows": "5"}},
        commit(6, "DELETE", blind=False, rows=None) | {"operationMetrics": {"numDeletedRows": "4"}},
        commit(5, rows=10),
        commit(4, "WRITE", blind=False) | {"operationParameters": {"mode": "Append"}},  # INSERT ... SELECT itself
    ]
    assert changed_rows(history, 4, 9) == 3 + 10 + 4 + 10 + (1 + 4 + 3)
    assert changed_rows(history, 3, 9) is None  # a commit missing
    overwrite = commit(5, "WRITE", blind=False) | {"operationParameters": "{mode -> Overwrite}"}
    assert changed_rows([overwrite], 5, 5) is None
    assert changed_rows([commit(5, "DELETE", blind=False, rows=None)], 5, 5) is None  # no row count


def test_rows_after_follows_appends_deletes_and_merges_from_the_metrics():
    """auto's sizes without a count(*): the rows before, plus what each commit's metrics say."""
    merge = {"numTargetRowsInserted": "7", "numTargetRowsUpdated": "2", "numTargetRowsDeleted": "3"}
    history = [
        commit(9, "MERGE", blind=False, rows=None) | {"operationMetrics": merge},
        commit(8, "OPTIMIZE", blind=False, rows=None),
        commit(7, "UPDATE", blind=False, rows=None) | {"operationMetrics": {"numUpdatedRows": "5"}},
        commit(6, "DELETE", blind=False, rows=None) | {"operationMetrics": {"numDeletedRows": "4"}},
        commit(5, rows=10),
    ]
    assert rows_after(100, history, 5, 9) == 100 + 10 - 4 + 7 - 3
    assert rows_after(100, history, 10, 9) == 100  # no commit: the rows before
    assert rows_after(100, history, 4, 9) is None  # a commit missing
    replaced = commit(10, "CREATE OR REPLACE TABLE AS SELECT", blind=False, rows=42)
    assert rows_after(100, [*history, replaced], 5, 10) == 42  # the replace sets them
    for unknown in (
        commit(5, "WRITE", blind=False) | {"operationParameters": {"mode": "Overwrite"}},
        commit(5, "RESTORE", blind=False, rows=None),
        commit(5, "DELETE", blind=False, rows=None),  # a delete of whole files without a row count
    ):
        assert rows_after(100, [unknown], 5, 5) is None
