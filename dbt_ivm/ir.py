"""The frozen view IR that `analyze` produces and every refresh algorithm reads.

sqlglot expressions inside the IR are never mutated: renderers copy them first.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import cast

from sqlglot import exp

HIDDEN_PREFIX = "__ivm_"
COUNT_COLUMN = f"{HIDDEN_PREFIX}count"
DELTA_COLUMN = f"{HIDDEN_PREFIX}d"
RID_COLUMN = f"{HIDDEN_PREFIX}rid"
INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})  # Spark's, as DESCRIBE names them


def rid_column(index: int) -> str:
    """Name of the hidden column that stores source occurrence `index`'s row identity."""
    return f"{RID_COLUMN}_{index}"


def is_hidden(name: str) -> bool:
    return name.lower().startswith(HIDDEN_PREFIX)


class ViewClass(str, Enum):
    SINGLE_SOURCE = "single-source"
    INNER_JOIN = "inner-join"
    OUTER_JOIN = "outer-join"
    AGGREGATE = "aggregate"
    AGGREGATE_JOIN = "aggregate-over-join"
    WINDOW = "window"  # window functions, maintained by partition (`classes.windows`)
    SEMI_JOIN = "semi-join"  # [NOT] EXISTS and [NOT] IN subqueries, maintained by key (`classes.semijoins`)
    SET_OPERATION = "set-operation"  # UNION [ALL], INTERSECT [ALL], EXCEPT [ALL] (`classes.setops`)


class Side(str, Enum):
    """Nica's PSNS annotation of a relation within the join tree."""

    PRESERVED = "preserved"
    NULL_SUPPLIED = "null-supplied"
    BOTH = "preserved+null-supplied"  # a side of a full outer join


@dataclass(frozen=True)
class TableName:
    db: str | None
    name: str
    catalog: str | None = None

    @property
    def key(self) -> str:
        """Lower-cased dotted name: the key of watermarks and schemas."""
        return ".".join(p.lower() for p in (self.catalog, self.db, self.name) if p)

    def to_table(self) -> exp.Table:
        return exp.Table(
            this=exp.to_identifier(self.name, quoted=True),
            db=exp.to_identifier(self.db, quoted=True) if self.db else None,
            catalog=exp.to_identifier(self.catalog, quoted=True) if self.catalog else None,
        )

    def sql(self) -> str:
        return self.to_table().sql(dialect="spark")

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.db, self.name) if p)


@dataclass(frozen=True)
class Upstream:
    """A source that is another fast_mv's view: its rows are the view's select (`select`, the
    text Spark keeps for the view) over the upstream's storage (`storage`), whose versions and
    change feed a refresh reads in the view's place."""

    storage: TableName
    select: str


@dataclass(frozen=True)
class Source:
    """One occurrence of a table in the view: a self-join gives two."""

    index: int
    alias: str
    table: TableName
    columns: tuple[tuple[str, str], ...]  # the columns the view uses: (name, Spark type)
    side: Side = Side.PRESERVED
    upstream: Upstream | None = None  # another fast_mv's view, read through its storage

    @property
    def rid(self) -> str:
        return rid_column(self.index)

    @property
    def versioned(self) -> TableName:
        """The table whose versions and change feed stand for this source's: an upstream's storage."""
        return self.upstream.storage if self.upstream else self.table


@dataclass(frozen=True)
class Leaf:
    source: int


@dataclass(frozen=True)
class InnerGroup:
    """An n-ary inner join (Nica's normalized form) with its ON predicates."""

    children: tuple[JoinNode, ...]
    predicates: tuple[exp.Expr, ...] = ()


class JoinKind(str, Enum):
    """An outer join's kind (RIGHT is analyzed as LEFT with its sides swapped)."""

    LEFT = "left"
    FULL = "full"  # both sides are preserved and null-supplied; `preserved` is the left one


@dataclass(frozen=True)
class OuterJoin:
    """A left (or full) outer join: `preserved` keeps its rows, `null_supplied` is padded."""

    kind: JoinKind
    preserved: JoinNode
    null_supplied: JoinNode
    on: exp.Expr
    null_intolerant: bool = True  # the ON predicate rejects an all-NULL null-supplied row


JoinNode = Leaf | InnerGroup | OuterJoin


@dataclass(frozen=True)
class Ordering:
    """One key of the model's top-level ORDER BY, over one of its columns: the order `ref()` reads
    the view in (the storage has none)."""

    column: str
    descending: bool = False
    nulls_first: bool = True  # Spark's default: NULLS FIRST ascending, NULLS LAST descending


@dataclass(frozen=True)
class OutputColumn:
    name: str
    expression: exp.Expr


class AggregateFunction(str, Enum):
    """How an aggregate is maintained: five by an algebraic rule, every other one recomputed."""

    COUNT_STAR = "count(*)"
    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"
    RECOMPUTED = "recomputed"  # COUNT(DISTINCT), STDDEV, percentiles …: recomputed per touched group


class Role(str, Enum):
    """What a hidden column of the view's storage holds."""

    ROW_IDENTITY = "row identity"
    MULTIPLICITY = "multiplicity of the row"
    GROUP_KEY = "group key"
    GROUP_COUNT = "rows in the group"
    NON_NULL_COUNT = "count of the non-NULL arguments"
    SUM = "sum of the arguments"
    EXTREME = "extreme of the arguments"
    EXTREME_COUNT = "rows that hold the extreme"
    VALUE = "value, recomputed for the groups a change touches"
    PARTITION_KEY = "partition key"
    ORDER_KEY = "ORDER BY value of the row a keep-the-first keeps"
    BRANCH_COUNT = "copies of the row"


@dataclass(frozen=True)
class HiddenColumn:
    name: str
    role: Role
    of: str = ""  # the source, group key or aggregate call it belongs to


@dataclass(frozen=True)
class Aggregate:
    """One distinct aggregate call of the select list or HAVING, and the state the view stores for it."""

    index: int
    function: AggregateFunction
    call: exp.Expr  # the whole call as written (with DISTINCT, FILTER, WITHIN GROUP)
    argument: exp.Expr | None  # the one argument of the five algebraic aggregates
    # MIN/MAX: the state also counts the rows that hold the extreme, so a refresh recomputes the
    # group only when the change removes all of them (see `classes.aggregate`)
    counted: bool = False
    # AVG over an integral argument: the state sums it exactly, as DECIMAL(38, 0), where Spark's
    # AVG sums in DOUBLE (a BIGINT sum of six epoch-nanosecond values overflows)
    exact: bool = False

    @property
    def non_null(self) -> str:
        """Count of the non-NULL arguments: COUNT's value; SUM and AVG are NULL when it is 0."""
        return f"{HIDDEN_PREFIX}nn_{self.index}"

    @property
    def value(self) -> str:
        """The sum (SUM, AVG), the extreme (MIN, MAX) or the value (recomputed aggregates). An
        exact AVG's sum has its own name: a view stored before it summed exactly is rebuilt."""
        return f"{HIDDEN_PREFIX}{'ax' if self.exact else 'a'}_{self.index}"

    @property
    def holders(self) -> str:
        """A counted MIN or MAX: how many of the group's rows hold the extreme."""
        return f"{HIDDEN_PREFIX}m_{self.index}"


def group_column(index: int) -> str:
    """Name of the hidden column that stores GROUP BY expression `index`'s value."""
    return f"{HIDDEN_PREFIX}g_{index}"


def partition_column(index: int) -> str:
    """Name of the hidden column that stores PARTITION BY expression `index`'s value."""
    return f"{HIDDEN_PREFIX}p_{index}"


def order_column(index: int) -> str:
    """Name of the hidden column that stores a keep-the-first's ORDER BY expression `index`'s value."""
    return f"{HIDDEN_PREFIX}o_{index}"


@dataclass(frozen=True)
class Windows:
    """A window view's rows: `select` (the model's query, or the one derived table it reads)
    computes them with window functions that all partition by (at least) `partition_by`.
    `first`: a keep-the-first (`SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY …
    ORDER BY …) AS rn …) d WHERE rn = 1`, ROW_NUMBER its only window), the ORDER BY of that
    ROW_NUMBER: the storage keeps each kept row's ORDER BY values (`order_column`), and a refresh
    recomputes from the sources only the partitions whose kept row a change removes
    (`classes.windows`)."""

    select: exp.Select
    partition_by: tuple[exp.Expr, ...]
    first: tuple[exp.Ordered, ...] = ()


class Comparison(str, Enum):
    """How a subquery test compares an outer expression with the subquery's (`KeyPair`)."""

    EQUAL = "="  # a NULL on either side matches nothing
    NULL_SAFE = "<=>"  # NULL matches NULL
    # [NOT] IN's value outside a positive WHERE conjunct: three-valued, a NULL in the subquery's
    # values (or a NULL value tested against a non-empty set) makes the test NULL
    NULL_AWARE = "in"


@dataclass(frozen=True)
class KeyPair:
    """One correlation of a subquery test: `outer` (over the model's FROM) against `inner` (over
    the subquery's FROM)."""

    outer: exp.Expr
    inner: exp.Expr
    comparison: Comparison
    keyed: bool  # both sides have one type: the outer rows a change touches are found by its inner values


@dataclass(frozen=True)
class SubqueryTest:
    """One EXISTS or IN subquery of the model's WHERE, uncorrelated: `select` reads the subquery's
    FROM and its own WHERE (the correlations taken out) and selects each pair's inner expression
    (`__ivm_k_<j>`); `sources` are the plan's occurrences it reads (local occurrence i is
    `sources[i]`, and `tree` is its join tree over local indices)."""

    predicate: exp.Expr  # the test as the model writes it (for explain)
    select: exp.Select
    pairs: tuple[KeyPair, ...]
    sources: tuple[int, ...]
    tree: JoinNode


@dataclass(frozen=True)
class Subqueries:
    """A semi-join view's tests: `outer` is the model without them (the WHERE's conjuncts that hold
    no subquery), `partition_by` the outer expressions every test correlates on (a row's result
    depends only on itself and the subqueries' rows of its key); none: one partition."""

    outer: exp.Select
    tests: tuple[SubqueryTest, ...]
    partition_by: tuple[exp.Expr, ...]


def branch_column(index: int) -> str:
    """Name of the hidden column that counts a row's copies in set-operation branch `index`."""
    return f"{HIDDEN_PREFIX}c{index}"


class SetKind(str, Enum):
    UNION = "UNION"
    INTERSECT = "INTERSECT"
    EXCEPT = "EXCEPT"


@dataclass(frozen=True)
class Branch:
    """One SELECT of a set operation: its own plan (its sources numbered from 0), where its
    sources start among the view's (`offset`), and whether it is SELECT DISTINCT (its plan is
    the SELECT without DISTINCT: the branch's rows are then its distinct rows)."""

    index: int
    plan: ViewPlan
    offset: int
    distinct: bool = False


@dataclass(frozen=True)
class SetOperation:
    """`left <kind> [ALL] right`, as sqlglot parses the model (INTERSECT binds tighter)."""

    kind: SetKind
    distinct: bool
    left: SetNode
    right: SetNode


SetNode = Branch | SetOperation


def set_branches(node: SetNode) -> tuple[Branch, ...]:
    """The branches of a set operation, left to right."""
    if isinstance(node, Branch):
        return (node,)
    return set_branches(node.left) + set_branches(node.right)


@dataclass(frozen=True)
class DistributedUnion:
    """A join over a UNION ALL subquery (or CTE) `alias`, distributed over the union's branches
    (`analyze.union_join`): set-operation branch *i* is the join over `derived[i]`, branch *i* of
    the union under the union's column names. `union` is the normalized UNION ALL as the model
    reads it; `compared` the union's columns the join reads other than as a plain output, which
    each derived branch must have in the union's type (checked before a build:
    `analyze.union_join.check_types`). `padded`: the union on the null-supplied side of a LEFT
    JOIN, the index of the branch of the rows that match no row of it (`analyze.union_padded`)."""

    alias: str
    union: exp.Query
    derived: tuple[exp.Select, ...]
    compared: tuple[str, ...]
    padded: int | None = None


@dataclass(frozen=True)
class SetOperations:
    """A set-operation view: the normalized query and its tree of branches (`distributed`: a join
    over UNION ALL subqueries, each branch the join over one of its branches, or over one
    combination of a branch of each, the first union's outermost)."""

    query: exp.Query
    tree: SetNode
    distributed: tuple[DistributedUnion, ...] = ()

    @property
    def branches(self) -> tuple[Branch, ...]:
        return set_branches(self.tree)


UNION_PLACEHOLDER = f"{HIDDEN_PREFIX}union"  # the table name a query over a UNION ALL leaf reads it by


@dataclass(frozen=True)
class UnionLeaf:
    """A UNION ALL subquery (or CTE) that an aggregate's query, or a window view's windows, read as
    their one FROM item: a derived leaf. The model's query reads it as `UNION_PLACEHOLDER AS
    alias`; its rows at a version are its branches' rows at that version (`query`, the normalized
    UNION ALL, whose columns are `columns`), its change the UNION ALL of its branches' changes
    (`classes.union_leaf`). `distributed`: a leaf that is a join over each branch of the model's
    UNION ALL (an aggregate or windows over that join, `analyze.union_leaf_join`), that union and
    the columns the join compares, which a build checks (`union_join.check_types`)."""

    alias: str
    columns: tuple[str, ...]
    query: exp.Query
    branches: tuple[Branch, ...]
    distributed: DistributedUnion | None = None


@dataclass(frozen=True)
class ViewPlan:
    """Everything about a view that a build or a refresh needs, decided once."""

    view_class: ViewClass
    query: exp.Select  # normalized: qualified, stars expanded, CTEs/subqueries merged; a set
    # operation's first branch (the whole query: `model_query`)
    sources: tuple[Source, ...]
    tree: JoinNode
    where: exp.Expr | None
    outputs: tuple[OutputColumn, ...]
    group_by: tuple[exp.Expr, ...] = ()  # SELECT DISTINCT: its output expressions
    aggregates: tuple[Aggregate, ...] = ()
    having: exp.Expr | None = None
    distinct: bool = False
    hidden: tuple[HiddenColumn, ...] = field(default=())
    functions: tuple[str, ...] = ()  # declared deterministic (the model's deterministic_functions)
    windows: Windows | None = None  # a window view's rows (`ViewClass.WINDOW`)
    subqueries: Subqueries | None = None  # a semi-join view's subquery tests (`ViewClass.SEMI_JOIN`)
    set_operation: SetOperations | None = None  # a set operation's branches (`ViewClass.SET_OPERATION`)
    order: tuple[Ordering, ...] = ()  # the model's top-level ORDER BY, kept by the view `ref()` reads
    union: UnionLeaf | None = None  # an aggregate or window over a UNION ALL subquery: its leaf

    @property
    def model_query(self) -> exp.Query:
        """The whole normalized query: `query` (with its UNION ALL leaf in place), or a set operation's."""
        if self.set_operation is not None:
            return self.set_operation.query
        if self.union is not None:
            leaf = self.union.query.subquery(exp.to_identifier(self.union.alias, quoted=True))
            return cast(exp.Query, self.query.transform(lambda n: leaf.copy() if _is_placeholder(n) else n))
        return self.query

    @property
    def is_global(self) -> bool:
        """An aggregate without GROUP BY: exactly one row, also over no rows."""
        return self.view_class in (ViewClass.AGGREGATE, ViewClass.AGGREGATE_JOIN) and not self.group_by

    @property
    def hidden_names(self) -> str:
        """The hidden columns, comma-separated: what a build records as `dbt_ivm.state`."""
        return ",".join(h.name for h in self.hidden)

    @property
    def state_before_recorded(self) -> str:
        """The hidden columns, comma-separated, that a view built before its storage recorded them
        (`dbt_ivm.state`) keeps: all but the counts of the rows at a MIN/MAX, which came with it, and
        a keep-the-first's ORDER BY values, which came later."""
        return ",".join(h.name for h in self.hidden if h.role not in (Role.EXTREME_COUNT, Role.ORDER_KEY))

    @property
    def pads(self) -> bool:
        """An outer join: a source is null-supplied, and a change to it can add or remove padded rows."""
        return any(s.side is not Side.PRESERVED for s in self.sources)

    @property
    def tables(self) -> tuple[TableName, ...]:
        """Distinct source tables, in first-occurrence order."""
        seen: dict[str, TableName] = {}
        for s in self.sources:
            seen.setdefault(s.table.key, s.table)
        return tuple(seen.values())

    @property
    def versioned(self) -> dict[str, TableName]:
        """Each source table's key -> the table whose versions stand for it (`Source.versioned`)."""
        return {s.table.key: s.versioned for s in self.sources}

    @property
    def normalized_sql(self) -> str:
        from dbt_ivm.verbatim import to_sql

        return to_sql(self.model_query)

    @property
    def definition_hash(self) -> str:
        """Changes when the view's meaning or the types of the columns it reads change."""
        payload: dict[str, object] = {
            "sql": self.normalized_sql,
            "columns": [[s.table.key, list(map(list, s.columns))] for s in self.sources],
            "class": self.view_class.value,
            "functions": list(self.functions),
        }
        if self.order:  # a view of a model without ORDER BY keeps the hash it was built with
            payload["order"] = [[o.column, o.descending, o.nulls_first] for o in self.order]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _is_placeholder(node: exp.Expr) -> bool:
    return isinstance(node, exp.Table) and node.name == UNION_PLACEHOLDER


@dataclass(frozen=True)
class Span:
    """The versions of one source a refresh reads: those after `consumed`, through `pinned`."""

    consumed: int
    pinned: int

    @property
    def first(self) -> int:
        return self.consumed + 1

    def __str__(self) -> str:
        return f"v{self.consumed}..v{self.pinned}"
