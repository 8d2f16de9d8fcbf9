"""What a run does, decided from its `Inspection` alone: no query, no write.

A build (and why), nothing, an append of the new rows, or the general refresh (stage the
change sets, apply them in one write). `refresh_policy` shapes it: `full` builds every run,
`incremental` refuses (raises) where a rebuild would be needed, `auto` weighs a refresh
against a rebuild from the commits' metrics and the sizes (`policy.choose`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from dbt_ivm.aggregates import loses_extremes
from dbt_ivm.catalog import settings_changed
from dbt_ivm.classes import Appender
from dbt_ivm.errors import StateError
from dbt_ivm.history import reshaped
from dbt_ivm.inspection import Inspection
from dbt_ivm.metadata import (
    FORMAT_VERSION,
    PROP_CLUSTER_BY,
    PROP_DEFINITION_HASH,
    PROP_FORMAT,
    PROP_SETTINGS,
    PROP_STATE,
)
from dbt_ivm.policy import Choice, Inputs, RefreshPolicy, choose


class Path(str, enum.Enum):
    BUILD = "build"  # create or replace the storage from the sources
    NOTHING = "nothing"  # no source moved
    APPEND = "append"  # one INSERT of the new rows, read from the feeds (`ViewRules.append_statement`)
    REFRESH = "refresh"  # stage each moved source's net change, apply them in one write
    ADVANCE = "advance"  # the moved sources' commits kept every row: record their versions, read nothing


@dataclass(frozen=True)
class Decision:
    path: Path
    reason: str = ""  # a build's reason, for the log
    notices: tuple[str, ...] = ()  # lines for the log, in order
    recreate_view: bool = False  # the stored rows are sound, only the view over them is missing
    choice: Choice | None = None  # refresh_policy auto's choice, when it was weighed
    appended: int = 0  # the append path's rows appended to the moved sources


def decide(inspection: Inspection, full_refresh: bool = False) -> Decision:
    """The run's path. Raises `StateError` where `refresh_policy: incremental` would have to rebuild."""
    i = inspection
    if i.stored is None:
        found = i.catalog.get(i.view.key)
        if found is not None and found.kind == "VIEW":  # a view over the storage, not an earlier table
            missing = f"its storage {i.backing} does not exist while the view does (dropped, or built by --empty)"
            return Decision(Path.BUILD, missing)
        return Decision(Path.BUILD, "first build")
    if full_refresh:
        return Decision(Path.BUILD, "full refresh")
    reason = rebuild_reason(i)
    if reason:
        return _rebuild(i, reason)
    if i.policy is RefreshPolicy.FULL:
        return Decision(Path.BUILD, "refresh_policy 'full'")
    notices = _notices(i)
    recreate = i.view_missing
    reason = source_reason(i)
    if reason:
        return _rebuild(i, reason, notices)
    if not i.moved:
        return Decision(Path.NOTHING, notices=notices, recreate_view=recreate)
    if all(m.kept for m in i.moved.values()):
        return Decision(Path.ADVANCE, notices=notices, recreate_view=recreate)
    notices += _replaced_notices(i)
    choice = None
    if i.policy is RefreshPolicy.AUTO:
        choice = auto_choice(i)
        notices += (f"refresh_policy auto: {choice.reason}",)
        if choice.rebuild:
            return Decision(Path.BUILD, f"refresh_policy auto chose a rebuild for {i.ranges}", notices, choice=choice)
    appended = appended_rows(i)
    path = Path.REFRESH if appended is None else Path.APPEND
    return Decision(path, notices=notices, recreate_view=recreate, choice=choice, appended=appended or 0)


def _rebuild(i: Inspection, reason: str, notices: tuple[str, ...] = ()) -> Decision:
    """A rebuild the run decided on (not asked for): refused under refresh_policy 'incremental'."""
    if i.policy is RefreshPolicy.INCREMENTAL:
        raise StateError(
            f"fast_mv {i.view} cannot be refreshed incrementally: {reason}; refresh_policy 'incremental' "
            "never rebuilds on its own: run dbt with --full-refresh for this model, or set refresh_policy "
            "to 'auto'"
        )
    return Decision(Path.BUILD, reason, notices)


def rebuild_reason(i: Inspection) -> str:
    """Why the stored view cannot be refreshed, or ''."""
    assert i.stored is not None
    props, mark, plan = i.stored.properties, i.stored.mark, i.plan
    if mark is None:
        return "no watermark in the stored view"
    if props.get(PROP_FORMAT) != str(FORMAT_VERSION):
        return "the stored view has an older format"
    if props.get(PROP_DEFINITION_HASH) != plan.definition_hash or mark.definition_hash != plan.definition_hash:
        return "the model or its sources' columns changed"
    if props.get(PROP_STATE, plan.state_before_recorded) != plan.hidden_names:
        return (
            "the stored view keeps other hidden columns than this version of dbt-ivm (it counts MIN/MAX's rows, "
            "sums AVG of integers exactly, and keeps a keep-the-first's ORDER BY values)"
        )
    changed = settings_changed(props.get(PROP_SETTINGS), i.settings)
    if changed:
        return f"the session's settings differ from the build's: {changed}"
    if i.stored.changed:
        return (
            f"{i.backing} was changed by commits fast_mv did not write ({i.stored.changed}), so its rows "
            f"may no longer be the ones its last refresh left at v{mark.commit_version}"
        )
    return ""


def source_reason(i: Inspection) -> str:
    """Why a source's change history cannot bring the view up to date, or ''."""
    assert i.mark is not None
    consumed, recorded = i.mark.sources, i.mark.created
    for key, version in i.pinned.items():
        if key not in consumed:
            return f"no watermark for source {key}"
        if recorded.get(key) not in (None, "", i.created[key]) and key not in i.renewed:
            return (
                f"source {key} was dropped and created again since it was last consumed "
                f"(created {recorded[key]}, now {i.created[key] or 'unknown'}), so its change history is gone"
            )
        if version < consumed[key]:
            return (
                f"source {key} is at version {version}, older than version {consumed[key]} that was already "
                "consumed (was it dropped and created again?), so its change history is gone"
            )
    return _reshaped_reason(i)


def _reshaped_reason(i: Inspection) -> str:
    """A column the view reads dropped or renamed within a moved source's versions, or ''."""
    for key, m in i.moved.items():
        read = sorted({name for s in i.plan.sources if s.table.key == key for name, _ in s.columns})
        found = "" if m.history is None else reshaped(m.history, m.span.first, m.span.pinned, read)
        if found:
            return (
                f"a column of source {key} that the view reads was dropped or renamed since it was last consumed "
                f"({found}): its change feed does not record what that did to the rows"
            )
    return ""


def _notices(i: Inspection) -> tuple[str, ...]:
    assert i.stored is not None
    notices = []
    if i.view_missing:
        notices.append("creating the view over its stored rows again")
    built_by = i.stored.properties.get(PROP_CLUSTER_BY, "")
    if built_by != ",".join(i.cluster_by):
        notices.append(
            f"cluster_by is ({', '.join(i.cluster_by)}), the stored rows are sorted by "
            f"({built_by.replace(',', ', ')}): the layout changes at the next build (--full-refresh)"
        )
    return tuple(notices)


def _replaced_notices(i: Inspection) -> tuple[str, ...]:
    """Under `incremental`, a replaced source is read whole (under `auto`, `auto_choice` rebuilds)."""
    if i.policy is not RefreshPolicy.INCREMENTAL:
        return ()
    return tuple(
        f"source {key} was replaced ({m.replaced}): reading its whole change feed (every row before and after), "
        "as refresh_policy 'incremental' does not rebuild on its own"
        for key, m in i.moved.items()
        if m.replaced
    )


def appended_rows(i: Inspection) -> int | None:
    """Rows the moved sources appended, when the append path applies: a monotone view with a
    declared unique key, and every moved source only appended (its commits say so); else None."""
    if not i.unique_key or not isinstance(i.rules, Appender):
        return None
    rows = [m.appended for m in i.moved.values()]
    return None if any(r is None for r in rows) else sum(r or 0 for r in rows)


def auto_choice(i: Inspection) -> Choice:
    """`refresh_policy` auto's choice, from metadata: the commits' metrics and the sizes."""
    replacements = [f"{key} ({m.replaced})" for key, m in i.moved.items() if m.replaced]
    if replacements:  # the change feed holds every row before and after: never cheaper than a rebuild
        return Choice(True, f"rebuild, a source was replaced: {', '.join(replacements)}")
    if i.plan.windows is not None and not i.plan.windows.partition_by:  # the refresh recomputes all of it too
        return Choice(True, "rebuild: the view's windows share no PARTITION BY, so every change recomputes all of it")
    if i.plan.subqueries is not None and not i.plan.subqueries.partition_by:  # one key: the same
        return Choice(
            True, "rebuild: the view's subqueries share no correlation key, so every change recomputes it all"
        )
    return choose(auto_inputs(i))


def auto_inputs(i: Inspection) -> Inputs:
    assert i.sizes is not None  # counted by `inspect` under auto where the watermark carries none
    plan, counts = i.plan, i.sizes
    appended = all(m.appended is not None for m in i.moved.values())
    rows = [counts[s.table.key] for s in plan.sources]
    joined = {key: sum(sum(rows) - rows[s.index] for s in plan.sources if s.table.key == key) for key in i.moved}
    return Inputs(
        {key: m.changed for key, m in i.moved.items()},
        joined,
        i.rules.INSERTS and appended,
        sum(rows),
        counts[i.backing.key],
        joins=len(plan.sources) > 1,
        compensates=plan.pads,
        removes=not appended,
        removes_extremes=loses_extremes(plan) and not appended,
    )
