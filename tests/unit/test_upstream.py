"""A fast_mv over another fast_mv: the upstream is recognized from its view's text, and read
through that select over its storage's versions and change feed."""

from __future__ import annotations

from dbt_ivm import consistency
from dbt_ivm.analyze import analyze, parse
from dbt_ivm.classes import changes, joins
from dbt_ivm.classes.aggregate_view import view_select as aggregate_view
from dbt_ivm.classes.relations import snapshot_relation
from dbt_ivm.ir import TableName
from dbt_ivm.render import sql
from dbt_ivm.upstream import at_version, feed, fingerprint, parse_upstream, with_upstreams

STG = TableName("db", "stg")
STORAGE = TableName("db", "stg__ivm")
SCHEMA = {"db.a": {"k": "int", "v": "string"}, "db.b": {"k": "int", "w": "string"}}


def _join_view_text() -> str:
    plan = analyze(parse("select a.k, b.w from db.a a join db.b b on a.k = b.k"), SCHEMA)
    return sql(joins.view_select(plan, STORAGE))


def _aggregate_view_text() -> str:
    plan = analyze(parse("select v, count(*) as n from db.a group by v having count(*) > 1"), SCHEMA)
    return sql(aggregate_view(plan, STORAGE, {}))


def test_a_view_over_its_own_storage_is_an_upstream_and_no_other_view_is():
    text = _join_view_text()
    found = parse_upstream(STG, text)
    assert found is not None and found.storage == STORAGE and found.select == text
    assert parse_upstream(TableName("db", "other"), text) is None  # another view's storage
    assert parse_upstream(TableName("elsewhere", "stg"), text) is None  # another database's
    assert parse_upstream(STG, "SELECT * FROM db.stg__ivm JOIN db.b ON true") is None  # two tables
    assert parse_upstream(STG, "SELECT k FROM db.a") is None
    assert parse_upstream(STG, "not sql at all (") is None


def test_an_upstream_is_read_at_a_version_and_over_its_feed_through_its_own_select():
    upstream = parse_upstream(STG, _join_view_text())
    assert upstream is not None
    pinned = sql(at_version(upstream, 7))
    assert "`db`.`stg__ivm` VERSION AS OF 7" in pinned and "EXPLODE(SEQUENCE(1, `__ivm_count`))" in pinned
    changed = sql(feed(upstream, 3, 7))
    assert "TABLE_CHANGES('`db`.`stg__ivm`', 3, 7)" in changed
    assert "EXPLODE(SEQUENCE(1, `__ivm_count`))" in changed and "`_change_type`" in changed
    having = parse_upstream(STG, _aggregate_view_text())
    assert having is not None
    assert "WHERE" in sql(feed(having, 1, 2)), "HAVING holds on the feed's images too"
    assert fingerprint(upstream) != fingerprint(having)


def test_a_downstream_reads_the_upstream_in_the_views_place():
    upstream = parse_upstream(STG, _join_view_text())
    assert upstream is not None
    schema = {"db.stg": {"k": "int", "w": "string"}, "db.b": {"k": "int", "w": "string"}}
    plan = analyze(parse("select s.k, s.w, b.w as w2 from db.stg s join db.b b on s.k = b.k"), schema)
    chained = with_upstreams(plan, {"db.stg": upstream})
    assert chained.versioned == {"db.stg": STORAGE, "db.b": TableName("db", "b")}
    assert chained.definition_hash == plan.definition_hash
    stg = chained.sources[0]
    snapshot = sql(snapshot_relation(stg, 4))
    assert "`db`.`stg__ivm` VERSION AS OF 4" in snapshot and "`db`.`stg` " not in snapshot
    netted = sql(changes.change_select(stg, 3, 4))
    assert "`db`.`stg__ivm`" in netted and "`_change_type`" in netted


def test_the_consistency_query_reads_an_upstream_through_its_select_at_the_consumed_version():
    upstream = parse_upstream(STG, _join_view_text())
    assert upstream is not None
    model = "select s.k, b.w from `db`.`stg` s join db.b on s.k = b.k;"
    pinned = consistency.pin_versions(model, {"db.stg": 4, "db.b": 9}, {"db.stg": upstream})
    assert pinned.startswith("select s.k, b.w from (SELECT ")
    assert "VERSION AS OF 4" in pinned and ") s join db.b VERSION AS OF 9 on s.k = b.k" in pinned
    unaliased = consistency.pin_versions("select k from db.stg", {"db.stg": 2}, {"db.stg": upstream})
    assert unaliased.endswith(") AS `stg`") and "VERSION AS OF 2" in unaliased


def test_the_feed_of_a_window_view_with_a_query_over_its_rows_carries_the_change_type_out():
    """`SELECT … FROM (SELECT …, rn FROM storage) s WHERE rn = 1`: the derived table passes
    `_change_type` to the query over it."""
    from dbt_ivm.classes import windows

    plan = analyze(
        parse(
            "select k, v from (select k, v, row_number() over (partition by k order by v) as rn from db.a) s "
            "where rn = 1"
        ),
        SCHEMA,
    )
    upstream = parse_upstream(STG, sql(windows.view_select(plan, STORAGE)))
    assert upstream is not None
    changed = sql(feed(upstream, 3, 7))
    assert changed.count("`_change_type`") == 2, changed
