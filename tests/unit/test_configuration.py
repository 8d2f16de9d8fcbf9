"""on_configuration_change without Spark: the recorded configuration, the diff, the statements."""

from __future__ import annotations

import json

import pytest
from sqlglot import exp

from dbt_ivm import render
from dbt_ivm.configuration import (
    MARKER,
    Configuration,
    Docs,
    OnChange,
    alter_statements,
    diff,
    on_change,
    record_statement,
    recorded,
    view_comments,
)
from dbt_ivm.errors import ConfigError
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import Watermark
from dbt_ivm.storage import Storage

BACKING = TableName("s", "m__ivm")
DEFAULTS = {"delta.enableDeletionVectors": "true"}


def config(props=None, part=None, liquid=None, docs=None) -> Configuration:
    return Configuration.of(Storage(tblproperties=props, partition_by=part, liquid_clustered_by=liquid), docs)


def test_on_change_defaults_to_apply_and_refuses_other_values():
    assert on_change(None) is OnChange.APPLY
    assert on_change("Continue") is OnChange.CONTINUE
    with pytest.raises(ConfigError, match="on_configuration_change 'skip'"):
        on_change("skip")


def test_the_record_is_the_newest_alter_or_the_watermarks():
    built = config({"a": "1"})
    altered = config({"a": "2"}, liquid=["x"])
    mark = Watermark({"s.t": 1}, "h", config=built.encode()).encode()
    history = [
        {"version": 4, "userMetadata": None},  # a platform's own commit (a property it adds): no record
        {"version": 3, "userMetadata": altered.marker()},
        {"version": 2, "userMetadata": mark},
    ]
    assert recorded(history) == altered
    assert recorded(history[2:]) == built
    assert recorded([{"version": 1, "userMetadata": Watermark({"s.t": 1}, "h").encode()}]) is None
    assert not altered.marker().startswith("dbt-ivm:{")  # never read as a watermark
    assert Watermark.decode(altered.marker()) is None and altered.marker().startswith(MARKER)


def test_nothing_changed_or_nothing_recorded_is_no_change():
    now = config({"a": "1"}, part="k", docs=Docs("d", {"x": "the x"}))
    assert diff(now, config({"a": "1"}, part=["K"], docs=Docs("d", {"X": "the x"})), DEFAULTS) is None
    assert diff(None, now, DEFAULTS) is None


def test_properties_set_changed_and_dropped_alter_in_place():
    before = config({"a": "1", "b": "2", "delta.enableDeletionVectors": "false"})
    changes = diff(before, config({"a": "9", "c": True}), DEFAULTS)
    assert changes is not None and not changes.replace
    assert changes.set_properties == {"a": "9", "c": "true", "delta.enableDeletionVectors": "true"}
    assert changes.unset_properties == ("b",)
    assert alter_statements(BACKING, changes) == ["ALTER TABLE `s`.`m__ivm` UNSET TBLPROPERTIES IF EXISTS ('b')"]
    assert record_statement(BACKING, changes, "run1") == (
        "ALTER TABLE `s`.`m__ivm` SET TBLPROPERTIES ('a'='9', 'c'='true', 'delta.enableDeletionVectors'='true', "
        "'dbt_ivm.configured'='run1')"
    )


def test_liquid_clustering_alters_and_partitioning_replaces():
    changes = diff(config(liquid="x"), config(liquid=["x", "y"]), DEFAULTS)
    assert changes is not None and changes.liquid == ("x", "y") and not changes.replace
    assert alter_statements(BACKING, changes) == ["ALTER TABLE `s`.`m__ivm` CLUSTER BY (`x`, `y`)"]
    off = diff(config(liquid="x"), config(), DEFAULTS)
    assert off is not None and alter_statements(BACKING, off) == ["ALTER TABLE `s`.`m__ivm` CLUSTER BY NONE"]
    for before, now in (
        (config(part="x"), config(part="y")),
        (config(), config(part="y")),
        (config(part="x"), config(liquid="x")),
    ):
        changes = diff(before, now, DEFAULTS)
        assert changes is not None and changes.replace, (before, now)
    assert "partition_by (x) → (y)" in diff(config(part="x"), config(part="y"), DEFAULTS).describe()


def test_docs_change_recreates_the_view_with_its_comments():
    changes = diff(config(docs=Docs("old")), config(docs=Docs("new")), DEFAULTS)
    assert changes is not None and changes.docs and alter_statements(BACKING, changes) == []
    create = render.create_view(TableName("s", "m"), exp.select("a", "b").from_("t"))
    docs = Docs("it's the model", {"A": "the a", "missing": "gone", "b": ""})
    assert render.sql(view_comments(create, docs)) == (
        "CREATE OR REPLACE VIEW `s`.`m` (`a` COMMENT 'the a', `b`) COMMENT 'it\\'s the model' AS SELECT a, b FROM t"
    )
    assert docs.missing(["a", "b"]) == ["missing"]
    assert view_comments(create, Docs()) is create and view_comments(create, None) is create


def test_a_changed_location_root_is_applied_by_a_rebuild_and_an_old_record_reads_as_no_location():
    here = Configuration.of(Storage(location_root="/lake/a"), None)
    there = Configuration.of(Storage(location_root="/lake/b/"), None)
    changes = diff(here, there, DEFAULTS)
    assert changes is not None and changes.replace == ("location_root /lake/a → /lake/b/",)
    assert diff(config(), here, DEFAULTS).replace == ("location_root (none) → /lake/a",)
    # a record written before location_root was recorded has no "loc": it equals a view without one
    assert "loc" not in config().encode() and Configuration.decode(config().encode()) == config()
    assert Configuration.decode(here.encode()) == here


def test_the_storage_is_placed_under_location_root_as_dbt_spark_places_a_table():
    from dbt_ivm.storage import location_property

    assert location_property(Storage(), BACKING) == []
    (prop,) = location_property(Storage(location_root="s3://lake/dbt/"), BACKING)
    assert render.sql(exp.Properties(expressions=[prop])) == "LOCATION 's3://lake/dbt/m__ivm'"


def test_a_value_with_a_semicolon_or_a_substitution_survives_the_set_that_records_it():
    """Spark's SET ends a value at `;` and substitutes `${…}`: neither reaches the SET's text."""
    odd = config(props={"team.note": "a;b ${x} c"})
    text = odd.marker()
    assert ";" not in text and "${" not in text
    assert Configuration.decode(json.loads(text[len(MARKER) :])) == odd
    mark = Watermark({"s.t": 3}, "h", config=odd.encode())
    assert ";" not in mark.encode() and Watermark.decode(mark.encode()).config == odd.encode()
