"""The view classes the engine maintains, one module each behind the same interface.

`maintain.Maintainer` pins versions, guards the watermark, stages each moved source's net
change and makes the one commit; what the view stores, how its rows reach `ref()` and how a
change set becomes the one write are the class's (`rules_for(plan)`, the interface in `rules`),
and `Maintainer` never names a class. A new class is one more module and one more line in `_RULES`.

The modules, each importing only those above it: `rules` (the interface); `relations` (snapshots
and the builders terms combine them with); `change_stats` (a change set's statistics and value
ranges); `keys` (join keys and the narrowing by them); `identities` (stored rows found by
identity); `jointree` (the join tree at refresh time); `flips` (the unique-key flip);
`outer_terms` (terms over outer joins); `terms` (the one place that tells inner terms from outer
ones); `changes` (change feeds and the telescoping sum of terms); then the classes: `joins`,
`outer_joins`, `aggregate`, `windows`, `semijoins`, `setops`.
"""

from __future__ import annotations

from dbt_ivm.classes import aggregate, joins, outer_joins, semijoins, setops, windows
from dbt_ivm.classes.rules import NULL_KEY_FALLBACK as NULL_KEY_FALLBACK
from dbt_ivm.classes.rules import Appender as Appender
from dbt_ivm.classes.rules import Describe as Describe
from dbt_ivm.classes.rules import Refresh as Refresh
from dbt_ivm.classes.rules import Stage as Stage
from dbt_ivm.classes.rules import ViewRules as ViewRules
from dbt_ivm.classes.rules import Write as Write
from dbt_ivm.classes.rules import WritePath as WritePath
from dbt_ivm.classes.rules import stager as stager
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import ViewClass, ViewPlan

_RULES: dict[ViewClass, ViewRules] = {
    ViewClass.SINGLE_SOURCE: joins.RULES,
    ViewClass.INNER_JOIN: joins.RULES,
    ViewClass.OUTER_JOIN: outer_joins.RULES,
    ViewClass.AGGREGATE: aggregate.RULES,
    ViewClass.AGGREGATE_JOIN: aggregate.RULES,
    ViewClass.WINDOW: windows.RULES,
    ViewClass.SEMI_JOIN: semijoins.RULES,
    ViewClass.SET_OPERATION: setops.RULES,
}


def rules_for(plan: ViewPlan) -> ViewRules:
    """The class's rules; a class whose refresh is not implemented is refused."""
    if plan.view_class not in _RULES:
        raise UnsupportedView(
            f"{plan.view_class.value} views are not maintained by this release",
            "use materialized='table' for this model for now",
        )
    return _RULES[plan.view_class]
