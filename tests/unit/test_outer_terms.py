"""`classes/outer_terms.py`: the change terms over outer joins (the unique-key flip, the counted compensation)."""

from __future__ import annotations

from dbt_ivm import analyze, render
from dbt_ivm.classes import flips, joins, outer_terms
from dbt_ivm.classes.terms import terms_for
from dbt_ivm.ir import OuterJoin
from tests.unit.views import SCHEMA


def test_unique_key_flip_keys_and_sql():
    """The flip applies where a source is the padded side of an outer join whose other side is
    preserved, on its columns ON equates with the other side; it reads that source not at all."""
    flip_keys = flips.flip_keys
    left = analyze("select o.id, c.name from db.o o left join db.c c on c.cid = o.cust and c.name <> 'x'", SCHEMA)
    assert flip_keys(left) == {1: ("cid",)}
    full = analyze("select o.id, c.name from db.o o full join db.c c on o.cust = c.cid", SCHEMA)
    assert flip_keys(full) == {0: ("cust",), 1: ("cid",)}
    tolerant = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid or c.cid is null", SCHEMA)
    assert flip_keys(tolerant) == {}
    nested = "select o.id from db.o o left join (db.c c join db.o p on p.id = c.cid) on c.cid = o.cust"
    assert flip_keys(analyze(nested, SCHEMA)) == {}  # the padded side is a join, not one source

    old, new = {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}
    general = render.sql(joins.delta_select(left, old, new, {1: "chg"}))
    flipped = render.sql(joins.delta_select(left, old, new, {1: "chg"}, flips=frozenset({1})))
    assert "`db`.`c` VERSION AS OF" in general and "LEFT SEMI JOIN" in general
    assert "`db`.`c` VERSION AS OF" not in flipped and "LEFT SEMI JOIN" not in flipped
    assert "`__ivm_flow`" in flipped
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg"), (1, 2, "chg")]))
    assert check.count("`db`.`c` VERSION AS OF") == 2 and "HAVING COUNT(*) > 1" in check
    # read within the change set's range of the key (`outer_join_keys`' filters on c itself)
    narrow = joins.key_ranges({1: "chg"}, terms_for(left).join_keys(), [{"p": 0, "lo_1_0": 3, "hi_1_0": 9}])
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg")], narrow))
    assert "WHERE `cid` BETWEEN 3 AND 9" in check, check
    # and within each piece, when the change lies in several (`keys.key_pieces`)
    pieces = [{"p": 0, "lo_1_0": 3, "hi_1_0": 9}, {"p": 31, "lo_1_0": 90, "hi_1_0": 91}]
    narrow = joins.key_ranges({1: "chg"}, terms_for(left).join_keys(), pieces)
    check = render.sql(flips.duplicate_keys(left, flip_keys(left), [(1, 1, "chg")], narrow))
    assert "WHERE (`cid` BETWEEN 3 AND 9 OR `cid` BETWEEN 90 AND 91)" in check, check
    # the change set is asked first: key values it inserts, or deletes, more than once repeat
    # in the source after the change, or before it, without reading the source
    first = render.sql(flips.repeated_in_change(left, flip_keys(left), {1: "chg"}))
    assert "VERSION AS OF" not in first and "FROM `chg` WHERE NOT `cid` IS NULL GROUP BY `cid`" in first, first
    assert "HAVING SUM(IF(`__ivm_d` > 0, `__ivm_d`, 0)) > 1 OR SUM(IF(`__ivm_d` < 0, -`__ivm_d`, 0)) > 1" in first


def test_the_compensation_counts_matches_where_on_is_key_equalities_and_one_sided_conditions():
    """`outer_terms.counted_on`: ON's equalities of the changed source's columns with the other
    side's, and its conditions on the changed source alone; then the compensation reads the
    source once, before the change (`_Term._counted`). Otherwise the general one, at both."""
    left = analyze("select o.id, c.name from db.o o left join db.c c on c.cid = o.cust and c.name <> 'x'", SCHEMA)
    node = left.tree
    assert isinstance(node, OuterJoin)
    keys, own = outer_terms.counted_on(left, node, 1)
    assert [(k, render.sql(y)) for k, y in keys] == [("cid", "`o`.`cust`")]
    assert [render.sql(c) for c in own] == ["`c`.`name` <> 'x'"]
    assert outer_terms.counted_on(left, node, 0) is None  # o is not padded by this join
    old, new = {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}
    counted = render.sql(joins.delta_select(left, old, new, {1: "chg"}))
    assert "`db`.`c` VERSION AS OF 1" in counted and "`db`.`c` VERSION AS OF 2" not in counted
    assert "WHERE `c`.`name` <> 'x' GROUP BY `c`.`cid`" in counted and "`__ivm_dn`" in counted
    # a conjunct that reads both sides also where parentheses group it with an equality: counted
    # by key alone, `(c.cid = o.cust and c.name < o.note)` would count rows the `<` rejects
    both_sides = (
        "c.cid = o.cust and c.name < o.note",
        "(c.cid = o.cust and c.name < o.note)",
        "(c.cid = o.cust and c.name < o.note) and c.name <> 'x'",
        "c.name <> 'x' and (c.cid = o.cust and (c.name < o.note))",
    )
    for on in (*both_sides, "c.cid = o.cust or c.cid is null", "c.name <> o.note"):
        general = analyze(f"select o.id, c.name from db.o o left join db.c c on {on}", SCHEMA)
        assert outer_terms.counted_on(general, general.tree, 1) is None, on
        sql = render.sql(joins.delta_select(general, old, new, {1: "chg"}))
        assert "`db`.`c` VERSION AS OF 2" in sql and "`__ivm_dn`" not in sql
    full = analyze("select o.id, c.name from db.o o full join db.c c on o.cust = c.cid", SCHEMA)
    assert [k for k, _ in outer_terms.counted_on(full, full.tree, 0)[0]] == ["cust"]  # either side of a FULL join
    grouped = analyze("select o.id, c.name from db.o o left join db.c c on (c.cid = o.cust and c.name <> 'x')", SCHEMA)
    keys, own = outer_terms.counted_on(grouped, grouped.tree, 1)  # parentheses hide no equality
    assert [k for k, _ in keys] == ["cid"] and [render.sql(c) for c in own] == ["`c`.`name` <> 'x'"]
    assert flips.flip_keys(grouped) == {1: ("cid",)}


def test_the_change_sets_repeats_are_asked_in_the_key_ranges_query():
    """`joins.narrowed_flips`: whether a change set repeats a flip key rides on the key ranges'
    query (one round trip); the source is read (`duplicate_keys`) only where none repeats, and
    the check is asked alone where the ranges' query returns no row."""
    from dbt_ivm.classes.rules import Refresh
    from dbt_ivm.ir import TableName

    left = analyze("select o.id, c.name from db.o o left join db.c c on c.cid = o.cust", SCHEMA)

    def run(*answers: list[dict]) -> tuple[list[str], frozenset[int], dict]:
        asked: list[str] = []
        queue = list(answers)

        def query(sql: str) -> list[dict]:
            asked.append(sql)
            return queue.pop(0)

        refresh = Refresh(
            left, TableName("db", "v__ivm"), {"db.o": 1, "db.c": 1}, {"db.o": 1, "db.c": 2}, {1: "chg"},
            lambda role: role, lambda _: None, query, lambda _: {},
        )  # fmt: skip
        narrow, flipped, _ = joins.narrowed_flips(refresh)
        return asked, flipped, narrow

    ranges = {"p": 0, "lo_1_0": 3, "hi_1_0": 9}
    asked, flipped, narrow = run([{**ranges, flips.REPEATS: "1"}])
    assert len(asked) == 1 and "`__ivm_repeats`" in asked[0] and "FROM `chg` WHERE NOT `cid` IS NULL" in asked[0]
    assert flipped == frozenset() and narrow  # repeats: the general compensation, c not read
    asked, flipped, _ = run([{**ranges, flips.REPEATS: ""}], [])
    assert len(asked) == 2 and "VERSION AS OF" in asked[1] and flipped == frozenset({1})
    asked, flipped, _ = run([], [{"i": 1}])  # no row: the check alone
    assert len(asked) == 2 and asked[1].startswith("SELECT DISTINCT `i`") and flipped == frozenset()
    assert flips.repeats_in([{flips.REPEATS: "0,2"}]) == frozenset({0, 2}) and flips.repeats_in([]) is None
