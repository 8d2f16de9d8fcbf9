"""Reading a source's Delta history: which commits only appended rows."""

from __future__ import annotations

from datetime import datetime

from dbt_ivm.history import (
    appended_rows,
    changed_since,
    commit_time,
    commits_after,
    holds_commit,
    keeps_rows,
    matched_several,
    metric,
    replaced,
    reshaped,
    written,
)


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


def op(at, operation, **params):
    """A DESCRIBE HISTORY row with operation parameters (a map, as a Spark session returns)."""
    return {"version": at, "operation": operation, "operationParameters": params}


def test_commits_that_keep_the_rows_leave_the_storage_as_its_watermark_describes():
    history = [op(7, "OPTIMIZE"), op(8, "SET TBLPROPERTIES"), op(9, "VACUUM START"), op(10, "VACUUM END")]
    assert changed_since(history, 6, 10) == ""
    assert changed_since([], 6, 6) == ""  # nothing after the watermark


def test_a_commit_that_may_change_the_rows_is_named_with_its_version():
    assert changed_since([op(7, "DELETE", predicate="id < 5")], 6, 7) == "DELETE at v7"
    assert changed_since([op(7, "OPTIMIZE"), op(8, "UPDATE")], 6, 8) == "UPDATE at v8"
    assert changed_since([op(7, "WRITE", mode="Overwrite")], 6, 7) == "WRITE (overwrite) at v7"
    assert changed_since([op(7, "ADD COLUMNS")], 6, 7) == "ADD COLUMNS at v7"  # a schema change
    assert changed_since([op(7, "SOMETHING NEW")], 6, 7) == "SOMETHING NEW at v7"  # unknown: may change rows
    # a commit missing from the history read is not assumed harmless
    assert changed_since([op(8, "OPTIMIZE")], 6, 8) == "v7 (not in the history read)"


def test_a_restore_is_harmless_only_back_to_rows_the_watermark_describes():
    # RESTORE to an older version: the rows the refreshes since had changed come back
    assert changed_since([op(7, "RESTORE", version="3")], 6, 7) == "RESTORE to version 3 at v7"
    assert changed_since([op(7, "RESTORE", timestamp="2026-01-01")], 6, 7) == "RESTORE to 2026-01-01 at v7"
    # a DELETE by hand, then a RESTORE to the watermark's version (or an OPTIMIZE of it): harmless
    assert changed_since([op(7, "DELETE"), op(8, "RESTORE", version="6")], 6, 8) == ""
    assert changed_since([op(7, "OPTIMIZE"), op(8, "DELETE"), op(9, "RESTORE", version="7")], 6, 9) == ""
    # a RESTORE to the version of the DELETE keeps the DELETE's rows
    assert (
        changed_since([op(7, "DELETE"), op(8, "RESTORE", version="7")], 6, 8)
        == "DELETE at v7, RESTORE to version 7 at v8"
    )
    # thrift returns the parameters as text
    text = {"version": 7, "operation": "RESTORE", "operationParameters": '{"version":"6","timestamp":null}'}
    assert changed_since([{**text, "version": 8}, op(7, "DELETE")], 6, 8) == ""


def test_a_source_replaced_wholesale_is_named():
    assert replaced([op(5, "CREATE OR REPLACE TABLE AS SELECT")], 4, 6) == "CREATE OR REPLACE TABLE AS SELECT at v5"
    assert replaced([op(5, "WRITE", mode="Overwrite")], 5, 5) == "WRITE (overwrite) at v5"
    assert (
        replaced([op(5, "TRUNCATE"), op(6, "RESTORE", version="2")], 5, 6)
        == "TRUNCATE at v5, RESTORE to version 2 at v6"
    )
    # an overwrite of some rows only (replaceWhere), appends, deletes: not replacements
    assert replaced([op(5, "WRITE", mode="Overwrite", predicate="d = 1")], 5, 5) == ""
    assert replaced([op(5, "WRITE", mode="Append"), op(6, "DELETE"), op(7, "MERGE")], 5, 7) == ""
    assert replaced([op(4, "CREATE OR REPLACE TABLE AS SELECT")], 5, 7) == ""  # before the range


def test_commits_after_a_version_are_named_oldest_first():
    history = [op(9, "OPTIMIZE"), op(8, "MERGE"), op(7, "WRITE", mode="Append")]
    assert commits_after(history, 7) == "MERGE at v8, OPTIMIZE at v9"
    assert commits_after(history, 9) == ""


def test_a_read_column_dropped_or_renamed_is_named_and_an_unread_one_is_not():
    def schema(version, operation, params):
        return {"version": version, "operation": operation, "operationParameters": params}

    history = [
        schema(9, "RENAME COLUMN", {"oldColumnPath": "amount", "newColumnPath": "amt"}),
        schema(8, "RENAME COLUMN", {"oldColumnPath": "amt", "newColumnPath": "amount"}),
        schema(7, "DROP COLUMNS", {"columns": '["note"]'}),
        schema(6, "ADD COLUMNS", {"columns": '[{"column":{"name":"amt"}}]'}),
        schema(5, "DROP COLUMNS", '{"columns":"[\\"AMT\\"]"}'),  # text over thrift, any case
    ]
    assert reshaped(history, 5, 9, ["id", "amt"]) == (
        "DROP COLUMNS at v5 (amt), RENAME COLUMN at v8 (amt), RENAME COLUMN at v9 (amt)"
    )
    assert reshaped(history, 6, 7, ["id", "amt"]) == ""  # an added column, a dropped unread one
    assert reshaped(history, 5, 9, ["id", "am"]) == ""  # a name is matched whole
    assert reshaped([schema(4, "REPLACE COLUMNS", {})], 4, 4, ["id"]) == "REPLACE COLUMNS at v4 (every column)"


def test_commits_that_keep_every_row_and_a_merge_s_counts():
    assert keeps_rows([commit(6, "OPTIMIZE"), commit(5, "REORG"), commit(4, "SET TBLPROPERTIES")], 4, 6)
    assert not keeps_rows([commit(6, "OPTIMIZE"), commit(5)], 5, 6)  # an append
    assert not keeps_rows([commit(6, "OPTIMIZE")], 5, 6)  # v5 not in the history read
    assert not keeps_rows([commit(5, "ADD COLUMNS")], 5, 5)  # a schema change
    merge = {"operationMetrics": {"numSourceRows": "2", "numTargetRowsMatchedUpdated": "2"}}
    merge["operationMetrics"]["numTargetRowsInserted"] = "1"
    assert matched_several(merge) and not matched_several({"operationMetrics": {"numSourceRows": "3"}})
    counts = {"operationMetrics": {"numTargetRowsInserted": "2", "numTargetRowsDeleted": "1"}}
    counts["operationMetrics"]["numTargetRowsUpdated"] = "3"
    assert written(counts, None, None) == (5, 4) and written(counts, 7, 0) == (7, 0)


def test_a_commit_is_told_by_its_version_and_time_whichever_way_the_connection_types_it():
    """A Spark session gives DESCRIBE HISTORY's timestamp as a datetime, thrift as text."""
    at = datetime(2026, 11, 28, 4, 1, 2, 345000)
    assert commit_time({"timestamp": at}) == commit_time({"timestamp": "2026-11-28 04:01:02.345"})
    assert commit_time({"timestamp": at}) == "2026-11-28 04:01:02.345"
    assert commit_time({"timestamp": "not a time"}) == "not a time" and commit_time({}) == ""
    history = [{"version": 4, "timestamp": at}, {"version": 3, "timestamp": datetime(2026, 11, 28, 4)}]
    assert holds_commit(history, 4, "2026-11-28 04:01:02.345")
    assert not holds_commit(history, 3, "2026-11-28 04:01:02.345")  # another commit at version 3: another table
    assert not holds_commit(history, 5, "2026-11-28 04:01:02.345")  # not read, or not there
    assert not holds_commit(history, 4, "")  # nothing recorded: not known to be the same table
