"""`storage.py`: the storage configs dbt-spark users write, and `empty.py`: dbt's --empty limits."""

from __future__ import annotations

import pytest

from dbt_ivm import analyze, render
from dbt_ivm.analyze import parse
from dbt_ivm.classes import rules_for
from dbt_ivm.empty import unlimited
from dbt_ivm.errors import ConfigError, UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.storage import Storage, layout_properties, table_properties
from tests.unit.views import JOIN, SCHEMA


def test_file_format_is_delta_or_unset():
    assert Storage().file_format is None
    assert Storage(file_format="DELTA").file_format == "DELTA"
    with pytest.raises(ConfigError, match=r"^file_format 'parquet': a fast_mv is stored in Delta .* drop it$"):
        Storage(file_format="parquet")


def test_tblproperties_merge_under_fast_mvs_own_and_may_not_name_them():
    storage = Storage(tblproperties={"delta.enableChangeDataFeed": True, "owner.team": 7})
    own = {"dbt_ivm.format": "3"}
    assert table_properties(storage, own) == {"delta.enableChangeDataFeed": "true", "owner.team": "7", **own}
    assert table_properties(Storage(), own) == own
    feed = {"delta.enableChangeDataFeed": "true"}
    assert table_properties(storage, own, feed, "a fast_mv reads its feed")["delta.enableChangeDataFeed"] == "true"
    with pytest.raises(
        ConfigError,
        match=r"^tblproperties 'delta.enableChangeDataFeed' = 'false' conflicts with delta.enableChangeDataFeed = "
        r"'true', which fast_mv sets on this storage because db.w reads its change feed; drop",
    ):
        table_properties(
            Storage(tblproperties={"delta.enableChangeDataFeed": False}), own, feed, "db.w reads its change feed"
        )
    with pytest.raises(ConfigError, match=r"^tblproperties 'DBT_IVM.definition': fast_mv records .* dbt_ivm\.\*"):
        Storage(tblproperties={"a": "1", "DBT_IVM.definition": "x"})
    with pytest.raises(ConfigError, match="tblproperties must be a mapping"):
        Storage(tblproperties=["a"])  # type: ignore[arg-type]
    select = analyze("select o.id from db.o o", SCHEMA).query
    create = render.create_backing(TableName("db", "v__ivm"), select, {"x": "1"})
    assert "'delta.enableDeletionVectors'='true'" in render.sql(create)


def test_partition_by_and_liquid_clustered_by_on_the_storages_create():
    plan = analyze(JOIN, SCHEMA)
    stored = rules_for(plan).build_select(plan, {"db.o": 1, "db.c": 2}).named_selects
    backing = TableName("db", "v__ivm")
    select = analyze("select o.id from db.o o", SCHEMA).query

    def create(storage: Storage) -> str:
        return render.sql(render.create_backing(backing, select, {}, layout_properties(storage, plan, stored)))

    assert "PARTITIONED BY (`name`)" in create(Storage(partition_by="NAME"))
    assert "CLUSTER BY (`id`, `name`)" in create(Storage(liquid_clustered_by=["id", "name"]))
    assert "PARTITIONED" not in create(Storage()) and "CLUSTER" not in create(Storage())
    with pytest.raises(ConfigError, match="partition_by and liquid_clustered_by are both set"):
        Storage(partition_by="id", liquid_clustered_by="name")
    with pytest.raises(ConfigError, match=r"partition_by 'amt' is not a column of the model"):
        layout_properties(Storage(partition_by="amt"), plan, stored)
    grouped = analyze("select c.name, count(*) as n from db.c c group by c.name", SCHEMA)
    keys = rules_for(grouped).build_select(grouped, {"db.c": 1}).named_selects
    with pytest.raises(ConfigError, match=r"^liquid_clustered_by 'name': this view's storage holds the column under"):
        layout_properties(Storage(liquid_clustered_by="name"), grouped, keys)


def test_unlimited_puts_back_the_relations_of_dbts_empty_subqueries():
    limited = (
        "select o.id, c.name from (select * from `db`.`o` where false limit 0) o "
        "join (select * from `db`.`c` where false limit 0) as c on o.cid = c.cid "
        "where o.id in (select id from (select * from `db`.`x` where false limit 0))"
    )
    assert unlimited(limited) == (
        "SELECT o.id, c.name FROM `db`.`o` AS o JOIN `db`.`c` AS c ON o.cid = c.cid "
        "WHERE o.id IN (SELECT id FROM `db`.`x`)"
    )
    # anything else stays, and is refused as a LIMIT by the analysis as before
    for kept in (
        "select a from (select * from `db`.`o` where false limit 1) t",
        "select a from (select * from `db`.`o` where true limit 0) t",
        "select a from (select a from `db`.`o` where false limit 0) t",
        "select a from (select * from `db`.`o` where false order by a limit 0) t",
    ):
        assert unlimited(kept) == render.sql(parse(kept))
    with pytest.raises(UnsupportedView):
        unlimited("select from where")
