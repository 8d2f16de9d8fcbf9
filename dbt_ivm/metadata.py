"""The watermark: which source versions the view's data reflects.

Written into the Delta commit that changes the view's storage (commit user
metadata), so data and watermark move together or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MARKER = "dbt-ivm:"
# 2: sources are told apart by their creation time, not Delta's table id;
# 3: each watermark carries the idempotent-write token of its commit and the run that wrote it
FORMAT_VERSION = 3

# Table properties of the backing table, written at build time.
PROP_DEFINITION = "dbt_ivm.definition"
PROP_DEFINITION_HASH = "dbt_ivm.definition_hash"
PROP_VIEW_CLASS = "dbt_ivm.view_class"
PROP_FORMAT = "dbt_ivm.format"
PROP_COLUMNS = "dbt_ivm.columns"
PROP_MODEL_SQL = "dbt_ivm.model_sql"  # the model's SQL as dbt compiled it: what fast_mv_consistent re-runs
PROP_FUNCTIONS = "dbt_ivm.functions"  # the model's deterministic_functions
PROP_CLUSTER_BY = "dbt_ivm.cluster_by"  # the columns the build sorted the stored rows by (see layout)
PROP_SETTINGS = "dbt_ivm.settings"  # the session settings the model's meaning depends on, at build
PROP_STATE = "dbt_ivm.state"  # the hidden columns the build stored (absent before MIN/MAX counted their rows)

# view column -> a value no stored row's exceeds (an int, a timestamp's microseconds since the
# epoch, a date's ISO text); None: no stored row has a value there (see `Watermark.highs`)
Highs = Mapping[str, int | str | None]


def settable_json(body: Any) -> str:
    """`body` as JSON that a `SET key=value` carries whole: Spark's SET ends a value at `;` and
    substitutes `${…}`, and either can be in a user's value (a tblproperty the configuration
    records); both only ever appear inside JSON strings, where their escapes read back the same."""
    return json.dumps(body, separators=(",", ":")).replace(";", "\\u003b").replace("${", "$\\u007b")


@dataclass(frozen=True)
class Watermark:
    sources: Mapping[str, int]  # table key -> last Delta version consumed
    definition_hash: str
    # table key -> the source's creation time in the catalog: a table dropped and created again
    # under the same name has another one (and a new change history)
    created: Mapping[str, str] = field(default_factory=dict)
    # Delta's idempotent-write version (txnVersion) of the commit that holds this watermark. A
    # refresh writes with its watermark's token + 1, a build with a larger one (see
    # `commit.commit_metadata`): of two writers that read the same watermark one commits.
    token: int = 0
    run: str = ""  # the run that wrote it: tells a writer its own commit from another's
    commit_version: int | None = None  # the backing table's version that recorded it
    # Sizes for refresh_policy auto (never for correctness; empty when not known): each source's
    # rows at the version consumed, and under the storage's own key its rows before this commit.
    rows: Mapping[str, int] = field(default_factory=dict)
    # The highest stored value of each column a refresh tracks (`joins.tracked_columns`), or a
    # value above it; None when unknown. A change set wholly above one holds no stored row: it is
    # appended without reading the stored rows.
    highs: Highs | None = None
    # The model's configuration the storage was last built or altered to (`configuration.Configuration`,
    # encoded): a build records it, each refresh carries it on; None before this was recorded.
    config: Mapping[str, Any] | None = None
    # What lets a later run with nothing to do end in a few statements (`quick.record`): the key of
    # the model, config and settings this run had, and the view's columns; None where it may not.
    quick: Mapping[str, Any] | None = None
    # What the writer knew of the storage's table properties at this commit (`known_properties.record`);
    # None where it did not.
    props: Mapping[str, Any] | None = None
    # The server's setting defaults the writer knew, with the server (`catalog.server_defaults`): a
    # later process on the same server reads them here instead of asking; None where it knew none.
    defaults: Mapping[str, Any] | None = None
    # table key -> the time of the commit consumed (`history.commit_time`): the source is the same
    # Delta table while its commits hold that one, whatever creation time a catalog shows after a
    # replace (`inspection._identity`); empty before this was recorded.
    commits: Mapping[str, str] = field(default_factory=dict)

    def encode(self) -> str:
        body = {
            "v": FORMAT_VERSION,
            "def": self.definition_hash,
            "sources": dict(sorted(self.sources.items())),
            "created": dict(sorted(self.created.items())),
            "token": self.token,
            "run": self.run,
        }
        if self.rows:
            body["rows"] = dict(sorted(self.rows.items()))
        if self.highs is not None:
            body["highs"] = dict(sorted(self.highs.items()))
        if self.config is not None:
            body["cfg"] = self.config
        if self.quick is not None:
            body["quick"] = self.quick
        if self.props is not None:
            body["props"] = self.props
        if self.defaults is not None:
            body["dflt"] = self.defaults
        if self.commits:
            body["at"] = dict(sorted(self.commits.items()))
        return MARKER + settable_json(body)

    @classmethod
    def decode(cls, text: str | None, commit_version: int | None = None) -> Watermark | None:
        if not text or not text.startswith(MARKER):
            return None
        body = json.loads(text[len(MARKER) :])
        return cls(
            {k: int(v) for k, v in body["sources"].items()},
            body["def"],
            dict(body.get("created", {})),
            int(body.get("token", 0)),
            str(body.get("run", "")),
            commit_version,
            {k: int(v) for k, v in body.get("rows", {}).items()},
            body.get("highs"),
            body.get("cfg"),
            body.get("quick"),
            body.get("props"),
            body.get("dflt"),
            dict(body.get("at", {})),
        )


def latest_watermark(history: Iterable[Mapping[str, Any]]) -> Watermark | None:
    """The newest commit that carries a watermark, from DESCRIBE HISTORY rows (newest first)."""
    for row in history:
        mark = Watermark.decode(row.get("userMetadata"), row.get("version"))
        if mark is not None:
            return mark
    return None
