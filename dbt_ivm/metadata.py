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
FORMAT_VERSION = 2  # 2: sources are told apart by their creation time, not Delta's table id

# Table properties of the backing table, written at build time.
PROP_DEFINITION = "dbt_ivm.definition"
PROP_DEFINITION_HASH = "dbt_ivm.definition_hash"
PROP_VIEW_CLASS = "dbt_ivm.view_class"
PROP_FORMAT = "dbt_ivm.format"
PROP_COLUMNS = "dbt_ivm.columns"


@dataclass(frozen=True)
class Watermark:
    sources: Mapping[str, int]  # table key -> last Delta version consumed
    definition_hash: str
    # table key -> the source's creation time in the catalog: a table dropped and created again
    # under the same name has another one (and a new change history)
    created: Mapping[str, str] = field(default_factory=dict)
    commit_version: int | None = None  # the backing table's version that recorded it

    def encode(self) -> str:
        body = {"v": FORMAT_VERSION, "def": self.definition_hash, "sources": dict(sorted(self.sources.items())),
                "created": dict(sorted(self.created.items()))}
        return MARKER + json.dumps(body, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str | None, commit_version: int | None = None) -> "Watermark | None":
        if not text or not text.startswith(MARKER):
            return None
        body = json.loads(text[len(MARKER):])
        return cls({k: int(v) for k, v in body["sources"].items()}, body["def"], dict(body.get("created", {})),
                   commit_version)


def latest_watermark(history: Iterable[Mapping[str, Any]]) -> Watermark | None:
    """The newest commit that carries a watermark, from DESCRIBE HISTORY rows (newest first)."""
    for row in history:
        mark = Watermark.decode(row.get("userMetadata"), row.get("version"))
        if mark is not None:
            return mark
    return None
