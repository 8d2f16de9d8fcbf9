"""NULL analysis: which expressions are NULL on the NULL-padded rows of an outer join, and which
predicates reject those rows (conservative: what cannot be proved counts as NULL-tolerant)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt_ivm.analyze.functions import func_key

STRICT_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.IntDiv,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Like,
    exp.ILike,
    exp.RegexpLike,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
    exp.DPipe,
    exp.Neg,
    exp.BitwiseNot,
    exp.Not,
    exp.Paren,
    exp.Cast,
    exp.TryCast,
    exp.Alias,
    # functions that return NULL as soon as an argument is NULL
    exp.Upper,
    exp.Lower,
    exp.Length,
    exp.Substring,
    exp.Trim,
    exp.Abs,
    exp.Round,
    exp.Floor,
    exp.Ceil,
    exp.Year,
    exp.Month,
    exp.Day,
    exp.DateTrunc,
    exp.TimestampTrunc,
)
# The same, as plain calls (see `verbatim`): Spark returns NULL as soon as an argument is NULL.
STRICT_FUNCTIONS = frozenset(
    {
        "upper",
        "lower",
        "ucase",
        "lcase",
        "length",
        "char_length",
        "character_length",
        "substring",
        "substr",
        "trim",
        "ltrim",
        "rtrim",
        "abs",
        "round",
        "bround",
        "floor",
        "ceil",
        "ceiling",
        "year",
        "month",
        "day",
        "dayofmonth",
        "hour",
        "minute",
        "second",
        "quarter",
        "date_trunc",
        "trunc",
    }
)


def null_on_null(expr: exp.Expr, is_null: Callable[[exp.Column], bool]) -> bool:
    """True when `expr` is NULL once every column for which `is_null` holds is NULL (conservative)."""
    if isinstance(expr, exp.Column):
        return is_null(expr)
    if isinstance(expr, exp.Null):
        return True
    if isinstance(expr, (exp.In, exp.Between)):
        return not expr.args.get("query") and null_on_null(expr.this, is_null)
    if isinstance(expr, (exp.And, exp.Or)):  # NULL AND FALSE is FALSE, NULL OR TRUE is TRUE
        return all(null_on_null(e, is_null) for e in expr.flatten())
    if isinstance(expr, exp.Concat) and expr.args.get("coalesce"):
        return False
    if isinstance(expr, (*STRICT_OPERATORS, exp.Concat)) or (
        isinstance(expr, exp.Anonymous) and func_key(expr) in STRICT_FUNCTIONS
    ):
        return any(null_on_null(e, is_null) for e in expr.iter_expressions())
    return False


def rejects(pred: exp.Expr | None, aliases: set[str]) -> bool:
    """True when `pred` cannot be TRUE on a row whose `aliases` columns are all NULL."""
    if pred is None:
        return False
    if isinstance(pred, exp.Paren):
        return rejects(pred.this, aliases)
    if isinstance(pred, exp.And):
        return any(rejects(e, aliases) for e in pred.flatten())
    if isinstance(pred, exp.Or):
        return all(rejects(e, aliases) for e in pred.flatten())
    if isinstance(pred, exp.Not) and isinstance(pred.this, exp.Is) and isinstance(pred.this.expression, exp.Null):
        return null_on_null(pred.this.this, lambda c: c.table in aliases)  # x IS NOT NULL
    if isinstance(pred, exp.Boolean) and not pred.this:
        return True
    return null_on_null(pred, lambda c: c.table in aliases)


def null_intolerant(pred: exp.Expr | None, aliases: set[str] | None = None) -> bool:
    """True when the predicate cannot be TRUE once every referenced column (or every column of
    `aliases`) is NULL. Conservative: what it cannot prove counts as NULL-tolerant."""
    if pred is None:
        return False
    if aliases is None:
        aliases = {c.table for c in pred.find_all(exp.Column)}
    return bool(aliases) and rejects(pred, aliases)


def padded_null(expr: exp.Expr, scope: Scope) -> bool:
    """`expr` is NULL when every relation of `scope` is padded with NULLs."""

    def column_null(col: exp.Column) -> bool:
        source = scope.sources.get(col.table)
        if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
            for inner in source.expression.expressions:
                if inner.alias_or_name == col.name:
                    value = inner.this if isinstance(inner, exp.Alias) else inner
                    return padded_null(value, source)
            return False
        return True

    return null_on_null(expr, column_null)
