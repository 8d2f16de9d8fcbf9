"""Reading a source's Delta history: which commits only appended rows."""

from __future__ import annotations

from dbt_ivm.history import appended_rows, metric


def commit(version, operation="WRITE", blind=True, rows=3, text=False):
    metrics = {"numOutputRows": str(rows), "numFiles": "1"} if rows is not None else {}
    if text:  # thrift connections return maps as text
        metrics = "{" + ", ".join(f'"{k}":"{v}"' for k, v in metrics.items()) + "}"
    return {"version": version, "operation": operation, "isBlindAppend": blind, "operationMetrics": metrics}


def test_metric_reads_maps_and_their_text_forms():
    assert metric(commit(1, rows=7), "numOutputRows") == 7
    assert metric(commit(1, rows=7, text=True), "numOutputRows") == 7
    assert metric({"operationMetrics": "{numOutputRows -> 12, numFiles -> 1}"}, "numOutputRows") == 12
    assert metric(commit(1), "numDeletedRows") is None
    assert metric({"operationMetrics": None}, "numOutputRows") is None


def test_blind_appends_and_no_data_commits_only_append():
    history = [
        commit(7, rows=2),
        commit(6, "OPTIMIZE", blind=False, rows=None),
        commit(5, rows=4),
        commit(4, "UPDATE", blind=False),
    ]
    assert appended_rows(history, 5, 7) == 6
    assert appended_rows(history, 6, 6) == 0
    assert appended_rows([{**commit(5), "isBlindAppend": "true"}], 5, 5) == 3  # text booleans too


def test_anything_that_may_remove_rows_is_not_an_append():
    assert appended_rows([commit(5), commit(4, "UPDATE", blind=False)], 4, 5) is None
    assert appended_rows([commit(5, "DELETE", blind=False)], 5, 5) is None
    assert appended_rows([commit(5, "MERGE", blind=False)], 5, 5) is None
    assert appended_rows([commit(5, "WRITE", blind=False)], 5, 5) is None  # an append that read the table
    assert appended_rows([commit(5, rows=None)], 5, 5) is None  # a blind append without its row count


def test_a_commit_missing_from_the_history_is_not_an_append():
    assert appended_rows([commit(7), commit(5)], 5, 7) is None
    assert appended_rows([commit(9), commit(8)], 5, 7) is None  # newer commits only
