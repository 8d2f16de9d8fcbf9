"""`on_configuration_change`: the model's configuration against the one fast_mv recorded.

A build records the configuration it applied (`Configuration`: the user's `tblproperties`,
`partition_by`, `liquid_clustered_by`, and a digest of the comments `persist_docs` puts on the
view) in its commit's metadata, in the watermark; every refresh carries it on, and an alter records
the new one in its own commit (`MARKER`). A run compares the model's configuration with the
newest record (`recorded`), never with what the table shows: a property a platform or a person
adds to the storage is no change. The record comes from the history rows every run reads for
the watermark, so a run with nothing changed issues no statement for it.

`diff` says what changed and how it applies: in place (`ALTER TABLE … SET/UNSET TBLPROPERTIES`,
`ALTER TABLE … CLUSTER BY` for the next writes, the view created again with its comments), or
only by a rebuild (`partition_by`, or liquid clustering on a partitioned storage).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt_ivm.errors import ConfigError, IvmError
from dbt_ivm.ir import TableName
from dbt_ivm.metadata import Watermark, settable_json
from dbt_ivm.render import col, ident, lit, sql
from dbt_ivm.storage import Storage, user_properties

MARKER = "dbt-ivm-config:"  # the commit metadata of an alter (a watermark's starts "dbt-ivm:")
RECORD_PROPERTY = "dbt_ivm.configured"  # the alter's record commit sets it (the run's id)


class OnChange(str, enum.Enum):
    """dbt's `on_configuration_change` for materialized views."""

    APPLY = "apply"
    CONTINUE = "continue"
    FAIL = "fail"


def on_change(value: Any) -> OnChange:
    if value is None:
        return OnChange.APPLY
    try:
        return OnChange(str(value).lower())
    except ValueError:
        raise ConfigError(
            f"on_configuration_change {value!r}: use 'apply' (the default), 'continue' or 'fail'"
        ) from None


class ConfigurationChanged(IvmError):
    """The model's configuration differs from the recorded one and `on_configuration_change` is `fail`."""


@dataclass(frozen=True)
class Docs:
    """The comments `persist_docs` puts on the view: the model's description, each column's."""

    relation: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)

    def comments(self, names: Sequence[str]) -> dict[str, str]:
        """Each of the view's columns (`names`) with its description (names match case-insensitively)."""
        by_name = {k.lower(): v for k, v in self.columns.items() if v}
        return {n: by_name[n.lower()] for n in names if n.lower() in by_name}

    def missing(self, names: Sequence[str]) -> list[str]:
        """Documented columns the model does not have."""
        have = {n.lower() for n in names}
        return [k for k, v in self.columns.items() if v and k.lower() not in have]

    @property
    def digest(self) -> str:
        body = json.dumps([self.relation or "", sorted((k.lower(), v) for k, v in self.columns.items() if v)])
        return hashlib.sha256(body.encode()).hexdigest()[:16]


def view_comments(create: exp.Create, docs: Docs | None) -> exp.Create:
    """The view's CREATE with the comments of `docs`: its relation comment, and a column list that
    names each of the view's columns with its description, if any."""
    if docs is None or not (docs.relation or docs.comments(create.expression.named_selects)):
        return create
    names = create.expression.named_selects
    comments = docs.comments(names)
    columns = [
        exp.ColumnDef(
            this=ident(n),
            constraints=[exp.ColumnConstraint(kind=exp.CommentColumnConstraint(this=lit(comments[n])))]
            if n in comments
            else None,
        )
        for n in names
    ]
    props = [exp.SchemaCommentProperty(this=lit(docs.relation))] if docs.relation else []
    return exp.Create(
        this=exp.Schema(this=create.this, expressions=columns),
        kind="VIEW",
        replace=True,
        expression=create.expression,
        properties=exp.Properties(expressions=props) if props else None,
    )


def _columns(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(str(c).lower() for c in ([value] if isinstance(value, str) else value))


@dataclass(frozen=True)
class Configuration:
    """What `on_configuration_change` compares: the configs that shape the storage and the view."""

    tblproperties: Mapping[str, str] = field(default_factory=dict)  # the user's, as text
    partition_by: tuple[str, ...] = ()
    liquid_clustered_by: tuple[str, ...] = ()
    docs: str = ""  # `Docs.digest` of the comments on the view
    location_root: str = ""

    @classmethod
    def of(cls, storage: Storage, docs: Docs | None) -> Configuration:
        return cls(
            user_properties(storage.tblproperties),
            _columns(storage.partition_by),
            _columns(storage.liquid_clustered_by),
            (docs or Docs()).digest,
            str(storage.location_root or ""),
        )

    def encode(self) -> dict[str, Any]:
        return {
            "props": dict(sorted(self.tblproperties.items())),
            "part": list(self.partition_by),
            "liquid": list(self.liquid_clustered_by),
            "docs": self.docs,
        } | ({"loc": self.location_root} if self.location_root else {})

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> Configuration:
        return cls(
            {str(k): str(v) for k, v in dict(body.get("props", {})).items()},
            tuple(body.get("part", ())),
            tuple(body.get("liquid", ())),
            str(body.get("docs", "")),
            str(body.get("loc", "")),
        )

    def marker(self) -> str:
        return MARKER + settable_json(self.encode())


def recorded(history: Iterable[Mapping[str, Any]]) -> Configuration | None:
    """The newest configuration fast_mv recorded, from DESCRIBE HISTORY rows (newest first): an
    alter's record, or the one the newest watermark carries. None: none recorded (a view built
    before this release records it at its next refresh)."""
    for row in history:
        text = row.get("userMetadata") or ""
        if text.startswith(MARKER):
            return Configuration.decode(json.loads(text[len(MARKER) :]))
        mark = Watermark.decode(text)
        if mark is not None:
            return Configuration.decode(mark.config) if mark.config is not None else None
    return None


@dataclass(frozen=True)
class Changes:
    """How the model's configuration differs from the recorded one."""

    set_properties: Mapping[str, str]  # added or changed user properties
    unset_properties: tuple[str, ...]  # user properties the model no longer sets
    liquid: tuple[str, ...] | None  # the new liquid clustering, when it changes in place
    docs: bool  # the view's comments changed
    replace: tuple[str, ...]  # what only a rebuild applies, described

    def describe(self) -> str:
        parts = [*self.replace]
        if self.set_properties or self.unset_properties:
            keys = [*self.set_properties, *self.unset_properties]
            parts.append(f"tblproperties {', '.join(sorted(keys))}")
        if self.liquid is not None:
            parts.append(f"liquid_clustered_by ({', '.join(self.liquid)})")
        if self.docs:
            parts.append("persist_docs comments")
        return "; ".join(parts)


def diff(before: Configuration | None, now: Configuration, defaults: Mapping[str, str]) -> Changes | None:
    """What changed from `before` (the recorded configuration) to `now`; None when nothing did,
    or when nothing was recorded. A property the model no longer sets goes back to fast_mv's
    value where it has one (`defaults`), else is unset."""
    if before is None or before == now:
        return None
    dropped = [k for k in before.tblproperties if k not in now.tblproperties]
    set_props = {k: v for k, v in now.tblproperties.items() if before.tblproperties.get(k) != v}
    set_props.update({k: defaults[k] for k in dropped if k in defaults})
    unset = tuple(sorted(k for k in dropped if k not in defaults))
    replace: list[str] = []
    liquid = None
    if before.location_root != now.location_root:  # Delta replaces a table only where it is
        replace.append(f"location_root {before.location_root or '(none)'} → {now.location_root or '(none)'}")
    if before.partition_by != now.partition_by:  # a rebuild lays out the storage anew, clustering too
        replace.append(f"partition_by ({', '.join(before.partition_by)}) → ({', '.join(now.partition_by)})")
    elif before.liquid_clustered_by != now.liquid_clustered_by:  # unpartitioned: a Storage is never both
        liquid = now.liquid_clustered_by
    return Changes(set_props, unset, liquid, before.docs != now.docs, tuple(replace))


def alter_statements(backing: TableName, changes: Changes) -> list[str]:
    """The statements that apply `changes` to the storage in place, before the record commit:
    removed properties unset, then the liquid clustering of the next writes."""
    table = backing.to_table()
    out = []
    if changes.unset_properties:
        keys = ", ".join(sql(lit(k)) for k in changes.unset_properties)
        out.append(f"ALTER TABLE {sql(table)} UNSET TBLPROPERTIES IF EXISTS ({keys})")
    if changes.liquid is not None:
        if changes.liquid:
            cluster = exp.ClusterProperty(expressions=[col(c) for c in changes.liquid])
            out.append(sql(exp.Alter(this=table, kind="TABLE", actions=[cluster])))
        else:
            out.append(f"ALTER TABLE {sql(table)} CLUSTER BY NONE")
    return out


def record_statement(backing: TableName, changes: Changes, run_id: str) -> str:
    """The commit that records the new configuration (run under its `marker`): it sets the added
    and changed properties, and fast_mv's `RECORD_PROPERTY` so that it always commits."""
    props = {**changes.set_properties, RECORD_PROPERTY: run_id}
    properties = exp.Properties(expressions=[exp.Property(this=lit(k), value=lit(v)) for k, v in props.items()])
    return sql(exp.Alter(this=backing.to_table(), kind="TABLE", actions=[exp.AlterSet(expressions=[properties])]))
