"""Pure builders of the Spark SQL a build or a refresh runs, as sqlglot trees.

Nothing here touches a database: `maintain` decides which of these to run.
Every identifier goes through sqlglot, so quoting is never string work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from sqlglot import TokenType, exp

from dbt_ivm import verbatim
from dbt_ivm.analyze import parse, source_references
from dbt_ivm.errors import ConfigError, UnsupportedView
from dbt_ivm.ir import (
    COUNT_COLUMN,
    DELTA_COLUMN,
    HIDDEN_PREFIX,
    RID_COLUMN,
    Source,
    TableName,
    ViewClass,
    ViewPlan,
)

SIGN_COLUMN = f"{HIDDEN_PREFIX}sign"
INSERT_TYPES = ("insert", "update_postimage")
BACKING_PROPERTIES = {
    # A refresh's MERGE touches a few rows of large files: mark them deleted, don't rewrite.
    "delta.enableDeletionVectors": "true",
    # A change feed of the view would make every MERGE write change files too; nothing reads it
    # (sessions may default it on for new tables, so say it).
    "delta.enableChangeDataFeed": "false",
}
MAINTAINED = (ViewClass.SINGLE_SOURCE, ViewClass.INNER_JOIN)
# Views whose rows only grow when their sources only grow (no outer join, no aggregate): appended
# source rows can only add view rows, never remove or change one.
MONOTONE = (ViewClass.SINGLE_SOURCE, ViewClass.INNER_JOIN)


def sql(expression: exp.Expr) -> str:
    """Spark SQL of a statement; what sqlglot cannot write in Spark raises (see `verbatim`)."""
    return verbatim.to_sql(expression)


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(ident(name), table=ident(table) if table else None)


def func(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def lit(value: str | int) -> exp.Literal | exp.Neg:  # a negative number is Neg(Literal)
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def temp_table(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


def ensure_maintainable(plan: ViewPlan) -> None:
    """Refuse view classes whose refresh is not implemented yet (analysis still accepts them)."""
    if plan.view_class not in MAINTAINED:
        raise UnsupportedView(
            f"{plan.view_class.value} views are not maintained by this release",
            "use materialized='table' for this model for now",
        )


# Types a view column cannot have: Spark rewrites a MAP it groups by and cannot group a VARIANT.
UNGROUPABLE = ("map<", "variant")


def ensure_groupable(output_types: Mapping[str, str]) -> None:
    """Refuse output columns of MAP or VARIANT type (or holding one): the view stores its rows
    grouped by their values, and Spark rewrites a map it groups by (keys sorted, NULL values
    lost) and cannot group a VARIANT, so the stored value would differ from the model's."""
    for name, spark_type in output_types.items():
        if any(t in spark_type.lower() for t in UNGROUPABLE):
            raise UnsupportedView(
                f"column {name} of type {spark_type}, which fast_mv cannot store exactly (Spark changes MAP "
                "values when it groups rows by them, and cannot group VARIANT)",
                "select what the view needs from it (element_at, map_values, to_json, variant_get), or use "
                "materialized='table'",
            )


# --- row identities and source relations -------------------------------------------


def rid_expression(columns: tuple[tuple[str, str], ...], table: str | None = None) -> exp.Expr:
    """Row identity of a source row: a 64-bit hash of the columns the view uses, NULLs flagged.

    Delta withholds row ids from change-feed reads, so identity comes from content;
    rows equal on every used column are interchangeable duplicates (a multiplicity).
    A hash collision can only merge rows whose view columns are also equal, because
    every key below is (identities, view columns): the view's multiset stays exact.
    """
    if not columns:
        return exp.Literal.number(0)
    args: list[exp.Expr] = []
    for name, ctype in columns:
        c = col(name, table)
        args.append(func("to_json", c) if ctype.lower().startswith("map") else c)
    args += [exp.Is(this=col(name, table), expression=exp.Null()) for name, _ in columns]
    return func("xxhash64", *args)


def source_columns(source: Source) -> list[exp.Expr]:
    return [col(name) for name, _ in source.columns]


def snapshot_relation(source: Source, version: int, with_rid: bool = True) -> exp.Expr:
    """`(SELECT used columns, rid FROM t VERSION AS OF v) AS alias`."""
    table = source.table.to_table()
    table.set("version", exp.Version(this="VERSION", kind="AS OF", expression=lit(version)))
    select = exp.select(*source_columns(source)).from_(table)
    if not source.columns:
        select = exp.select(lit(1).as_(ident(f"{HIDDEN_PREFIX}one"))).from_(table)
    if with_rid:
        select = select.select(rid_expression(source.columns).as_(ident(RID_COLUMN)))
    return select.subquery(ident(source.alias))


# Types whose values Spark changes when it groups by them: -0.0 becomes 0.0 (also inside arrays
# and structs), a map's keys are sorted and its NULL values lost; VARIANT cannot be grouped at all.
NORMALIZED_WHEN_GROUPED = ("double", "float", *UNGROUPABLE)


def normalized_when_grouped(spark_type: str) -> bool:
    return any(t in spark_type.lower() for t in NORMALIZED_WHEN_GROUPED)


def change_select(source: Source, start: int, end: int) -> exp.Select:
    """Net change of one source between two versions, per row identity.

    `__ivm_d` is +n for n more copies, -n for n fewer: an update's pre- and
    post-image cancel when the view reads none of the changed columns, and a row
    inserted then deleted between two refreshes nets to nothing. A column whose values
    grouping would change (`normalized_when_grouped`) is grouped by its text, which tells
    -0.0 from 0.0 and keeps a map's order and NULLs, and carried through as one of its values.
    """
    feed = exp.Table(this=func("table_changes", lit(source.table.sql()), lit(start), lit(end)))
    sign = exp.If(
        this=exp.In(this=col("_change_type"), expressions=[lit(t) for t in INSERT_TYPES]),
        true=lit(1),
        false=lit(-1),
    )
    rows = (
        exp.select(*source_columns(source))
        .from_(feed)
        .select(rid_expression(source.columns).as_(ident(RID_COLUMN)), sign.as_(ident(SIGN_COLUMN)))
    )
    total = exp.Sum(this=col(SIGN_COLUMN))
    values: list[exp.Expr] = []
    keys: list[exp.Expr] = [col(RID_COLUMN)]
    for name, spark_type in source.columns:
        if normalized_when_grouped(spark_type):
            values.append(func("any_value", col(name)).as_(ident(name)))
            keys.append(exp.Cast(this=col(name), to=exp.DataType.build("string")))
        else:
            values.append(col(name))
            keys.append(col(name))
    netted = (
        exp.select(*values)
        .select(col(RID_COLUMN), total.as_(ident(DELTA_COLUMN)))
        .from_(rows.subquery(ident(f"{HIDDEN_PREFIX}feed")))
        .group_by(*keys)
        .having(exp.NEQ(this=total.copy(), expression=lit(0)))
    )
    return netted


def changes_relation(source: Source, start: int, end: int, staged: str | None = None) -> exp.Expr:
    """The net change as a relation under the source's alias; `staged` names a cached copy.

    Staging (CACHE TABLE) evaluates the feed once and gives Spark its real, small size,
    so the joins below broadcast the change rows instead of shuffling the other sources.
    """
    if staged:
        return exp.Table(this=ident(staged), alias=exp.TableAlias(this=ident(source.alias)))
    return change_select(source, start, end).subquery(ident(source.alias))


def union_all(queries: list[exp.Select]) -> exp.Query:
    """`q1 UNION ALL q2 UNION ALL …` (one query: itself)."""
    return exp.union(*queries, distinct=False) if len(queries) > 1 else queries[0]


def substitute(query: exp.Select, relations: Mapping[str, exp.Expr]) -> exp.Select:
    """Copy of `query` with each source table replaced by the relation for its alias."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.alias_or_name in relations:
            return relations[node.alias_or_name].copy()
        return node

    # swap replaces tables only, so the root stays the Select that transform types as any node
    return cast(exp.Select, query.copy().transform(swap))


# --- build -------------------------------------------------------------------------


def _with_rids(query: exp.Select, plan: ViewPlan) -> exp.Select:
    return query.select(*[col(RID_COLUMN, s.alias).as_(ident(s.rid)) for s in plan.sources])


def _group_by_key(inner: exp.Query, plan: ViewPlan, measure: exp.Expr, name: str) -> exp.Select:
    """One row per stored key: (view columns, identity tuple)."""
    key = [col(c) for c in _stored_columns(plan)]
    return (
        exp.select(*key, measure.as_(ident(name)))
        .from_(inner.subquery(ident(f"{HIDDEN_PREFIX}v")))
        .group_by(*[k.copy() for k in key])
    )


def build_select(plan: ViewPlan, versions: Mapping[str, int]) -> exp.Select:
    """The backing table's full contents at the pinned versions: outputs, identities, count."""
    rels = {s.alias: snapshot_relation(s, versions[s.table.key]) for s in plan.sources}
    inner = _with_rids(substitute(plan.query, rels), plan)
    return _group_by_key(inner, plan, exp.Count(this=exp.Star()), COUNT_COLUMN)


def term_version(other: int, changed: int, old: int, new: int) -> int:
    """The version of source occurrence `other` in the telescoping term of occurrence `changed`."""
    return new if other < changed else old


def delta_select(
    plan: ViewPlan,
    old: Mapping[str, int],
    new: Mapping[str, int],
    staged: Mapping[int, str] | None = None,
    broadcast: bool = False,
) -> exp.Select | None:
    """Net change of the view between the `old` and `new` source versions, per identity tuple.

    The view is multilinear in its sources' multiplicities, so with sources in
    occurrence order R1..Rk it telescopes exactly (pg_ivm's several-tables case):

        V(R1',..,Rk') - V(R1,..,Rk) = sum_i V(R1',..,R(i-1)', dRi, R(i+1),..,Rk)

    where Rj' is source j at its new (pinned) version, Rj at the version the view
    last consumed, and dRi the netted change feed between them. Term i reads the
    sources before i new and those after i old (time travel); a source whose
    version did not move has dRi = 0 (no term) and Rj = Rj' (read once, at the
    pinned version). Self-joins are just two occurrences, each its own Ri.
    `staged` maps occurrence index -> cached change set (see `changes_relation`).
    `broadcast` hints each term to broadcast its change rows: an unstaged change feed has no
    size estimate, so Spark would otherwise shuffle the other sources to join it.
    Returns None when no source moved.
    """
    terms = []
    for i, changed in enumerate(plan.sources):
        key = changed.table.key
        if new[key] == old[key]:
            continue
        rels: dict[str, exp.Expr] = {}
        for other in plan.sources:
            k = other.table.key
            if other.index == i:
                rels[other.alias] = changes_relation(other, old[k] + 1, new[k], (staged or {}).get(i))
            else:
                rels[other.alias] = snapshot_relation(other, term_version(other.index, i, old[k], new[k]))
        term = _with_rids(substitute(plan.query, rels), plan)
        if broadcast:
            term = _hint_broadcast(term, changed.alias)
        terms.append(term.select(col(DELTA_COLUMN, changed.alias).as_(ident(DELTA_COLUMN))))
    if not terms:
        return None
    total = exp.Sum(this=col(DELTA_COLUMN))
    grouped = _group_by_key(union_all(terms), plan, total, DELTA_COLUMN)
    return grouped.having(exp.NEQ(this=total.copy(), expression=lit(0)))


def _hint_broadcast(query: exp.Select, alias: str) -> exp.Select:
    hint = exp.JoinHint(this="BROADCAST", expressions=[exp.Table(this=ident(alias))])
    existing = query.args.get("hint")
    query.set("hint", exp.Hint(expressions=[*(existing.expressions if existing else []), hint]))
    return query


def _properties(props: Mapping[str, str]) -> exp.Properties:
    return exp.Properties(
        expressions=[exp.FileFormatProperty(this=exp.var("DELTA"))]
        + [exp.Property(this=lit(k), value=lit(v)) for k, v in props.items()]
    )


def create_backing(backing: TableName, select: exp.Select, props: Mapping[str, str]) -> exp.Create:
    return exp.Create(
        this=backing.to_table(),
        kind="TABLE",
        replace=True,
        expression=select,
        properties=_properties({**BACKING_PROPERTIES, **props}),
    )


def view_select(plan: ViewPlan, backing: TableName) -> exp.Select:
    """What `ref()` returns: the model's columns, each stored row repeated `count` times."""
    n = ident(f"{HIDDEN_PREFIX}n")
    lateral = exp.Lateral(
        this=exp.Explode(this=exp.GenerateSeries(start=lit(1), end=col(COUNT_COLUMN))),
        view=True,
        alias=exp.TableAlias(this=ident(f"{HIDDEN_PREFIX}e"), columns=[n]),
    )
    select = exp.select(*[col(o.name) for o in plan.outputs]).from_(backing.to_table())
    select.set("laterals", [lateral])
    return select


def create_view(view: TableName, select: exp.Select) -> exp.Create:
    return exp.Create(this=view.to_table(), kind="VIEW", replace=True, expression=select)


# --- refresh -----------------------------------------------------------------------


def cache_as(name: str, select: exp.Select) -> str:
    """Evaluate the change set once: MERGE would otherwise evaluate its source twice."""
    return f"CACHE TABLE {sql(ident(name))} AS {sql(select)}"


def release(name: str) -> tuple[str, str]:
    """Drop a cached change set and its temporary view."""
    return f"UNCACHE TABLE IF EXISTS {sql(ident(name))}", f"DROP VIEW IF EXISTS {sql(ident(name))}"


def delta_stats(name: str, unique_key: tuple[str, ...] = ()) -> exp.Select:
    """Size of the change set; with a unique key, also its distinct keys and largest delta.

    An append under a declared unique key is only trusted when the change set itself keeps the
    key unique: one copy per key (`max_d` 1) and no key twice (`keys` = `n`).
    """
    d = col(DELTA_COLUMN)
    pos = exp.If(this=exp.GT(this=d.copy(), expression=lit(0)), true=d.copy(), false=lit(0))
    neg = exp.If(this=exp.LT(this=d.copy(), expression=lit(0)), true=exp.Neg(this=d.copy()), false=lit(0))
    select = exp.select(
        exp.Count(this=exp.Star()).as_("n"),
        func("coalesce", exp.Sum(this=pos), lit(0)).as_("inserted"),
        func("coalesce", exp.Sum(this=neg), lit(0)).as_("deleted"),
        exp.Min(this=d.copy()).as_("min_d"),
        exp.Max(this=d.copy()).as_("max_d"),
    ).from_(temp_table(name))
    if unique_key:
        key = exp.Struct(expressions=[col(c) for c in unique_key])
        select = select.select(exp.Count(this=exp.Distinct(expressions=[key])).as_("keys"))
    return select


def unique_key_columns(plan: ViewPlan, unique_key: str | Sequence[str] | None) -> tuple[str, ...]:
    """The model's declared unique key as output column names; a name that is not one fails."""
    if not unique_key:
        return ()
    names = [unique_key] if isinstance(unique_key, str) else list(unique_key)
    outputs = {o.name.lower(): o.name for o in plan.outputs}
    missing = [n for n in names if n.strip().lower() not in outputs]
    if missing:
        raise ConfigError(
            f"unique_key {', '.join(missing)} is not a column of the model (its columns: "
            f"{', '.join(o.name for o in plan.outputs)}); name output columns, or drop unique_key"
        )
    return tuple(outputs[n.strip().lower()] for n in names)


def _key_match(plan: ViewPlan, left: str, right: str) -> exp.Expr:
    """Identity tuple and view columns, NULL-safe: the hashes find the row, the columns make it exact."""
    rids = [exp.EQ(this=col(s.rid, left), expression=col(s.rid, right)) for s in plan.sources]
    outs = [exp.NullSafeEQ(this=col(o.name, left), expression=col(o.name, right)) for o in plan.outputs]
    return exp.and_(*rids, *outs)


def _stored_columns(plan: ViewPlan) -> list[str]:
    return [o.name for o in plan.outputs] + [s.rid for s in plan.sources]


def changed_identities(staged: Mapping[int, str], limit: int) -> exp.Select:
    """(occurrence, identity) of every change row, at most `limit` rows."""
    parts = [
        exp.select(lit(i).as_("i"), col(RID_COLUMN)).distinct().from_(temp_table(name))
        for i, name in sorted(staged.items())
    ]
    return exp.select("*").from_(union_all(parts).subquery(ident(f"{HIDDEN_PREFIX}ids"))).limit(limit)


def identity_filter(plan: ViewPlan, identities: Mapping[int, list[int]], table: str | None = None) -> exp.Expr:
    """Stored rows a change set can reach: a changed occurrence's identity column holds a change row's.

    Every key of the change set carries, in the column of the occurrence whose term produced it,
    the identity of one of that occurrence's change rows; so this is implied by the MERGE's match
    and adding it to ON changes no match. Delta evaluates it inside the target scan, so the
    MERGE's joins see only these rows instead of the whole view. (Delta prunes files for an IN
    list by its min..max only, which scattered hashes defeat: this filters rows, not files.)
    """
    parts = [
        exp.In(
            this=col(plan.sources[index].rid, table), expressions=[exp.Literal.number(v) for v in sorted(set(values))]
        )
        for index, values in sorted(identities.items())
        if values
    ]
    return exp.paren(exp.or_(*parts)) if parts else exp.false()


def existing_identities(plan: ViewPlan, backing: TableName, staged: Mapping[int, str]) -> exp.Select:
    """How many stored rows mention a changed source row (0: every changed key is new, append).

    Reads one bigint column of the view per changed occurrence: every key of the change set
    carries the identity of a change row in that occurrence's column.
    """
    probes = [
        exp.select(lit(1).as_("one"))
        .from_(backing.to_table())
        .where(
            exp.In(this=col(plan.sources[i].rid), query=exp.select(col(RID_COLUMN)).from_(temp_table(name)).subquery())
        )
        for i, name in sorted(staged.items())
    ]
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(union_all(probes).subquery(ident(f"{HIDDEN_PREFIX}p")))


def insert_statement(plan: ViewPlan, backing: TableName, delta: str) -> exp.Insert:
    """Insert-only change set of brand-new identity tuples: append, no MERGE."""
    return _insert_stored(plan, backing, col(DELTA_COLUMN), temp_table(delta))


def _insert_stored(plan: ViewPlan, backing: TableName, count: exp.Expr, rows: exp.Expr) -> exp.Insert:
    """INSERT of `rows` into the backing table: its stored columns, and `count` as the count."""
    cols = _stored_columns(plan)
    select = exp.select(*[col(c) for c in cols], count.as_(ident(COUNT_COLUMN))).from_(rows)
    return exp.insert(select, backing.to_table(), columns=[ident(c) for c in [*cols, COUNT_COLUMN]])


def append_statement(
    plan: ViewPlan,
    backing: TableName,
    old: Mapping[str, int],
    new: Mapping[str, int],
    unique_key: tuple[str, ...],
    violation: str,
    broadcast: bool = False,
) -> exp.Insert:
    """The view's new rows straight from the change feeds, appended in one statement.

    For a monotone view whose moved sources only appended rows: every net change adds copies.
    The declared unique key makes each row new to the stored rows too, and is checked here on the
    rows added (a key or a row twice fails the INSERT with `violation`: nothing is written). A
    negative change would mean the history lied about the appends: it fails as well, never applied.
    """
    delta = delta_select(plan, old, new, broadcast=broadcast)
    assert delta is not None
    d = col(DELTA_COLUMN)
    repeats = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[col(c) for c in unique_key])
    count = exp.Case(
        ifs=[
            exp.If(
                this=exp.LT(this=d.copy(), expression=lit(1)),
                true=_raise(f"fast_mv {backing}: an appended source row removed a view row; nothing was written"),
            ),
            exp.If(
                this=exp.or_(exp.GT(this=d.copy(), expression=lit(1)), exp.GT(this=repeats, expression=lit(1))),
                true=_raise(violation),
            ),
        ],
        default=lit(1),
    )
    return _insert_stored(plan, backing, count, delta.subquery(ident(f"{HIDDEN_PREFIX}a")))


def _raise(message: str) -> exp.Expr:
    return exp.Cast(this=func("raise_error", lit(message)), to=exp.DataType.build("bigint"))


def merge_statement(
    plan: ViewPlan, backing: TableName, delta: str, identities: Mapping[int, list[int]] | None = None
) -> exp.Merge:
    """Apply signed multiplicities by identity tuple; a count that would go negative is corrupt state, loudly.

    Three clauses, the guards folded into the values: every extra clause costs the MERGE a pass
    over its rows. `identities` (see `identity_filter`) narrows the target side.
    """
    t, s = "t", "s"
    new_count = exp.Add(this=col(COUNT_COLUMN, t), expression=col(DELTA_COLUMN, s))
    corrupt = (
        f"fast_mv {backing}: the change set removes rows the view does not hold; "
        "its stored state is inconsistent: run dbt with --full-refresh for this model"
    )

    def positive_or_fail(value: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.GT(this=value.copy(), expression=lit(0)), true=value.copy(), false=_raise(corrupt))

    cols = _stored_columns(plan)
    whens = [
        exp.When(
            matched=True,
            source=False,
            condition=exp.EQ(this=new_count.copy(), expression=lit(0)),
            then=exp.var("DELETE"),
        ),
        exp.When(
            matched=True,
            source=False,
            then=exp.Update(expressions=[exp.EQ(this=col(COUNT_COLUMN), expression=positive_or_fail(new_count))]),
        ),
        exp.When(
            matched=False,
            source=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(c) for c in [*cols, COUNT_COLUMN]]),
                expression=exp.Tuple(expressions=[col(c, s) for c in cols] + [positive_or_fail(col(DELTA_COLUMN, s))]),
            ),
        ),
    ]
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident(t)))
    on = _key_match(plan, t, s)
    if identities is not None:
        on = exp.and_(on, identity_filter(plan, identities, t))
    return exp.Merge(
        this=target,
        using=temp_table(delta).as_(s),
        on=on,
        whens=exp.Whens(expressions=whens),
    )


def empty_commit(backing: TableName) -> exp.Merge:
    """A commit that changes no row, to record a watermark when the changes net to nothing.

    A MERGE that matches nothing still commits, and unlike ALTER TABLE … SET TBLPROPERTIES it
    honours Delta's idempotent-write confs, so it is guarded like every other write.
    """
    nothing = exp.select(lit(1).as_("one")).where(exp.false())
    target = backing.to_table()
    target.set("alias", exp.TableAlias(this=ident("t")))
    return exp.Merge(
        this=target,
        using=nothing.subquery("s"),
        on=exp.false(),
        whens=exp.Whens(expressions=[exp.When(matched=True, source=False, then=exp.var("DELETE"))]),
    )


# --- consistency -------------------------------------------------------------------


def pin_versions(model_sql: str, versions: Mapping[str, int]) -> str:
    """The model's own SQL text, every read of a source pinned `VERSION AS OF` its version.

    Text is inserted after each source's name and nothing else changes (a trailing semicolon
    goes): the query is exactly the one dbt compiled, never sqlglot's rewrite of it, so the
    consistency test can catch the engine.
    """
    inserts: list[tuple[int, str]] = []
    for table in source_references(parse(model_sql)):
        key = TableName(table.db or None, table.name, table.catalog or None).key
        end = table.this.meta.get("end")
        if key in versions and end is not None:
            inserts.append((end + 1, f" VERSION AS OF {versions[key]}"))
    inserts += [(t.start, "") for t in verbatim.DIALECT().tokenize(model_sql) if t.token_type == TokenType.SEMICOLON]
    text = model_sql
    for position, insert in sorted(inserts, reverse=True):
        text = text[:position] + insert + (text[position + 1 :] if not insert else text[position:])
    return text


MODEL_PLACEHOLDER = f"{HIDDEN_PREFIX}model_sql"


def consistency_sql(view: TableName, model_sql: str) -> str:
    """Rows in one multiset and not the other (EXCEPT ALL both ways: NULLs equal, duplicates counted),
    between the view and `model_sql` (the model's text, see `pin_versions`) as a subquery."""
    recompute = exp.select("*").from_(temp_table(MODEL_PLACEHOLDER).as_(ident(f"{HIDDEN_PREFIX}m")))
    v = exp.select("*").from_(view.to_table())
    missing = exp.except_(recompute.copy(), v.copy(), distinct=False)
    extra = exp.except_(v, recompute, distinct=False)
    diff = ident(f"{HIDDEN_PREFIX}diff")
    query = exp.union(
        exp.select(lit("missing from the view").as_(diff), "*").from_(missing.subquery("m")),
        exp.select(lit("extra in the view").as_(diff), "*").from_(extra.subquery("x")),
        distinct=False,
    )
    return sql(query).replace(sql(temp_table(MODEL_PLACEHOLDER)), f"(\n{model_sql}\n)")
