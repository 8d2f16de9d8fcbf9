"""`metadata.py`: the watermark."""

from __future__ import annotations

from dbt_ivm.metadata import Watermark, latest_watermark


def test_watermark_round_trip_and_latest():
    mark = Watermark({"db.o": 4, "db.c": 7}, "abc", {"db.o": "Mon Nov 23 04:31:59 UTC 2026"})
    text = mark.encode()
    assert Watermark.decode(text).sources == {"db.o": 4, "db.c": 7}
    history = [{"version": 5, "userMetadata": None}, {"version": 4, "userMetadata": text}]
    latest = latest_watermark(history)
    assert (
        latest is not None and latest.commit_version == 4 and latest.created == {"db.o": "Mon Nov 23 04:31:59 UTC 2026"}
    )
    assert latest_watermark([{"version": 1, "userMetadata": "someone else's"}]) is None
    assert Watermark.decode(text).commits == {}  # recorded by no run before this field
    timed = Watermark({"db.o": 4}, "abc", commits={"db.o": "2026-11-28 04:01:02.345"})
    assert Watermark.decode(timed.encode()).commits == {"db.o": "2026-11-28 04:01:02.345"}
