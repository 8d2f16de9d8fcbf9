"""Pure pieces of the stored state: the consistency test's pinned model SQL, the watermark's
token, the recorded session settings, the MERGE metrics that reveal a broken unique key."""

from __future__ import annotations

from dbt_ivm import render
from dbt_ivm.maintain import _matched_several, settings_changed
from dbt_ivm.metadata import Watermark, latest_watermark


def test_pin_versions_inserts_version_clauses_and_changes_nothing_else():
    model = (
        "-- daily revenue\n"
        "with x as (select * from `db`.`o` where amt > 1)\n"
        "select /*+ BROADCAST(c) */ x.id, to_char(x.ts, 'yyyy-MM') as m\n"
        "from x join db.c c on x.cust = c.cid join DB.O as o2 on o2.id = x.id;  -- done"
    )
    pinned = render.pin_versions(model, {"db.o": 3, "db.c": 5})
    assert pinned == (
        "-- daily revenue\n"
        "with x as (select * from `db`.`o` VERSION AS OF 3 where amt > 1)\n"
        "select /*+ BROADCAST(c) */ x.id, to_char(x.ts, 'yyyy-MM') as m\n"
        "from x join db.c VERSION AS OF 5 c on x.cust = c.cid join DB.O VERSION AS OF 3 as o2 on o2.id = x.id  -- done"
    )


def test_the_consistency_query_wraps_the_model_text_on_its_own_lines():
    """A trailing line comment in the model cannot swallow the closing parenthesis."""
    sql = render.consistency_sql(render.TableName("db", "v"), "select 1 as a -- note")
    assert "(\nselect 1 as a -- note\n)" in sql and sql.count("select 1 as a") == 2


def test_watermark_round_trips_its_token_and_run():
    mark = Watermark({"db.o": 4}, "abc", {"db.o": "t0"}, token=1_700_000_000_000_001, run="r1")
    rows = [{"version": 9, "userMetadata": None}, {"version": 8, "userMetadata": mark.encode()}]
    read = latest_watermark(rows)
    assert read is not None and read.token == mark.token and read.run == "r1" and read.commit_version == 8
    assert read.encode() == mark.encode()
    sized = Watermark({"db.o": 4}, "abc", rows={"db.v__ivm": 0, "db.o": 12})
    read = latest_watermark([{"version": 3, "userMetadata": sized.encode()}])
    assert read is not None and read.rows == {"db.o": 12, "db.v__ivm": 0} and read.encode() == sized.encode()
    assert '"rows"' not in mark.encode()  # unknown sizes are not written


def test_settings_changed_names_each_setting_with_both_values():
    recorded = '{"spark.sql.ansi.enabled":"false","spark.sql.session.timeZone":"UTC"}'
    assert settings_changed(recorded, {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "false"}) == ""
    changed = settings_changed(recorded, {"spark.sql.session.timeZone": "Asia/Tokyo", "spark.sql.ansi.enabled": "true"})
    assert changed == "spark.sql.ansi.enabled 'false' → 'true', spark.sql.session.timeZone 'UTC' → 'Asia/Tokyo'"
    assert settings_changed(None, {"spark.sql.session.timeZone": "UTC"}) == ""


def test_a_merge_whose_change_rows_matched_several_stored_rows():
    def commit(source, updated, deleted, inserted):
        return {
            "operationMetrics": {
                "numSourceRows": str(source),
                "numTargetRowsMatchedUpdated": str(updated),
                "numTargetRowsMatchedDeleted": str(deleted),
                "numTargetRowsInserted": str(inserted),
            }
        }

    assert not _matched_several(commit(5, 2, 1, 2))
    assert _matched_several(commit(1, 0, 2, 0))  # one change row deleted two stored copies
    assert not _matched_several({"operationMetrics": {}})  # no metrics: nothing to conclude
