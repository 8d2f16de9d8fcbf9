"""`python -m dbt_ivm explain model.sql --schema schema.json`: no Spark needed."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from dbt_ivm.__main__ import main
from tests.unit.cases import SCHEMAS

JOIN = (
    "select o.id as order_id, c.name as customer from eq_shop.orders o "
    "join eq_shop.customers c on o.customer_id = c.id where o.amount > 10"
)
OUTER = "select o.id, c.name from eq_shop.orders o right join eq_shop.customers c on o.customer_id = c.id"
AGGREGATE = (
    "select status, count(*) as n, avg(amount) as mean from eq_shop.orders group by status having sum(amount) > 100"
)
DISTINCT = "select distinct status from eq_shop.orders"
WINDOW = (
    "select s.status from (select status, row_number() over (order by id) as rn\nfrom eq_shop.orders) s "
    "join eq_shop.customers c on s.rn = c.id"
)


@pytest.fixture
def files(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMAS["shop"]))

    def write(sql: str) -> tuple[str, str]:
        model = tmp_path / "model.sql"
        model.write_text(sql)
        return str(model), str(schema)

    return write


def run(capsys, model: str, schema: str) -> tuple[int, str, str]:
    code = main(["explain", model, "--schema", schema])
    out, err = capsys.readouterr()
    return code, out, err


def test_inner_join_model(files, capsys):
    code, out, err = run(capsys, *files(JOIN))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "class: inner-join"
    assert "status:" not in out  # maintained by this release
    assert "  [0] o = eq_shop.orders (preserved); reads id int, customer_id int, amount decimal(10,2)" in lines
    assert "  [1] c = eq_shop.customers (preserved); reads id int, name string" in lines
    tree = lines[lines.index("join tree:") + 1 : lines.index("join tree:") + 5]
    assert tree == [
        "  INNER JOIN group",
        "    o = eq_shop.orders [preserved]",
        "    c = eq_shop.customers [preserved]",
        "    ON `o`.`customer_id` = `c`.`id`",
    ]
    assert "where: `o`.`amount` > 10" in lines
    assert "columns: order_id, customer" in lines
    hidden = lines[lines.index("hidden columns:") + 1 : lines.index("refresh steps:")]
    assert [h.split(":")[0].strip() for h in hidden] == ["__ivm_rid_0", "__ivm_rid_1", "__ivm_count"]
    steps = lines[lines.index("refresh steps:") + 1 :]
    assert "  change to eq_shop.orders:" in steps and "  change to eq_shop.customers:" in steps
    assert any(s.strip().startswith("o: net change feed") and "joined with c" in s for s in steps)
    assert any(s.strip().startswith("apply: one MERGE") for s in steps)
    assert lines[-1].startswith("normalized SQL: SELECT `o`.`id` AS `order_id`")


def test_outer_join_model_shows_the_normalized_tree_and_sides(files, capsys):
    code, out, _ = run(capsys, *files(OUTER))
    assert code == 0
    assert out.startswith("class: outer-join\nsources:")
    assert (
        "  LEFT OUTER JOIN (ON is null-intolerant)\n    c = eq_shop.customers [preserved]\n"
        "    o = eq_shop.orders [null-supplied]\n" in out
    )  # RIGHT JOIN rewritten to LEFT
    assert "[0] o = eq_shop.orders (null-supplied)" in out
    steps = out[out.index("refresh steps:") :]
    assert "o (null-supplied): net change feed" in steps and "c (preserved): net change feed" in steps
    assert "left join on `o`.`customer_id` = `c`.`id`: change rows joined with c" in steps
    assert "NS-compensation: the padded rows of the c rows a change row matches" in steps
    assert "change rows left-joined with o (unmatched: padded)" in steps


def test_aggregate_model_shows_aggregates_having_and_helpers(files, capsys):
    code, out, _ = run(capsys, *files(AGGREGATE))
    assert code == 0
    assert "class: aggregate\n" in out
    assert "group by: `orders`.`status`" in out
    assert "aggregates:\n  COUNT(*): count(*)\n  AVG(`orders`.`amount`): avg\n  SUM(`orders`.`amount`): sum\n" in out
    assert "having: SUM(`orders`.`amount`) > 100" in out
    assert "  __ivm_g_0: group key of `orders`.`status`\n  __ivm_count: rows in the group\n" in out
    for name in ("__ivm_nn_1", "__ivm_a_1", "__ivm_nn_2", "__ivm_a_2"):
        assert f"  {name}: " in out
    assert "    AVG(`orders`.`amount`): sum and non-NULL count += deltas; avg = sum / count when read" in out


def test_distinct_model(files, capsys):
    code, out, _ = run(capsys, *files(DISTINCT))
    assert code == 0
    assert "distinct: one group per distinct output row" in out
    assert "  __ivm_count: rows in the group" in out


def test_refused_model(files, capsys):
    code, out, err = run(capsys, *files(WINDOW))
    assert code == 1
    assert out == ""
    assert err.startswith("refused: fast_mv cannot maintain this model: a subquery or CTE with window functions")
    assert "line 1" in err and "use materialized='table'" in err
    assert err.count("\n") == 1  # one line: cause, position and what to do


def test_missing_source_in_schema_is_refused(files, capsys):
    code, _, err = run(capsys, *files("select id from eq_shop.nope"))
    assert code == 1
    assert "no schema for source eq_shop.nope" in err


def test_model_from_stdin(files, capsys, monkeypatch):
    _, schema = files("")
    monkeypatch.setattr(sys, "stdin", io.StringIO(DISTINCT))
    code, out, _ = run(capsys, "-", schema)
    assert code == 0 and out.startswith("class: aggregate")


def test_the_real_command(files):
    """The module entry point itself: exit codes and streams."""
    model, schema = files(JOIN)
    ok = subprocess.run(
        [sys.executable, "-m", "dbt_ivm", "explain", model, "--schema", schema],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("class: inner-join") and "refresh steps:" in ok.stdout
    model, schema = files(WINDOW)
    refused = subprocess.run(
        [sys.executable, "-m", "dbt_ivm", "explain", model, "--schema", schema],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("refused: ") and "window function" in refused.stderr
