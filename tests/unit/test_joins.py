"""`classes/joins.py`: the delta terms, the identity filter, value ranges and key narrowing of join views."""

from __future__ import annotations

import datetime
from decimal import Decimal

from dbt_ivm import analyze, render
from dbt_ivm.classes import joins, outer_joins
from dbt_ivm.classes.keys import key_pieces
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.ir import TableName
from tests.unit.views import JOIN, OLD, SCHEMA, SELF


def test_unchanged_sources_produce_no_delta():
    assert joins.delta_select(analyze(JOIN, SCHEMA), {"db.o": 3, "db.c": 5}, {"db.o": 3, "db.c": 5}) is None


def test_one_term_per_changed_occurrence():
    """A self-join has a telescoping term per occurrence: both read the same change feed."""
    sql = render.sql(joins.delta_select(analyze(SELF, SCHEMA), {"db.o": 1}, {"db.o": 2}))
    assert sql.count("TABLE_CHANGES") == 2 and sql.count("UNION ALL") == 1
    # the term of the 2nd occurrence reads the 1st at the new version, the 1st term the 2nd at the old
    assert "VERSION AS OF 2" in sql and "VERSION AS OF 1" in sql


def test_identity_filter_names_each_changed_occurrence():
    plan = analyze(JOIN, SCHEMA)
    both = render.sql(joins.identity_filter(plan, {0: [5, -3, 5], 1: [9]}, "t"))
    assert both == "(`t`.`__ivm_rid_0` IN (-3, 5) OR `t`.`__ivm_rid_1` IN (9))"
    assert render.sql(joins.identity_filter(plan, {0: [], 1: [9]})) == "(`__ivm_rid_1` IN (9))"
    assert render.sql(joins.identity_filter(plan, {0: []})) == "FALSE"


def test_the_merge_narrows_the_stored_rows_to_the_change_sets_value_ranges():

    plan = analyze(JOIN, SCHEMA)
    types = {"id": "bigint", "amt": "double", "name": "string"}
    assert joins.ranged_columns(plan, types) == {"id": "bigint", "name": "string"}
    stats = render.sql(joins.delta_stats("d", (), {"id": "bigint", "name": "string"}))
    assert "MIN(`id`) AS lo_0, MAX(`id`) AS hi_0, COUNT(*) - COUNT(`id`) > 0 AS nulls_0" in stats
    row = {"lo_0": -3, "hi_0": 7, "nulls_0": False, "lo_1": "a b", "hi_1": "x", "nulls_1": True}
    ranged = {"id": "bigint", "name": "string"}
    ranges = [render.sql(r) for r in joins.value_ranges(ranged, row, "t")]
    assert ranges == ["`t`.`id` BETWEEN -3 AND 7", "(`t`.`name` IS NULL OR `t`.`name` BETWEEN 'a b' AND 'x')"]
    only_nulls = {"lo_0": None, "hi_0": None, "nulls_0": True}
    assert [render.sql(r) for r in joins.value_ranges({"id": "bigint"}, only_nulls, "t")] == ["`t`.`id` IS NULL"]
    # values a literal could not write exactly leave the column unfiltered
    for lo, hi in (("it's", "z"), ("a", "back\\slash"), (0.5, 1.5), (True, True)):
        assert joins.value_ranges({"c": "string"}, {"lo_0": lo, "hi_0": hi, "nulls_0": False}, "t") == []
    dates = {"lo_0": datetime.date(2024, 1, 2), "hi_0": datetime.date(2024, 3, 4), "nulls_0": False}
    assert render.sql(joins.value_ranges({"d": "date"}, dates, "t")[0]) == (
        "`t`.`d` BETWEEN CAST('2024-01-02' AS DATE) AND CAST('2024-03-04' AS DATE)"
    )
    money = {"lo_0": Decimal("-1.25"), "hi_0": Decimal("7.50"), "nulls_0": False}
    assert render.sql(joins.value_ranges({"m": "decimal(9,2)"}, money, "t")[0]) == "`t`.`m` BETWEEN -1.25 AND 7.50"
    merge = render.sql(joins.merge_statement(plan, TableName("db", "v__ivm"), "d", None, {"id": "bigint"}, row))
    assert merge.count("BETWEEN -3 AND 7") == 1 and "BETWEEN 'a b'" not in merge
    # the probe whether the change set only appends narrows the same way, per changed occurrence
    narrow = joins.value_ranges({"id": "bigint"}, row, "t")
    probe = render.sql(joins.existing_identities(plan, TableName("db", "v__ivm"), {0: "c0", 1: "c1"}, narrow))
    assert probe.count("`t`.`id` BETWEEN -3 AND 7") == 2 and probe.count("`t`.`__ivm_rid_") == 2
    assert "BETWEEN" not in render.sql(joins.existing_identities(plan, TableName("db", "v__ivm"), {0: "c0"}))
    outer = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)
    matches = render.sql(outer_joins.stored_matches(outer, TableName("db", "v__ivm"), "d", narrow))
    assert matches.endswith("WHERE `t`.`id` BETWEEN -3 AND 7")


def test_a_timestamps_value_range_is_its_instant_and_a_timestamp_ntzs_its_text():
    """No time zone between the change set's bounds and the MERGE's: a timestamp's bound is its
    microseconds since the epoch; a timestamp_ntz has no zone, its text reads back as itself."""
    stats = render.sql(joins.delta_stats("d", (), {"ts": "timestamp", "n": "timestamp_ntz"}))
    assert "UNIX_MICROS(MIN(`ts`)) AS lo_0, UNIX_MICROS(MAX(`ts`)) AS hi_0" in stats
    assert "CAST(MIN(`n`) AS STRING) AS lo_1" in stats
    row = {"lo_0": -5, "hi_0": 1709251200000000, "nulls_0": True, "lo_1": "2024-01-01 00:00:00", "nulls_1": False}
    row["hi_1"] = "2024-01-02 03:04:05.25"
    assert [render.sql(r) for r in joins.value_ranges({"ts": "timestamp", "n": "timestamp_ntz"}, row, "t")] == [
        "(`t`.`ts` IS NULL OR `t`.`ts` BETWEEN TIMESTAMP_MICROS(-5) AND TIMESTAMP_MICROS(1709251200000000))",
        "`t`.`n` BETWEEN CAST('2024-01-01 00:00:00' AS TIMESTAMP_NTZ) "
        "AND CAST('2024-01-02 03:04:05.25' AS TIMESTAMP_NTZ)",
    ]
    for lo in ("+10000-01-01 00:00:00", "2024-01-01T00:00:00Z", None):
        unread = {"lo_0": lo, "hi_0": "2024-01-01 00:00:00", "nulls_0": False}
        assert joins.value_ranges({"n": "timestamp_ntz"}, unread, "t") == []


def test_a_terms_other_sources_are_narrowed_to_the_keys_its_change_rows_join():
    """`joins.narrowing`: equalities every view row satisfies, of plain columns of one exact type."""
    keys = terms_for(analyze(JOIN, SCHEMA)).join_keys()
    assert keys == {0: [("cust", "c", "cid", "int")], 1: [("cid", "o", "cust", "int")]}
    implicit = analyze("select o.id, c.name from db.o o, db.c c where o.cust = c.cid and o.note = c.name", SCHEMA)
    assert [k[0] for k in terms_for(implicit).join_keys()[0]] == ["cust", "note"]
    for unsafe in (
        "select o.id, c.name from db.o o join db.c c on o.cust = c.cid or o.id = c.cid",  # not every row
        "select o.id from db.o o join db.c c on o.amt = c.cid",  # double = int: no exact bound
        "select o.id from db.o o join db.c c on o.cust + 0 = c.cid",  # not a plain column
    ):
        assert terms_for(analyze(unsafe, SCHEMA)).join_keys() == {}, unsafe
    # a window view's rows are its windows' SELECT's, also under a query over them (keep-the-latest)
    latest = analyze(
        "select id, name from (select o.id, c.name, row_number() over (partition by c.name order by o.id) as rn "
        "from db.o o join db.c c on o.cust = c.cid) d where rn = 1",
        SCHEMA,
    )
    assert latest.windows is not None and terms_for(latest).join_keys() == keys
    # over an outer join: each side by the other's range, and itself for the compensation's reads
    outer = terms_for(analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)).join_keys()
    assert outer == {
        0: [("cust", "c", "cid", "int"), ("cust", "o", "cust", "int")],
        1: [("cid", "o", "cust", "int"), ("cid", "c", "cid", "int")],
    }
    stats = joins.key_stats({0: "chg0"}, keys)
    assert stats is not None and "MIN(`__ivm_v`) AS lo_0_0" in render.sql(stats)
    narrow = joins.key_ranges({0: "chg0"}, keys, [{"p": 0, "lo_0_0": 3, "hi_0_0": 9}])
    delta = render.sql(
        joins.delta_select(analyze(JOIN, SCHEMA), OLD, {"db.o": 4, "db.c": 5}, {0: "chg0"}, narrow=narrow)
    )
    assert "FROM `db`.`c` VERSION AS OF 5 WHERE `cid` BETWEEN 3 AND 9)" in delta
    # no value of the key (the change set empty after netting, or NULL in every row): no row joins
    for rows in ([], [{"p": None, "lo_0_0": None, "hi_0_0": None}]):
        narrow = joins.key_ranges({0: "chg0"}, keys, rows)
        assert [render.sql(e) for e in narrow[0]["c"]] == ["`cid` BETWEEN NULL AND NULL"]
    # rows that do not answer for the key at all (another key's only): nothing narrowed by it
    assert joins.key_ranges({0: "chg0"}, keys, [{"p": 0, "lo_1_0": 5, "hi_1_0": 5}]) == {}


def test_a_change_in_far_apart_places_narrows_to_each_place():
    """`keys.key_pieces`: the change set's keys in pieces of their span; pieces next to each
    other are one range, an empty piece between two splits them; an inexact bound narrows
    nothing, since every piece must be covered."""
    keys = terms_for(analyze(JOIN, SCHEMA)).join_keys()
    rows = [
        {"p": 31, "lo_0_0": 900, "hi_0_0": 901},
        {"p": 0, "lo_0_0": 3, "hi_0_0": 9},
        {"p": 1, "lo_0_0": 11, "hi_0_0": 12},
        {"p": 4, "lo_0_0": None, "hi_0_0": None, "lo_1_0": 5, "hi_1_0": 5},  # another key's piece
    ]
    narrow = joins.key_ranges({0: "chg0"}, keys, rows)
    assert [render.sql(e) for e in narrow[0]["c"]] == ["(`cid` BETWEEN 3 AND 12 OR `cid` BETWEEN 900 AND 901)"]
    assert key_pieces([*rows, {"p": 7, "lo_0_0": 1.5, "hi_0_0": 2.5}], "0_0", "int") is None
    # a number's pieces are equal widths of its span; NULLs and a span of one value land in the first
    sql = render.sql(joins.key_stats({0: "chg0"}, keys))
    assert "NULLIF(MAX(CAST(`cust` AS DOUBLE)) OVER () - MIN(CAST(`cust` AS DOUBLE)) OVER (), 0)) * 32)), 0)" in sql
    # text has no width to cut: one piece; each key's columns are NULL in the others' rows
    texts = terms_for(analyze("select o.id from db.o o join db.c c on o.note = c.name", SCHEMA)).join_keys()
    sql = render.sql(joins.key_stats({0: "chg0", 1: "chg1"}, texts))
    assert "SELECT `note` AS `__ivm_v`, 0 AS `__ivm_p`" in sql and "OVER ()" not in sql
    assert "CAST(NULL AS STRING) AS lo_1_0" in sql and "CAST(NULL AS STRING) AS lo_0_0" in sql
