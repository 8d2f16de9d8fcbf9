"""The storage's table properties a refresh reads, known without asking Spark (`SHOW TBLPROPERTIES`).

Every fast_mv write records, in its watermark, what it knew of those properties at its commit
(`record`): a build the ones its CREATE set, a refresh the ones it read or knew. A property
changes only in a commit, so while the storage's newest commit is the watermark's, and the
refresh that wrote it read them at the version before it, its properties are the recorded ones.
The record is a digest of the ones a run compares with what it would build (`KEYS`, `expected`)
and the change data feed's value; a run whose expectation has another digest, or whose storage
has a newer commit, reads them (`catalog.read_stored`). An ALTER that lands after a refresh read
them and before its write leaves a commit between the two: the next run reads them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from dbt_ivm.ir import ViewPlan
from dbt_ivm.metadata import (
    FORMAT_VERSION,
    PROP_CLUSTER_BY,
    PROP_DEFINITION_HASH,
    PROP_FORMAT,
    PROP_SETTINGS,
    PROP_STATE,
    Watermark,
)
from dbt_ivm.render import CHANGE_FEED

# The properties a refresh decides by (`decide.rebuild_reason`, `decide._notices`), besides the feed's.
KEYS = (PROP_FORMAT, PROP_DEFINITION_HASH, PROP_STATE, PROP_SETTINGS, PROP_CLUSTER_BY)


def _digest(properties: Mapping[str, str]) -> str:
    body = {k: properties[k] for k in KEYS if k in properties}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def record(properties: Mapping[str, str], read: int | None = None, feed_on: bool = False) -> dict[str, Any]:
    """What a watermark records of the storage's `properties` at its commit: a build's are its
    CREATE's; a refresh's were read at version `read`, and hold at its commit only where that
    commit is the next one (`known`: no ALTER landed in between). `feed_on`: the change data feed
    was turned on after they were read (`Maintainer.materialize`)."""
    found: dict[str, Any] = {"h": _digest(properties)}
    if feed_on or CHANGE_FEED in properties:
        found["feed"] = "true" if feed_on else properties[CHANGE_FEED]
    if read is not None:
        found["read"] = read
    return found


def expected(plan: ViewPlan, settings: str, cluster_by: tuple[str, ...]) -> dict[str, str]:
    """The `KEYS` a build of `plan` records (`Maintainer._properties`); `settings` encoded."""
    return {
        PROP_FORMAT: str(FORMAT_VERSION),
        PROP_DEFINITION_HASH: plan.definition_hash,
        PROP_STATE: plan.hidden_names,
        PROP_SETTINGS: settings,
        PROP_CLUSTER_BY: ",".join(cluster_by),
    }


def known(mark: Watermark | None, latest: int, guess: Mapping[str, str] | None) -> dict[str, str] | None:
    """The storage's properties as `mark` recorded them, when its commit is the storage's newest
    (`latest`) and they are the `guess`; None where they must be read."""
    found = mark.props if mark is not None else None
    if guess is None or not isinstance(found, Mapping) or mark is None or mark.commit_version != latest:
        return None
    if found.get("h") != _digest(guess) or ("read" in found and mark.commit_version != found["read"] + 1):
        return None
    return {**guess, **({CHANGE_FEED: str(found["feed"])} if "feed" in found else {})}
