"""The randomized harness's own comparison (`tests.harness.multiset_diff`), the oracle every
refresh of the randomized runs is checked by: the consistency test's meaning, in Python."""

from __future__ import annotations

from decimal import Decimal

from tests.harness import multiset_diff

NAN, INF = float("nan"), float("inf")


def labels(diff: list) -> list[str]:
    return sorted(d[0] for d in diff)


def test_equal_multisets_in_any_order_with_nulls_nan_and_infinities():
    rows = [(1, "a", 0.5), (1, "a", 0.5), (None, None, None), (2, "b", NAN), (3, "c", INF), (3, "c", -INF)]
    assert multiset_diff(rows, list(reversed(rows)), [2]) == []


def test_duplicates_count():
    assert labels(multiset_diff([(1, "a")], [(1, "a"), (1, "a")], [])) == ["missing from the view"]
    assert labels(multiset_diff([(1, "a"), (1, "a")], [(1, "a")], [])) == ["extra in the view"]


def test_null_equals_only_null():
    assert labels(multiset_diff([(None,)], [(0,)], [])) == ["extra in the view", "missing from the view"]
    assert labels(multiset_diff([(1, None)], [(1, 0.0)], [1])) == ["differs beyond the float tolerance"]


def test_floats_match_within_the_tolerance_and_nan_and_infinities_only_themselves():
    sums = 0.1 + 0.2  # 0.30000000000000004: a sum maintained by deltas adds in another order
    assert multiset_diff([("g", sums)], [("g", 0.3)], [1]) == []
    assert labels(multiset_diff([("g", 0.3001)], [("g", 0.3)], [1])) == ["differs beyond the float tolerance"]
    assert labels(multiset_diff([("g", NAN)], [("g", INF)], [1])) == ["differs beyond the float tolerance"]
    assert labels(multiset_diff([("g", INF)], [("g", -INF)], [1])) == ["differs beyond the float tolerance"]
    assert labels(multiset_diff([("g", 1e300)], [("g", INF)], [1])) == ["differs beyond the float tolerance"]
    # relative however small: a sum of 3e-10 that drifted to 3.49e-10 is 16 % off
    assert labels(multiset_diff([("g", 3.49e-10)], [("g", 3e-10)], [1])) == ["differs beyond the float tolerance"]
    assert multiset_diff([("g", 1e-300)], [("g", 1e-300 * (1 + 1e-12))], [1]) == []
    assert multiset_diff([("g", 0.0)], [("g", -0.0)], [1]) == []


def test_floats_pair_in_order_within_rows_equal_on_the_other_columns():
    view = [("g", 1.0, 2.0), ("g", None, 5.0), ("g", NAN, 1.0)]
    model = [("g", NAN, 1.0), ("g", 1.0 + 1e-12, 2.0), ("g", None, 5.0)]
    assert multiset_diff(view, model, [1, 2]) == []
    # one row fewer in "g": its pairs shift (NULL first, NaN last), as the consistency test's do
    assert labels(multiset_diff(view, [*model[:2], ("h", None, 5.0)], [1, 2])) == [
        "differs beyond the float tolerance",
        "differs beyond the float tolerance",
        "extra in the view",
        "missing from the view",
    ]


def test_exact_columns_compare_decimals_by_value_and_nested_values():
    assert multiset_diff([(Decimal("1.10"), [1, 2])], [(Decimal("1.1"), [1, 2])], []) == []
    assert labels(multiset_diff([(Decimal("1.10"), [1, 2])], [(Decimal("1.1"), [2, 1])], [])) == [
        "extra in the view",
        "missing from the view",
    ]
