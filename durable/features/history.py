"""Run histories (the documents of ``durable.documents``), and their read-only replay
against the current code.

A history is what a run recorded: its workflow name, version and input, its journal and
its signals. Replaying one calls the registered workflow function with a context that
answers every durable call from the history: no step runs, nothing is written and the
database is not queried. The first call that differs from the journal is a divergence
(the run would be blocked in production); the first call with no recorded outcome is
where the history ends, which is success: everything recorded still replays.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from durable import selectors
from durable.documents import (
    FORMAT,
    History,
    RecordedEntry,
    RecordedRun,  # noqa: F401 (the public names)
    entry_json,
    export_file_documents,
    history_parse,
    iso,
)
from durable.errors import Cancelled, JournalMismatch, WorkflowNotFound
from durable.models import ArchivedRun, JournalEntry, Signal, WorkflowRun
from durable.runtime import registry
from durable.runtime.context import (
    Continued,
    Diverged,
    Raised,
    ReplayContext,
    Suspended,
    describe,
    replay,
)
from durable.runtime.store.recorded import HistoryEnds, RecordedStore, without_database


@dataclass
class ReplayReport:
    history: History
    ok: bool
    summary: str
    diff: str = ""


def history_export(run_id: str) -> dict:
    """The JSON document of a run's history (what ``durable export`` writes)."""
    try:
        run = WorkflowRun.objects.get(pk=run_id)
    except WorkflowRun.DoesNotExist:
        return history_archived(run_id)  # an archived run exports the same document
    journal = JournalEntry.objects.filter(run_id=run.id).order_by("position")
    signals = Signal.objects.filter(run_id=run.id).order_by("id")
    return {
        "format": FORMAT,
        "run": {
            "id": run.id,
            "workflow_name": run.workflow_name,
            "workflow_version": run.workflow_version,
            "input": run.input,
            "status": run.status,
            "result": run.result,
            "error": run.error,
            "created_at": iso(run.created_at),
            "finished_at": iso(run.finished_at),
        },
        "journal": [entry_json(entry) for entry in journal],
        "signals": [
            {
                "id": signal.id,
                "name": signal.name,
                "payload": signal.payload,
                "dedupe_key": signal.dedupe_key,
                "consumed_position": signal.consumed_position,
                "created_at": iso(signal.created_at),
            }
            for signal in signals
        ],
    }


def history_archived(run_id: str) -> dict:
    """The ``durable export`` document of an archived run (the same format as a live one)."""
    run = selectors.archived_run_full(selectors.archived_get(run_id))
    return {
        "format": FORMAT,
        "run": {
            "id": run.id,
            "workflow_name": run.workflow_name,
            "workflow_version": run.workflow_version,
            "input": run.input,
            "status": run.status,
            "result": run.result,
            "error": run.error,
            "created_at": run.created_at.isoformat(),
            "finished_at": run.finished_at.isoformat(),
        },
        "journal": [entry_json(entry) for entry in selectors.archived_journal(run)],
        "signals": [
            {
                "id": s.id,
                "name": s.name,
                "payload": s.payload,
                "dedupe_key": s.dedupe_key,
                "consumed_position": s.consumed_position,
                "created_at": s.created_at.isoformat() if s.created_at else None,
            }
            for s in selectors.archived_signals(run)
        ],
    }


def histories_archived(*, workflow: str | None = None, statuses=()):
    """Histories of archived runs, oldest first, for ``durable replay --archived``."""
    runs = ArchivedRun.objects.select_related("batch").order_by("finished_at", "id")
    if workflow:
        runs = runs.filter(workflow_name=workflow)
    if statuses:
        runs = runs.filter(status__in=list(statuses))
    for run in runs.iterator(chunk_size=200):
        yield history_parse(history_archived(run.id), source=f"archived run {run.id}")


def history_load(path: str | Path) -> History:
    path = Path(path)
    return history_parse(json.loads(path.read_text(encoding="utf-8")), source=str(path))


def histories_in_export(path: str | Path):
    """Every run's history in a ``durable archive --export`` file (gzip JSON Lines)."""
    for line, document in enumerate(export_file_documents(path), start=1):
        yield history_parse(document, source=f"{path}:{line} ({document.get('run', {}).get('id')})")


def histories_live(*, workflow: str | None = None, statuses=(), batch: int = 200):
    """Histories of runs in the database (one journal query per batch of runs)."""
    runs = WorkflowRun.objects.order_by("created_at", "id")
    if workflow:
        runs = runs.filter(workflow_name=workflow)
    if statuses:
        runs = runs.filter(status__in=list(statuses))
    ids = list(runs.values_list("id", flat=True))
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        journals: dict[str, dict[int, RecordedEntry]] = {run_id: {} for run_id in chunk}
        for entry in JournalEntry.objects.filter(run_id__in=chunk):
            journals[entry.run_id][entry.position] = RecordedEntry(
                position=entry.position,
                kind=entry.kind,
                name=entry.name,
                status=entry.status,
                result=entry.result,
                error=entry.error,
                attempt=entry.attempt,
                idempotency_key=entry.idempotency_key,
                wake_at=iso(entry.wake_at),
            )
        for run in WorkflowRun.objects.filter(id__in=chunk).order_by("created_at", "id"):
            recorded = RecordedRun(
                id=run.id,
                workflow_name=run.workflow_name,
                workflow_version=run.workflow_version,
                input=run.input,
                status=run.status,
                result=run.result,
                error=run.error,
            )
            yield History(run=recorded, journal=journals[run.id], source=f"run {run.id}")


# --- replay ---


def _diff(history: History, divergence: JournalMismatch) -> str:
    position = divergence.position
    lines = []
    expected = divergence.expected
    recorded = describe(expected.kind, expected.name) if expected else "nothing more"
    lines.append(f"  expected (journal, position {position}): {recorded}")
    lines.append(f"  found    (code,    position {position}): {divergence.found}")
    elsewhere = [
        entry.position
        for entry in history.journal.values()
        if describe(entry.kind, entry.name) == divergence.found and entry.position != position
    ]
    if elsewhere:
        where = ", ".join(str(p) for p in sorted(elsewhere))
        lines.append(
            f"  the journal recorded {divergence.found} at position {where}: "
            "reordered, or a step was added or removed before it"
        )
    elif expected is not None and not divergence.found.startswith("nothing"):
        lines.append(
            f"  the journal never recorded {divergence.found}: renamed or new "
            "(guard new code with workflow.patched(), or start a new version)"
        )
    lines.append("")
    lines.append(f"  {'':2}{'position':>8}  {'journal (recorded)':<40}code (now)")
    first = max(0, position - 6)
    last = min(max(position, max(history.journal, default=0)), position + 3)
    for index in range(first, last + 1):
        entry = history.journal.get(index)
        recorded = describe(entry.kind, entry.name) if entry else ""
        if index < position:
            now = recorded  # everything before the mismatch matched the journal
        elif index == position:
            now = divergence.found
        else:
            now = ""
        if not recorded and not now:
            continue
        marker = ">" if index == position else ""
        lines.append(f"  {marker:2}{index:>8}  {recorded:<40}{now}".rstrip())
    return "\n".join(lines)


def _entries(count: int) -> str:
    return f"{count} journal {'entry' if count == 1 else 'entries'}"


def _label(history: History) -> str:
    run = history.run
    return f"{run.workflow_name} v{run.workflow_version}, run {run.id}"


def history_replay(history: History) -> ReplayReport:
    """Replay ``history`` against the registered code of its workflow and version, through
    the same replay context and driver as a live advance."""
    label = _label(history)
    try:
        definition = registry.get(history.run.workflow_name, history.run.workflow_version)
    except WorkflowNotFound as exc:
        return ReplayReport(history, False, f"{label}: {exc}")
    store = RecordedStore(history)
    ctx = ReplayContext(history.run, store, store.load())
    try:
        with without_database():
            args, kwargs = definition.decode_input(history.run.input)
            outcome = replay(ctx, definition.fn, args, kwargs)
    except HistoryEnds as end:
        return ReplayReport(
            history,
            True,
            f"{label}: {_entries(end.position)} replay; at position {end.position} {end.reason}",
        )
    if isinstance(outcome, Suspended):
        position = outcome.suspend.position
        return ReplayReport(
            history,
            True,
            f"{label}: {_entries(position)} replay; "
            f"at position {position} {store.reason_at(position)}",
        )
    if isinstance(outcome, Diverged):
        divergence = outcome.divergence
        if isinstance(divergence, JournalMismatch):
            return ReplayReport(
                history,
                False,
                f"{label}: diverges at position {divergence.position}",
                _diff(history, divergence),
            )
        # strict mode, a database query, a signal mix-up
        return ReplayReport(
            history, False, f"{label}: at position {ctx.position}: {divergence.message}"
        )
    if isinstance(outcome, Continued):
        if history.run.status == "continued":
            return ReplayReport(
                history,
                True,
                f"{label}: {_entries(ctx.position)} replay; "
                "the code continues as new as the run did",
            )
        return ReplayReport(
            history,
            False,
            f"{label}: the code continues as new after position {ctx.position} "
            f"(the run recorded {history.run.status or 'no status'})",
        )
    if isinstance(outcome, Raised):
        exc = outcome.error
        recorded = (history.run.error or {}).get("type")
        if history.run.status == "cancelled" and isinstance(exc, Cancelled):
            return ReplayReport(
                history,
                True,
                f"{label}: {_entries(ctx.position)} replay; the code ends cancelled as the run did",
            )
        if history.run.status == "failed" and recorded == type(exc).__name__:
            return ReplayReport(
                history,
                True,
                f"{label}: {_entries(ctx.position)} replay; "
                f"the code fails as the run did ({type(exc).__name__})",
            )
        return ReplayReport(
            history,
            False,
            f"{label}: the code raised {type(exc).__name__}: {exc} "
            f"after position {ctx.position} (the run recorded "
            f"{history.run.status or 'no status'})",
        )
    return ReplayReport(
        history, True, f"{label}: {_entries(ctx.position)} replay; the code returns"
    )
