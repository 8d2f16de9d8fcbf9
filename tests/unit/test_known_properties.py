"""`known_properties`: the storage's properties a refresh takes from its watermark instead of asking."""

from __future__ import annotations

from dataclasses import replace

from dbt_ivm.analyze import analyze, parse
from dbt_ivm.known_properties import expected, known, record
from dbt_ivm.metadata import PROP_CLUSTER_BY, PROP_SETTINGS, Watermark
from dbt_ivm.render import CHANGE_FEED


def test_the_recorded_properties_are_known_only_at_the_watermarks_commit_and_as_expected():
    plan = analyze(parse("select id, amt from db.o"), {"db.o": {"id": "int", "amt": "double"}})
    guess = expected(plan, '{"tz":"UTC"}', ("id",))
    built = {**guess, CHANGE_FEED: "false", "delta.enableDeletionVectors": "true", "user.prop": "x"}
    mark = Watermark({"db.o": 3}, plan.definition_hash, commit_version=7, props=record(built))
    assert Watermark.decode(mark.encode(), 7) == mark
    assert known(mark, 7, guess) == {**guess, CHANGE_FEED: "false"}
    assert known(mark, 8, guess) is None  # a commit after the watermark's: an ALTER, an OPTIMIZE, …
    assert known(mark, 7, {**guess, PROP_SETTINGS: '{"tz":"CET"}'}) is None  # the build's differ: read them
    assert known(mark, 7, {**guess, PROP_CLUSTER_BY: ""}) is None
    assert known(replace(mark, props=None), 7, guess) is None  # recorded before this: read them
    assert known(mark, 7, None) is None
    refreshed = replace(mark, props=record(built, read=6))
    assert known(refreshed, 7, guess) == known(mark, 7, guess)
    # the refresh read them at v5, and a commit (an ALTER) landed before its write at v7: read them
    assert known(replace(mark, props=record(built, read=5)), 7, guess) is None


def test_a_change_feed_turned_on_before_the_write_is_recorded_on():
    assert record({CHANGE_FEED: "false"}, 4, feed_on=True)["feed"] == "true"
    assert record({CHANGE_FEED: "TRUE"})["feed"] == "TRUE"
    assert "feed" not in record({})  # not known: `_feeds` reads it as off, as a table without it
