"""The storage configs dbt-spark users already write, applied to the view's storage (`<model>__ivm`).

`file_format` (Delta only), `tblproperties` (merged with the properties fast_mv records),
`partition_by` (Delta `PARTITIONED BY`), `liquid_clustered_by` (Delta `CLUSTER BY`) and
`location_root` (the storage at `<location_root>/<model>__ivm`, as dbt-spark places a table at
`<location_root>/<model>`). Each build's CREATE OR REPLACE applies them; refreshes write into the
same table, so they hold across refreshes and rebuilds. None changes a row: a changed one applies from the next build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dbt_ivm.errors import ConfigError
from dbt_ivm.ir import TableName, ViewPlan
from dbt_ivm.render import col, ident, output_columns

OWN_PREFIX = "dbt_ivm."  # the properties fast_mv records on its storage (`metadata.PROP_*`)


@dataclass(frozen=True)
class Storage:
    """The model's storage configs as dbt passes them; validated when made, before any SQL runs."""

    file_format: str | None = None
    tblproperties: Mapping[str, Any] | None = None
    partition_by: str | Sequence[str] | None = None
    liquid_clustered_by: str | Sequence[str] | None = None
    location_root: str | None = None

    def sets(self, key: str) -> bool:
        """The user's `tblproperties` name `key`."""
        return key.lower() in {str(k).lower() for k in (self.tblproperties or {})}

    def __post_init__(self) -> None:
        if self.file_format is not None and str(self.file_format).lower() != "delta":
            raise ConfigError(
                f"file_format {self.file_format!r}: a fast_mv is stored in Delta (its refresh is a Delta MERGE "
                "with the watermark in the same commit); set file_format='delta' or drop it"
            )
        user_properties(self.tblproperties)
        if self.partition_by and self.liquid_clustered_by:
            raise ConfigError(
                "partition_by and liquid_clustered_by are both set: a Delta table is partitioned or "
                "liquid-clustered, not both; keep one"
            )


def user_properties(tblproperties: Mapping[str, Any] | None) -> dict[str, str]:
    """The `tblproperties` config as text; a key of fast_mv's own (`dbt_ivm.*`) fails, naming it."""
    if tblproperties is None:
        return {}
    if not isinstance(tblproperties, Mapping):
        raise ConfigError(f"tblproperties must be a mapping of property names to values, not {tblproperties!r}")
    props = {str(k): _text(v) for k, v in tblproperties.items()}
    own = [k for k in props if k.lower().startswith(OWN_PREFIX)]
    if own:
        raise ConfigError(
            f"tblproperties {', '.join(map(repr, own))}: fast_mv records its own properties under "
            f"{OWN_PREFIX}* on the storage (its definition, state and watermark format); drop them from tblproperties"
        )
    return props


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def table_properties(
    storage: Storage, own: Mapping[str, str], needed: Mapping[str, str] | None = None, why: str = ""
) -> dict[str, str]:
    """The user's `tblproperties` with fast_mv's `own` (which `user_properties` keeps apart), and
    the properties a reader of the storage relies on (`needed`, because `why`: e.g. its change
    data feed for a fast_mv over this one); a user value that differs from one fails, naming both."""
    user = user_properties(storage.tblproperties)
    for key, value in (needed or {}).items():
        if key in user and user[key].lower() != value.lower():
            raise ConfigError(
                f"tblproperties {key!r} = {user[key]!r} conflicts with {key} = {value!r}, which fast_mv sets "
                f"on this storage because {why or 'its refresh needs it'}; drop {key!r} from tblproperties"
            )
    return {**user, **(needed or {}), **own}


def location_property(storage: Storage, backing: TableName) -> list[exp.Expr]:
    """The storage's LOCATION under `location_root`, as dbt-spark's `location_clause` places a table."""
    if not storage.location_root:
        return []
    return [exp.LocationProperty(this=exp.Literal.string(f"{str(storage.location_root).rstrip('/')}/{backing.name}"))]


def layout_properties(storage: Storage, plan: ViewPlan, stored: Sequence[str]) -> list[exp.Expr]:
    """PARTITIONED BY or CLUSTER BY of the storage's CREATE, over output columns the storage holds
    under their own names (`stored`: its columns); another column fails, naming the config."""
    found: list[exp.Expr] = []
    for config, value in (("partition_by", storage.partition_by), ("liquid_clustered_by", storage.liquid_clustered_by)):
        columns = output_columns(plan, value, config)
        hidden = [c for c in columns if c not in stored]
        if hidden:
            raise ConfigError(
                f"{config} {', '.join(map(repr, hidden))}: this view's storage holds the column under a hidden "
                f"name (an aggregate view stores its groups' keys and states), so Delta cannot lay it out by it; "
                f"drop {config} (cluster_by lays out a view without GROUP BY)"
            )
        if columns and config == "partition_by":
            found.append(exp.PartitionedByProperty(this=exp.Schema(expressions=[ident(c) for c in columns])))
        elif columns:
            found.append(exp.ClusterProperty(expressions=[col(c) for c in columns]))
    return found
