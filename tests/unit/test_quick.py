"""The no-change run's quick check, its pure parts: the key a write records and the probe script."""

from __future__ import annotations

import dataclasses

from dbt_ivm.configuration import Configuration
from dbt_ivm.inspection import Model
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import Watermark
from dbt_ivm.quick import probe_script, quick_key

MODEL = Model(TableName("db", "v"), "select id from db.o", refresh_policy="incremental")
SETTINGS = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "false", "spark.app.id": "local-1"}


def test_the_key_changes_with_the_model_its_config_the_configuration_and_the_meaning_settings():
    key = quick_key(MODEL, False, Configuration(), SETTINGS)
    assert key == quick_key(MODEL, False, Configuration(), {**SETTINGS, "spark.app.id": "local-2"})  # not a meaning
    others = [
        quick_key(dataclasses.replace(MODEL, sql="select id from db.o where id > 1"), False, Configuration(), SETTINGS),
        quick_key(dataclasses.replace(MODEL, unique_key="id"), False, Configuration(), SETTINGS),
        quick_key(dataclasses.replace(MODEL, refresh_policy="auto"), False, Configuration(), SETTINGS),
        quick_key(dataclasses.replace(MODEL, cluster_by="id"), False, Configuration(), SETTINGS),
        quick_key(dataclasses.replace(MODEL, functions=("f",)), False, Configuration(), SETTINGS),
        quick_key(MODEL, True, Configuration(), SETTINGS),
        quick_key(MODEL, False, Configuration(tblproperties={"a": "1"}), SETTINGS),
        quick_key(MODEL, False, Configuration(docs="d"), SETTINGS),
        quick_key(MODEL, False, Configuration(), {**SETTINGS, "spark.sql.session.timeZone": "Europe/Paris"}),
    ]
    assert key not in others and len(set(others)) == len(others)


def test_a_watermark_carries_its_quick_entry():
    mark = Watermark({"db.o": 3}, "h", {"db.o": "t"}, 1, "r", quick={"key": "k", "cols": ["id"]})
    assert Watermark.decode(mark.encode()) == mark
    assert Watermark.decode(Watermark({"db.o": 3}, "h").encode()).quick is None  # an older watermark: none


def test_the_probe_script_catches_only_the_next_version_s_absence():
    script = probe_script({TableName("db", "o"): 3, TableName("db", "c"): 0})
    assert script.startswith("BEGIN DECLARE m0 INT DEFAULT 0; DECLARE m1 INT DEFAULT 0; ")
    assert script.count("DECLARE EXIT HANDLER FOR SQLSTATE '22003'") == 2 and script.endswith("SELECT m0, m1; END")
    assert "SET m0 = (SELECT 1 FROM `db`.`o` VERSION AS OF 3 LIMIT 0); BEGIN" in script
    assert "VERSION AS OF 4 LIMIT 0); SET m0 = 1; END" in script and "`db`.`c` VERSION AS OF 1 " in script
