"""The Spark dialect the engine reads and writes: the model's functions stay as written.

sqlglot's Spark dialect maps function names onto its own typed expressions and writes them
back from those: `log10(x)` came back as `LOG(10, x)` (another value in Spark),
`to_char(ts, 'yyyy-MM')` as `CAST(ts AS STRING)`, `to_json(parse_json(s))` as `s`. Here every
function call parses into an anonymous call that is written back with the name and arguments
the model used. Only what the analysis must recognise stays typed: the five aggregates the
engine maintains, and calls with their own syntax inside the parentheses (`CAST(x AS t)`,
`EXTRACT(f FROM x)`, `TRIM(BOTH c FROM s)`, `POSITION(a IN s)`, `SUBSTRING(s FROM i FOR n)`,
`OVERLAY(... PLACING ...)`).

`render` proves every statement it writes: an expression sqlglot cannot write in Spark raises
(never a logged warning), and `check_round_trip` re-reads the written query and requires the
same tree, so a typed expression whose Spark text means something else is refused at build.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

import sqlglot
from sqlglot import ErrorLevel, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import UnsupportedError

from dbt_ivm.errors import UnsupportedView

if TYPE_CHECKING:
    # The classes behind Spark.Parser and Spark.Generator: sqlglot 30 makes those class
    # attributes aliases, which mypy cannot use as types or base classes.
    from sqlglot.generators.spark import SparkGenerator
    from sqlglot.parsers.spark import SparkParser
else:
    SparkParser, SparkGenerator = Spark.Parser, Spark.Generator

# Typed because the analysis recognises them (`analyze.ALGEBRAIC_AGGREGATES`).
TYPED_FUNCTIONS = ("COUNT", "SUM", "AVG", "MIN", "MAX")
# Calls with syntax of their own inside the parentheses; everything else is a plain call.
SYNTAX_FUNCTIONS = ("CAST", "TRY_CAST", "EXTRACT", "TRIM", "POSITION", "SUBSTRING", "SUBSTR", "OVERLAY")
# Parsers of optimizer hints (/*+ BROADCAST(t) */), not functions.
HINT_PARSERS = (
    "BROADCAST",
    "BROADCASTJOIN",
    "MAPJOIN",
    "MERGE",
    "SHUFFLEMERGE",
    "MERGEJOIN",
    "SHUFFLE_HASH",
    "SHUFFLE_REPLICATE_NL",
    "AND",
    "OR",
)


# Spark's grammar gives these a unit keyword as first argument: TIMESTAMPADD(DAY, 1, ts).
UNIT_FUNCTIONS = ("TIMESTAMPADD", "DATEADD", "DATE_ADD", "TIMESTAMPDIFF", "DATEDIFF", "DATE_DIFF")
# Built-ins that Spark's grammar parses, not its function registry.
GRAMMAR_FUNCTIONS = frozenset({"timestampadd", "timestampdiff", "try_cast"})


def _unit_call(name: str) -> Callable[[SparkParser], exp.Expr]:
    """A function parser: the call with its first argument, when a bare word, kept as the unit
    keyword it is."""

    def parse(self: SparkParser) -> exp.Expr:
        args = self._parse_csv(self._parse_lambda)
        if len(args) == 3 and isinstance(args[0], exp.Column) and not args[0].table:
            args[0] = exp.var(args[0].name)
        return self.expression(exp.Anonymous(this=name, expressions=args))

    return parse


def _position(self: SparkGenerator, expression: exp.StrPosition) -> str:
    """POSITION as written (`POSITION(sub IN s)`, `POSITION(sub, s, start)`): Spark's generator
    would write LOCATE, or sqlglot's own STR_POSITION, which Spark does not have."""
    sub, string = self.sql(expression, "substr"), self.sql(expression, "this")
    if expression.args.get("position") is not None:
        return f"POSITION({sub}, {string}, {self.sql(expression, 'position')})"
    return f"POSITION({sub} IN {string})"


def _shift(operator: str) -> Callable[[SparkGenerator, exp.Binary], str]:
    """`a << b` / `a >> b` as written: Spark's generator writes SHIFTLEFT / SHIFTRIGHT calls."""

    def write(self: SparkGenerator, expression: exp.Binary) -> str:
        return self.binary(expression, operator)

    return write


# Operands written in parentheses where they bind more loosely than their operator (`LOOSE`
# under `OPERATORS`, an AND or OR under NOT): sqlglot writes a tree as it stands, parentheses only
# where a Paren node stands, so an operand the engine builds (a GROUP BY `a OR b` compared with a
# stored key, a PARTITION BY `NOT f`) would otherwise read back as another grouping in Spark.
# Not under LIKE's ESCAPE, nor an `ANY (…)`/`ALL (…)`, an operator's own.
LOOSE = (exp.Connector, exp.Not, exp.Predicate)
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
OPERATORS = (
    *(*COMPARISONS, exp.Is),
    *(exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.DPipe),
    *(exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor),
)


def _loose(node: exp.Expr | None, loose: tuple[type[exp.Expr], ...] = LOOSE) -> bool:
    return isinstance(node, loose) and not isinstance(node, exp.SubqueryPredicate)


def _grouped(expression: exp.Expr, key: str) -> exp.Expr:
    """`expression`, or a copy whose operand `key` is parenthesized where it is loose."""
    if not _loose(expression.args.get(key)):
        return expression
    copy = expression.copy()
    copy.set(key, exp.Paren(this=copy.args[key]))
    return copy


class Verbatim(Spark):
    """Spark SQL with every function call kept as the model wrote it."""

    class Tokenizer(Spark.Tokenizer):
        # Spark 4 reads a doubled quote inside a string as the quote ('it''s' is it's), not as
        # two adjacent literals; the generator writes it back escaped with a backslash.
        STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]

    class Parser(SparkParser):
        FUNCTIONS: ClassVar[dict[str, Callable[..., Any]]] = {
            k: v for k, v in Spark.Parser.FUNCTIONS.items() if k in TYPED_FUNCTIONS
        }
        FUNCTION_PARSERS: ClassVar[dict[str, Callable[..., Any]]] = {
            **{k: v for k, v in Spark.Parser.FUNCTION_PARSERS.items() if k in SYNTAX_FUNCTIONS + HINT_PARSERS},
            **{name: _unit_call(name) for name in UNIT_FUNCTIONS},
        }

    class Generator(SparkGenerator):
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **Spark.Generator.TRANSFORMS,
            exp.StrPosition: _position,
            exp.BitwiseLeftShift: _shift("<<"),
            exp.BitwiseRightShift: _shift(">>"),
        }

        def binary(self, expression: exp.Binary, op: str) -> str:
            """An operator's operands that bind more loosely than it, parenthesized (`OPERATORS`)."""
            operands = (expression.this, expression.expression)
            if not isinstance(expression, OPERATORS) or not any(_loose(o) for o in operands):
                return super().binary(expression, op)
            return f"{self._operand(expression.this)} {op} {self._operand(expression.expression)}"

        def _operand(self, node: exp.Expr, loose: tuple[type[exp.Expr], ...] = LOOSE) -> str:
            return f"({self.sql(node)})" if _loose(node, loose) else self.sql(node)

        def not_sql(self, expression: exp.Not) -> str:
            """NOT of an AND or OR, parenthesized (`NOT a AND b` is `(NOT a) AND b`)."""
            return f"NOT {self._operand(expression.this, (exp.Connector,))}"

        def in_sql(self, expression: exp.In) -> str:
            return super().in_sql(cast(exp.In, _grouped(expression, "this")))

        def between_sql(self, expression: exp.Between) -> str:
            return super().between_sql(cast(exp.Between, _grouped(expression, "this")))


DIALECT = Verbatim


class Call(*exp.Anonymous.__bases__):  # type: ignore[misc]  # the bases of a plain call in this sqlglot
    """A plain call while sqlglot's merge_subqueries runs: it treats every anonymous call as
    possibly set-returning and would merge no subquery that has one. Generators are refused
    before (`analyze.check_constructs`), so a call here is scalar."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expressions": False}
    is_var_len_args: ClassVar[bool] = True


def _replace_all(tree: exp.Expr, kind: type[exp.Expr], make: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """`tree` (in place) with every node of exactly `kind` replaced by `make(node)`, innermost first:
    sqlglot's `transform` does not descend into a node it replaced, so a call inside a replaced
    call would stay as it was."""
    return _bottom_up(tree, lambda n: make(n) if isinstance(n, kind) else n)


def _bottom_up(tree: exp.Expr, one: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """`tree` (in place) with each node replaced by `one(node)`, children before their parent."""
    for node in reversed(list(tree.walk())):  # a node's descendants come after it in the walk
        made = one(node)
        if made is node:
            continue
        if node is tree:
            return made
        node.replace(made)
    return tree


def as_calls(tree: exp.Expr) -> exp.Expr:
    return _replace_all(tree, exp.Anonymous, lambda n: Call(this=n.this, expressions=n.expressions))


def as_anonymous(tree: exp.Expr) -> exp.Expr:
    return _replace_all(tree, Call, lambda n: exp.Anonymous(this=n.this, expressions=n.expressions))


def to_sql(expression: exp.Expr, pretty: bool = False) -> str:
    """Spark SQL of `expression`; what sqlglot cannot write in Spark raises instead of a warning."""
    try:
        return expression.sql(dialect=DIALECT, unsupported_level=ErrorLevel.RAISE, pretty=pretty)
    except UnsupportedError as e:
        raise UnsupportedView(
            f"an expression fast_mv cannot write back unchanged ({str(e).splitlines()[0]})",
            "rewrite the expression, or use materialized='table'",
        ) from e


def _canonical(tree: exp.Expr) -> exp.Expr:
    """`tree` with the spellings Spark reads alike made one: a typed literal (DATE '…', parsed as
    a CAST) and the CAST that writes it (Spark's CAST parses as sqlglot's non-safe TryCast); the
    COALESCE that sqlglot writes for a USING join, and the CONCAT it writes for adjacent string
    literals ('it''s' is 'it' 's' in Spark), and the plain calls they read back as; a struct
    field `t.st.a`, qualified as a field of a column and read back as a three-part column; a
    chain of ANDs (or of ORs) however grouped, `x AND (y AND z)` written as `x AND y AND z`
    (both associate in Spark's three-valued logic; a chain mixing AND and OR keeps its grouping)."""

    def one(node: exp.Expr) -> exp.Expr:
        if type(node) is exp.Cast:
            return exp.TryCast(this=node.this, to=node.to)
        if isinstance(node, exp.Coalesce):
            return exp.Anonymous(this="COALESCE", expressions=[node.this, *node.expressions])
        if type(node) is exp.Concat and not node.args.get("safe") and not node.args.get("coalesce"):
            return exp.Anonymous(this="CONCAT", expressions=list(node.expressions))
        if isinstance(node, exp.Column) and node.args.get("db") is not None:
            parts = node.parts
            field: exp.Expr = exp.Column(this=parts[1], table=parts[0])
            for part in parts[2:]:
                field = exp.Dot(this=field, expression=part)
            return field
        if type(node) in (exp.And, exp.Or):
            return _left_deep(type(node), _chained(node, type(node)))
        if isinstance(node, exp.Paren):  # the tree's shape is the grouping: `(a = b) = c` is `a = b = c`
            return cast(exp.Expr, node.this)
        return node

    return _bottom_up(tree.copy(), one)


def _chained(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The operands of the chain of `kind` (AND or OR) at `node`, parenthesized links included."""
    inner = node.this if isinstance(node, exp.Paren) else node
    if type(inner) is not kind:
        return [node]
    return _chained(inner.this, kind) + _chained(inner.expression, kind)


def _left_deep(kind: type[exp.Expr], operands: list[exp.Expr]) -> exp.Expr:
    chain = operands[0]
    for operand in operands[1:]:
        chain = kind(this=chain, expression=operand)
    return chain


def _reads_back(node: exp.Expr, text: str) -> bool:
    try:
        read = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.ParseError:  # written as text no reader takes: refused, not a crash
        return False
    return _canonical(read) == _canonical(node)


def check_round_trip(query: exp.Expr) -> None:
    """The SQL written for `query` must read back as `query`: else refuse, naming the expression.

    Catches a typed expression whose Spark text is another expression (and so possibly another
    value): the engine then never executes SQL whose meaning differs from the model's.
    """
    if _reads_back(query, to_sql(query)):
        return
    for node in query.walk():
        if isinstance(node, exp.Func):
            written = to_sql(node)
            if not _reads_back(exp.select(node.copy()), f"SELECT {written}"):
                raise UnsupportedView(
                    f"expression {written}, which fast_mv cannot write back unchanged",
                    "rewrite the expression, or use materialized='table'",
                )
    raise UnsupportedView("SQL that fast_mv cannot write back unchanged", "use materialized='table'")
