"""The model's functions reach Spark as written; functions the engine cannot vouch for are refused.

No Spark: tests/test_function_fidelity.py runs the same promise on Spark for 150+ expressions.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dbt_ivm import render, verbatim
from dbt_ivm.analyze import analyze
from dbt_ivm.errors import UnsupportedView

SCHEMA = {"db.t": {"id": "int", "ts": "timestamp", "x": "double", "s": "string", "a": "array<int>"}}

# Each was rewritten by sqlglot's Spark round trip into SQL with another value.
KEPT = [
    ("to_char(t.ts, 'yyyy-MM')", "TO_CHAR(`t`.`ts`, 'yyyy-MM')"),
    ("log10(t.x)", "LOG10(`t`.`x`)"),
    ("to_json(parse_json(t.s))", "TO_JSON(PARSE_JSON(`t`.`s`))"),
    ("array_size(t.a)", "ARRAY_SIZE(`t`.`a`)"),
    ("nvl(t.s, 'x')", "NVL(`t`.`s`, 'x')"),
    ("log2(t.x)", "LOG2(`t`.`x`)"),
    ("signum(t.x)", "SIGNUM(`t`.`x`)"),
    ("ceiling(t.x)", "CEILING(`t`.`x`)"),
    ("substr(t.s, 2)", "SUBSTRING(`t`.`s`, 2)"),  # Spark's SUBSTR and SUBSTRING are one function
    ("to_unix_timestamp(t.ts, 'yyyy')", "TO_UNIX_TIMESTAMP(`t`.`ts`, 'yyyy')"),
    ("regexp_like(t.s, 'a+')", "REGEXP_LIKE(`t`.`s`, 'a+')"),
    ("timestampadd(day, 1, t.ts)", "TIMESTAMPADD(day, 1, `t`.`ts`)"),
    ("dateadd(day, 1, t.ts)", "DATEADD(day, 1, `t`.`ts`)"),
    ("decode(t.id, 1, 'one', 'other')", "DECODE(`t`.`id`, 1, 'one', 'other')"),
    ("position('a' in t.s)", "POSITION('a' IN `t`.`s`)"),
]


@pytest.mark.parametrize("written,expected", KEPT, ids=[k[0] for k in KEPT])
def test_functions_are_written_back_as_the_model_wrote_them(written, expected):
    plan = analyze(f"select t.id, {written} as e, 1 as one from db.t t where {written} is not null", SCHEMA)
    assert render.sql(plan.outputs[1].expression) == expected
    assert expected in plan.normalized_sql.split(" WHERE ")[1]


def test_filtering_on_a_formatted_date_keeps_the_format():
    plan = analyze("select t.id from db.t t where to_char(t.ts, 'yyyy') = '2024'", SCHEMA)
    assert "TO_CHAR(`t`.`ts`, 'yyyy') = '2024'" in plan.normalized_sql


def test_what_sqlglot_cannot_write_in_spark_raises_instead_of_a_warning():
    to_char = exp.ToChar(this=exp.column("ts"), format=exp.Literal.string("yyyy"))
    with pytest.raises(UnsupportedView, match="cannot write back unchanged"):
        render.sql(exp.select(to_char))


def test_a_typed_expression_written_as_another_is_refused():
    """The round-trip proof: a tree whose Spark text reads back as another tree is refused."""
    tree = sqlglot.parse_one("select id from db.t", read=verbatim.DIALECT)
    verbatim.check_round_trip(tree)
    # sqlglot's typed log10(x): written as LOG(10, x), which Spark reads as another function
    tree.select(exp.Log(this=exp.Literal.number(10), expression=exp.column("x")), copy=False)
    with pytest.raises(UnsupportedView, match=r"expression LOG\(10, x\), which fast_mv cannot write back"):
        verbatim.check_round_trip(tree)


@pytest.mark.parametrize(
    "sql,named",
    [
        ("select t.id, my_udf(t.x) as e from db.t t", "my_udf()"),
        ("select t.id from db.t t where my_udf(t.x) > 0", "my_udf()"),
        ("select t.id, mydb.upper(t.s) as e from db.t t", "mydb.upper()"),  # qualified: a UDF, not the built-in
    ],
)
def test_unknown_functions_are_refused_unless_declared(sql, named):
    with pytest.raises(
        UnsupportedView,
        match=rf"function {named.replace('(', '[(]').replace(')', '[)]')}, "
        r"which is not a Spark built-in .*deterministic_functions=",
    ):
        analyze(sql, SCHEMA)
    declared = named.rstrip("()")
    plan = analyze(sql, SCHEMA, functions=[declared.upper()])
    assert plan.functions == (declared,)


def test_declared_functions_enter_the_definition_hash():
    sql = "select t.id, my_udf(t.x) as e from db.t t"
    one = analyze(sql, SCHEMA, functions=["my_udf"])
    two = analyze(sql, SCHEMA, functions=["my_udf", "other_udf"])
    assert one.definition_hash != two.definition_hash
    assert analyze("select t.id from db.t t", SCHEMA).functions == ()


@pytest.mark.parametrize(
    "sql,construct",
    [
        ("select t.id, uuid() as u from db.t t", "non-deterministic function uuid()"),
        ("select t.id, randstr(3) as u from db.t t", "non-deterministic function randstr()"),
        ("select t.id, collect_list(t.x) as u from db.t t group by t.id", "aggregate collect_list()"),
        ("select t.id, rank() as u from db.t t", "window function rank()"),
        ("select t.id, posexplode(t.a) from db.t t", "generator or LATERAL"),
    ],
)
def test_spark_builtins_that_cannot_be_maintained_are_refused_by_name(sql, construct):
    with pytest.raises(UnsupportedView, match=construct.replace("(", "[(]").replace(")", "[)]")):
        analyze(sql, SCHEMA)


def test_a_merged_cte_keeps_its_functions():
    """sqlglot merges no subquery with a plain call (it could return rows): the engine's may."""
    plan = analyze("with x as (select id, log10(x) as l from db.t) select x.id, x.l from x", SCHEMA)
    assert plan.normalized_sql == "SELECT `t`.`id` AS `id`, LOG10(`t`.`x`) AS `l` FROM `db`.`t` AS `t`"


def _conjunction(kind: type[exp.Connector], *operands: str) -> exp.Expr:
    """`a kind (b kind c)` as a tree without parentheses, as a rewrite (not the parser) makes it."""
    tail = exp.column(operands[-1])
    for name in reversed(operands[:-1]):
        tail = kind(this=exp.column(name), expression=tail)
    return tail


@pytest.mark.parametrize("kind", [exp.And, exp.Or])
def test_a_right_nested_and_or_chain_reads_back_as_itself(kind):
    """`x AND (y AND z)` is written `x AND y AND z` and read back as `(x AND y) AND z`: one value
    (AND and OR associate in Spark's three-valued logic), so the round trip accepts it."""
    tree = exp.select("id").from_("db.t").where(_conjunction(kind, "x", "y", "z"))
    verbatim.check_round_trip(tree)


def test_a_regrouping_that_changes_meaning_is_still_refused():
    """`x AND (y OR z)` without its parentheses is written `x AND y OR z`: another predicate."""
    tree = (
        exp.select("id").from_("db.t").where(exp.And(this=exp.column("x"), expression=_conjunction(exp.Or, "y", "z")))
    )
    with pytest.raises(UnsupportedView, match="cannot write back unchanged"):
        verbatim.check_round_trip(tree)
    minus = exp.Sub(this=exp.column("x"), expression=exp.Sub(this=exp.column("y"), expression=exp.column("z")))
    with pytest.raises(UnsupportedView, match="cannot write back unchanged"):
        verbatim.check_round_trip(exp.select(minus.as_("d")).from_("db.t"))


def test_nested_calls_all_become_plain_calls_and_back():
    """`as_calls` converts every plain call, the ones inside a converted call too (sqlglot's
    `transform` does not descend into a node it replaced), and `as_anonymous` undoes all of them."""
    tree = sqlglot.parse_one(
        "select upper(lower(upper(s))) as k, md5(concat(s, s)) as h from db.t", read=verbatim.DIALECT
    )
    calls = verbatim.as_calls(tree.copy())
    assert not list(calls.find_all(exp.Anonymous))
    assert len(list(calls.find_all(verbatim.Call))) == 5
    back = verbatim.as_anonymous(calls)
    assert not list(back.find_all(verbatim.Call))
    assert back == tree
    assert verbatim.as_anonymous(verbatim.as_calls(exp.Anonymous(this="f"))) == exp.Anonymous(this="f")


def test_a_merged_subquery_keeps_nested_calls():
    plan = analyze("select * from (select upper(upper(t.s)) as k from db.t t) s", SCHEMA)
    assert plan.normalized_sql == "SELECT UPPER(UPPER(`t`.`s`)) AS `k` FROM `db`.`t` AS `t`"


def test_an_operand_that_binds_more_loosely_than_its_operator_is_written_in_parentheses():
    """sqlglot writes a tree as it stands: an operand the engine puts under an operator (a GROUP BY
    `a OR b` compared with a stored key, a PARTITION BY `NOT f`) would read back in Spark as
    another grouping, `k <=> a OR b` as `(k <=> a) OR b`. `Verbatim.Generator` parenthesizes it."""
    key = exp.column("k")
    for operand, written in (
        ("a OR b", "k IS NOT DISTINCT FROM (a OR b)"),
        ("a > 0 AND b > 0", "k IS NOT DISTINCT FROM (a > 0 AND b > 0)"),
        ("NOT f", "k IS NOT DISTINCT FROM (NOT f)"),
        ("x IS NULL", "k IS NOT DISTINCT FROM (x IS NULL)"),
        ("x IN (1, 2)", "k IS NOT DISTINCT FROM (x IN (1, 2))"),
    ):
        tree = exp.NullSafeEQ(this=key.copy(), expression=sqlglot.parse_one(operand, read=verbatim.DIALECT))
        assert render.sql(tree) == written
        assert sqlglot.parse_one(written, read=verbatim.DIALECT).expression.unnest() == tree.expression
    assert render.sql(exp.Not(this=sqlglot.parse_one("a AND b", read=verbatim.DIALECT))) == "NOT (a AND b)"
    # what the model wrote is written as it was: nothing else gains parentheses
    model = (
        "SELECT NOT x IS NULL, a = b AND c OR d, x + y * z, a LIKE ANY('p%'), x BETWEEN 1 AND 2 AND y, "
        "s LIKE '%!%%' ESCAPE '!', s NOT ILIKE 'a' ESCAPE '!'"
    )
    assert render.sql(sqlglot.parse_one(model, read=verbatim.DIALECT)) == model
    # a comparison of a comparison gains them, and reads back as itself (parentheses are syntax)
    chained = sqlglot.parse_one("SELECT a = b = c, a % 2 = 0 = f", read=verbatim.DIALECT)
    assert render.sql(chained) == "SELECT (a = b) = c, (a % 2 = 0) = f"
    verbatim.check_round_trip(chained)
