"""One rule per aggregate function: what an aggregate view stores for it and how a refresh keeps it.

`rule(agg)` maps the IR's `AggregateFunction` to its rule (`RULES`). A rule gives the function's
state columns (`state`), their values over the view's rows (`build`), the per-group delta of a
change (`delta`), how the MERGE combines a stored state with a delta (`merge`), the model's value
from the state (`final`), whether removing a value can force its group's recompute
(`removes_extreme`, `sums`) and whether every touched group is recomputed (`per_group`). A new
function with an algebraic rule is one subclass and one entry in `RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlglot import exp

from dbt_ivm.ir import COUNT_COLUMN, HIDDEN_PREFIX, Aggregate, AggregateFunction, HiddenColumn, Role, ViewPlan
from dbt_ivm.render import col, func, ident, lit
from dbt_ivm.verbatim import DIALECT

EXACT_SUM = exp.DataType.build("decimal(38,0)")
Combined = dict[str, tuple[exp.Expr, exp.Expr]]  # state column: (its UPDATE value, its INSERT value)


def if_(condition: exp.Expr, true: exp.Expr, false: exp.Expr) -> exp.If:
    return exp.If(this=condition, true=true, false=false)


def zero_if_null(e: exp.Expr) -> exp.Expr:
    return func("coalesce", e, lit(0))


def removed_name(agg: Aggregate) -> str:
    """The change set's extreme of the removed values (MIN: the smallest, MAX: the largest)."""
    return f"{HIDDEN_PREFIX}del_{agg.index}"


def removed_holders(agg: Aggregate) -> str:
    """A counted extreme: how many copies of the removed extreme the change removes."""
    return f"{HIDDEN_PREFIX}delm_{agg.index}"


def non_finite(agg: Aggregate) -> str:
    return f"{HIDDEN_PREFIX}nf_{agg.index}"


def overflow(agg: Aggregate) -> str:
    """1 where the change's sum added or removed overflowed its type (see `Sum.delta`)."""
    return f"{HIDDEN_PREFIX}o_{agg.index}"


def summed(agg: Aggregate, argument: exp.Expr) -> exp.Expr:
    """What the state sums: the argument, cast to DECIMAL(38, 0) for an exact AVG."""
    return exp.Cast(this=argument, to=EXACT_SUM.copy()) if agg.exact else argument


def _combine(a: exp.Expr, b: exp.Expr, op: type[exp.Add] | type[exp.Sub]) -> exp.Expr:
    """`a op b` where a NULL side counts as nothing (no 0 literal: a sum may be an interval)."""
    only_b = b.copy() if op is exp.Add else exp.Neg(this=b.copy())
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=a.copy(), expression=exp.Null()), true=only_b),
            exp.If(this=exp.Is(this=b.copy(), expression=exp.Null()), true=a.copy()),
        ],
        default=op(this=a, expression=b),
    )


def _checked_delta(agg: Aggregate, x: exp.Expr, added: exp.Expr, removed: exp.Expr) -> list[exp.Expr]:
    """A BIGINT or DECIMAL sum's delta: `try_sum` of the values added less `try_sum` of those
    removed (`try_subtract`; NULL when neither side has a value), and `__ivm_o_<k>`, 1 where a
    side with values, or their difference, is NULL: it overflowed."""

    def side(which: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
        values = if_(which.copy(), x.copy(), exp.Null())
        return func("try_sum", values), exp.GT(this=exp.Count(this=values.copy()), expression=lit(0))

    (plus, some_plus), (minus, some_minus) = side(added), side(removed)
    none = exp.and_(exp.Is(this=plus.copy(), expression=exp.Null()), exp.Is(this=minus.copy(), expression=exp.Null()))
    difference = func("try_subtract", zero_if_null(plus.copy()), zero_if_null(minus.copy()))
    value = if_(none, exp.Null(), difference)
    overflowed = exp.or_(
        exp.and_(some_plus, exp.Is(this=plus.copy(), expression=exp.Null())),
        exp.and_(some_minus, exp.Is(this=minus.copy(), expression=exp.Null())),
        exp.and_(exp.not_(none.copy()), exp.Is(this=value.copy(), expression=exp.Null())),
    )
    return [value.as_(ident(agg.value)), if_(overflowed, lit(1), lit(0)).as_(ident(overflow(agg)))]


def stored_overflow(agg: Aggregate, table: str | None = None) -> exp.Expr:
    """A stored DECIMAL sum that overflowed (with ANSI off Spark's SUM is then NULL): NULL while
    the group has non-NULL values. Its true value is unknown: the group is recomputed."""
    return exp.and_(
        exp.Is(this=col(agg.value, table), expression=exp.Null()),
        exp.GT(this=col(agg.non_null, table), expression=lit(0)),
    )


@dataclass(frozen=True)
class Signs:
    """A change's rows in `delta`: `d` the sign column, `added` and `removed` its two cases."""

    d: exp.Expr
    added: exp.Expr
    removed: exp.Expr


@dataclass(frozen=True)
class SumChecks:
    """How a refresh guards a sum's delta (see `aggregate.Recompute`): over floating point it
    counts the NaN and infinities removed; kept as BIGINT or DECIMAL (`checked`) it flags an overflow."""

    floating: bool = False
    checked: bool = False


class Rule:
    """An aggregate function's rule. The base keeps no state of its own, and reads the group's count."""

    explain = "count += delta"
    counts_non_null = False  # stores `__ivm_nn_<k>`, 0 (not NULL) for a group without rows
    sums = False  # a sum: NaN, infinity and overflow checks (`SumChecks`)
    per_group = False  # no algebraic rule: every touched group is recomputed
    removes_extreme = False  # MIN or MAX: removing its extreme can force a recompute
    averages = False  # AVG: `final` divides as Spark types the argument's AVG (`avg_types`)

    def state(self, agg: Aggregate, text: str) -> tuple[HiddenColumn, ...]:
        return ()

    def build(self, agg: Aggregate) -> list[exp.Expr]:
        """The stored state, as aggregates over the view's rows."""
        return []

    def delta(self, agg: Aggregate, x: exp.Expr, signs: Signs, checks: SumChecks) -> list[exp.Expr]:
        """The per-group delta of the state, over the change's signed rows (`x` the argument)."""
        return []

    def merge(self, agg: Aggregate, t: str, s: str, recomputed: Callable[[str], str]) -> Combined:
        """Each state column's new value (stored `t` and delta `s`) and a new group's value."""
        return {}

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        """The model's value of `agg` from the stored state (`avg_types`: see `averages`)."""
        return col(COUNT_COLUMN)


class CountStar(Rule):
    """COUNT(*): the group's row count (`__ivm_count`), which every aggregate view stores."""


class Count(Rule):
    explain = "non-NULL count += delta"
    counts_non_null = True

    def state(self, agg: Aggregate, text: str) -> tuple[HiddenColumn, ...]:
        return (HiddenColumn(agg.non_null, Role.NON_NULL_COUNT, text),)

    def build(self, agg: Aggregate) -> list[exp.Expr]:
        assert agg.argument is not None
        return [exp.Count(this=agg.argument.copy()).as_(ident(agg.non_null))]

    def delta(self, agg: Aggregate, x: exp.Expr, signs: Signs, checks: SumChecks) -> list[exp.Expr]:
        counted = if_(exp.Is(this=x.copy(), expression=exp.Null()), lit(0), signs.d.copy())
        return [zero_if_null(exp.Sum(this=counted)).as_(ident(agg.non_null))]

    def merge(self, agg: Aggregate, t: str, s: str, recomputed: Callable[[str], str]) -> Combined:
        return {agg.non_null: (self.non_null(agg, t, s), col(agg.non_null, s))}

    @staticmethod
    def non_null(agg: Aggregate, t: str, s: str) -> exp.Expr:
        return exp.Add(this=col(agg.non_null, t), expression=col(agg.non_null, s))

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        return col(agg.non_null)


class Sum(Count):
    explain = "sum += sum added - sum removed, non-NULL count += delta (NULL at 0)"
    sums = True

    def state(self, agg: Aggregate, text: str) -> tuple[HiddenColumn, ...]:
        return (*super().state(agg, text), HiddenColumn(agg.value, Role.SUM, text))

    def build(self, agg: Aggregate) -> list[exp.Expr]:
        assert agg.argument is not None
        return [*super().build(agg), exp.Sum(this=summed(agg, agg.argument.copy())).as_(ident(agg.value))]

    def delta(self, agg: Aggregate, x: exp.Expr, signs: Signs, checks: SumChecks) -> list[exp.Expr]:
        """The sum added less the sum removed, `try_` arithmetic with an overflow flag when
        `checks.checked`; over floating point also the count of removed NaN and infinities."""
        measures = super().delta(agg, x, signs, checks)
        if checks.checked:
            measures += _checked_delta(agg, x, signs.added, signs.removed)
        else:
            plus = exp.Sum(this=if_(signs.added.copy(), x.copy(), exp.Null()))
            minus = exp.Sum(this=if_(signs.removed.copy(), x.copy(), exp.Null()))
            measures.append(_combine(plus, minus, exp.Sub).as_(ident(agg.value)))
        if checks.floating:
            finite = exp.EQ(this=exp.Sub(this=x.copy(), expression=x.copy()), expression=lit(0))
            not_null = exp.not_(exp.Is(this=x.copy(), expression=exp.Null()))
            lost = exp.and_(signs.removed.copy(), not_null, exp.not_(finite))
            measures.append(func("count_if", lost).as_(ident(non_finite(agg))))
        return measures

    def merge(self, agg: Aggregate, t: str, s: str, recomputed: Callable[[str], str]) -> Combined:
        total = _combine(col(agg.value, t), col(agg.value, s), exp.Add)
        new = if_(exp.EQ(this=self.non_null(agg, t, s), expression=lit(0)), exp.Null(), total)
        # a new group's sum over no non-NULL value is NULL, also when the terms added and
        # removed the same values (their difference is 0, not NULL)
        none = exp.EQ(this=col(agg.non_null, s), expression=lit(0))
        return {**super().merge(agg, t, s, recomputed), agg.value: (new, if_(none, exp.Null(), col(agg.value, s)))}

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        return col(agg.value)


class Avg(Sum):
    explain = "sum and non-NULL count += deltas; avg = sum / count when read"
    averages = True

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        """AVG from its sum and count, divided as Spark's Average divides for the argument's type."""
        avg_type = avg_types[agg.index]
        total, n = col(agg.value), col(agg.non_null)
        if avg_type.lower().startswith("decimal"):
            count = exp.Cast(this=n, to=exp.DataType.build("decimal(20,0)"))
            quotient: exp.Expr = exp.Div(this=total, expression=count)
            quotient = exp.Cast(this=quotient, to=exp.DataType.build(avg_type, dialect=DIALECT))
        elif avg_type.lower() == "double":
            double = exp.DataType.build("double")
            quotient = exp.Div(this=exp.Cast(this=total, to=double), expression=exp.Cast(this=n, to=double.copy()))
        else:  # an interval divided by the count
            quotient = exp.Div(this=total, expression=n)
        return if_(exp.EQ(this=n.copy(), expression=lit(0)), exp.Null(), quotient)


@dataclass(frozen=True)
class Extreme(Rule):
    """MIN or MAX: the extreme, and for a counted one how many rows hold it."""

    word: str  # "minimum" or "maximum"
    pick: type[exp.Min] | type[exp.Max]
    pick_by: type[exp.ArgMin] | type[exp.ArgMax]
    combine: str  # "least" or "greatest"
    inside: type[exp.GT] | type[exp.LT]  # a removed value strictly inside the extreme
    beyond: type[exp.LTE] | type[exp.GTE]  # a removed value at or beyond the extreme
    explain: str
    removes_extreme = True

    def state(self, agg: Aggregate, text: str) -> tuple[HiddenColumn, ...]:
        extreme = (HiddenColumn(agg.value, Role.EXTREME, text),)
        return (*extreme, HiddenColumn(agg.holders, Role.EXTREME_COUNT, text)) if agg.counted else extreme

    def build(self, agg: Aggregate) -> list[exp.Expr]:
        return [agg.call.copy().as_(ident(agg.value))]

    def delta(self, agg: Aggregate, x: exp.Expr, signs: Signs, checks: SumChecks) -> list[exp.Expr]:
        """An uncounted extreme: the extreme added and the extreme removed (a counted one is
        taken over the net change of each value: `aggregate.delta_select`)."""
        if agg.counted:
            return []
        return [
            self.pick(this=if_(signs.added.copy(), x.copy(), exp.Null())).as_(ident(agg.value)),
            self.pick(this=if_(signs.removed.copy(), x.copy(), exp.Null())).as_(ident(removed_name(agg))),
        ]

    def merge(self, agg: Aggregate, t: str, s: str, recomputed: Callable[[str], str]) -> Combined:
        combined: Combined = {agg.value: (self.new_extreme(agg, t, s), col(agg.value, s))}
        if agg.counted:
            combined[agg.holders] = (self.new_holders(agg, t, s), col(agg.holders, s))
        return combined

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        return col(agg.value)

    def new_extreme(self, agg: Aggregate, stored: str, delta: str) -> exp.Expr:
        """The extreme of the stored one and those the change added (NULL if neither is)."""
        return func(self.combine, col(agg.value, stored), col(agg.value, delta))

    def new_holders(self, agg: Aggregate, stored: str, delta: str) -> exp.Expr:
        """A counted extreme: the rows that hold `new_extreme` after the change (stored, added,
        less removed; NULL if the stored count is missing)."""
        extreme = self.new_extreme(agg, stored, delta)

        def at(value: exp.Expr, holders: exp.Expr) -> exp.Expr:
            return if_(exp.EQ(this=value, expression=extreme.copy()), holders, lit(0))

        kept = at(col(agg.value, stored), col(agg.holders, stored))
        held = exp.Add(this=kept, expression=at(col(agg.value, delta), col(agg.holders, delta)))
        return exp.Sub(this=held, expression=at(col(removed_name(agg), delta), col(removed_holders(agg), delta)))

    def keeps_extreme(self, agg: Aggregate, stored: str, delta: str) -> exp.Expr:
        """A counted extreme is known after the change: nothing removed, only values inside it
        (their net change), or some of its holders are left. NULL counts as not known."""
        removed, extreme = col(removed_name(agg), delta), self.new_extreme(agg, stored, delta)
        left = exp.GT(this=self.new_holders(agg, stored, delta), expression=lit(0))
        return exp.or_(
            exp.Is(this=removed, expression=exp.Null()),
            self.inside(this=removed.copy(), expression=extreme),
            exp.and_(exp.EQ(this=removed.copy(), expression=extreme.copy()), left),
        )

    def lost(self, agg: Aggregate, stored: str, delta: str) -> exp.Expr:
        """The group must be recomputed: its extreme may have been removed."""
        if agg.counted:
            return exp.not_(func("coalesce", self.keeps_extreme(agg, stored, delta), exp.false()))
        removed, value = col(removed_name(agg), delta), col(agg.value, stored)
        unknown = exp.or_(
            exp.Is(this=col(COUNT_COLUMN, stored), expression=exp.Null()), exp.Is(this=value, expression=exp.Null())
        )
        within = exp.or_(unknown, self.beyond(this=removed.copy(), expression=value.copy()))
        return exp.and_(exp.not_(exp.Is(this=removed, expression=exp.Null())), exp.paren(within))


class Recomputed(Rule):
    """No algebraic rule (COUNT(DISTINCT), STDDEV, percentiles …): the value, recomputed."""

    explain = "no rule: recomputed from the sources for every group the change touches"
    per_group = True

    def state(self, agg: Aggregate, text: str) -> tuple[HiddenColumn, ...]:
        return (HiddenColumn(agg.value, Role.VALUE, text),)

    def build(self, agg: Aggregate) -> list[exp.Expr]:
        return [agg.call.copy().as_(ident(agg.value))]

    def merge(self, agg: Aggregate, t: str, s: str, recomputed: Callable[[str], str]) -> Combined:
        value = col(recomputed(agg.value), s)  # every touched group is recomputed
        return {agg.value: (value, value.copy())}

    def final(self, agg: Aggregate, avg_types: Mapping[int, str]) -> exp.Expr:
        return col(agg.value)


F = AggregateFunction
MIN = Extreme(
    "minimum",
    exp.Min,
    exp.ArgMin,
    "least",
    exp.GT,
    exp.LTE,
    "least(stored, smallest added); recomputed for the groups whose minimum was removed",
)
MAX = Extreme(
    "maximum",
    exp.Max,
    exp.ArgMax,
    "greatest",
    exp.LT,
    exp.GTE,
    "greatest(stored, largest added); recomputed for the groups whose maximum was removed",
)
RULES: dict[AggregateFunction, Rule] = {
    F.COUNT_STAR: CountStar(),
    F.COUNT: Count(),
    F.SUM: Sum(),
    F.AVG: Avg(),
    F.MIN: MIN,
    F.MAX: MAX,
    F.RECOMPUTED: Recomputed(),
}


def rule(agg: Aggregate) -> Rule:
    return RULES[agg.function]


def extreme(agg: Aggregate) -> Extreme | None:
    """`agg`'s rule when it is a MIN or MAX."""
    r = RULES[agg.function]
    return r if isinstance(r, Extreme) else None


def state(agg: Aggregate) -> tuple[HiddenColumn, ...]:
    """The hidden columns the view stores for `agg` (its rule's)."""
    return rule(agg).state(agg, agg.call.sql(dialect=DIALECT))


def loses_extremes(plan: ViewPlan) -> bool:
    """A MIN or MAX that does not count the rows at its extreme: a deleted row that held its
    group's extreme has the group recomputed (a counted one only when no such row is left)."""
    return any(rule(a).removes_extreme and not a.counted for a in plan.aggregates)
