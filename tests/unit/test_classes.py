"""`classes/__init__.py`: every view class has its rules."""

from __future__ import annotations

from dbt_ivm import analyze
from dbt_ivm.classes import aggregate, outer_joins, rules_for
from tests.unit.views import GLOBAL, SCHEMA


def test_every_class_has_its_rules():
    plan = analyze("select o.id, c.name from db.o o left join db.c c on o.cust = c.cid", SCHEMA)
    assert rules_for(plan) is outer_joins.RULES
    plan = analyze(
        "select c.name, count(o.id) as n from db.c c left join db.o o on o.cust = c.cid group by c.name", SCHEMA
    )
    assert rules_for(plan) is aggregate.RULES
    assert rules_for(analyze(GLOBAL, SCHEMA)) is aggregate.RULES
