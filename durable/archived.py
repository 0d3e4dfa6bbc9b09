"""Reads on archived runs for the admin, the API, ``durable export`` and ``durable replay``.

An archived run's journal and signals are in the archive tables, or, for a run archived
with ``--export``, in the gzip file its batch wrote (read line by line until the run).
"""
from pathlib import Path

from django.utils.dateparse import parse_datetime

from durable.archive import PARTIAL
from durable.documents import FORMAT, entry_json, export_file_documents, history_parse
from durable.archive_models import ArchivedAuditEvent, ArchivedJournalEntry, ArchivedRun, ArchivedSignal
from durable.errors import RunNotFound


class ExportMissing(RunNotFound):
    """The run was exported to a file that is no longer where its batch wrote it."""


def archived_get(run_id: str) -> ArchivedRun:
    run = ArchivedRun.objects.select_related("batch").filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def is_archived(run_id: str) -> bool:
    return ArchivedRun.objects.filter(pk=run_id).exists()


def _exported_document(run: ArchivedRun) -> dict:
    path = Path(run.batch.export_file)
    if not path.exists() and Path(str(path) + PARTIAL).exists():
        path = Path(str(path) + PARTIAL)   # its pass was killed before the rename; still committed
    if not path.exists():
        raise ExportMissing(f"run {run.id!r} was exported to {run.batch.export_file}, which is missing")
    for document in export_file_documents(path):
        if document["run"]["id"] == run.id:
            return document
    raise ExportMissing(f"run {run.id!r} is not in {path}")


def _datetime(value):
    return parse_datetime(value) if isinstance(value, str) else value


def archived_journal(run: ArchivedRun) -> list[ArchivedJournalEntry]:
    if not run.batch.export_file:
        return list(run.journal.order_by("position"))
    fields = {f.name for f in ArchivedJournalEntry._meta.concrete_fields} - {"run"}
    return [ArchivedJournalEntry(run=run, **{name: _datetime(value) if name.endswith("_at") else value
                                              for name, value in item.items() if name in fields})
            for item in _exported_document(run)["journal"]]


def archived_signals(run: ArchivedRun) -> list[ArchivedSignal]:
    if not run.batch.export_file:
        return list(run.signals.order_by("id"))
    fields = {f.name for f in ArchivedSignal._meta.concrete_fields} - {"run"}
    return [ArchivedSignal(run=run, **{name: _datetime(value) if name.endswith("_at") else value
                                       for name, value in item.items() if name in fields})
            for item in _exported_document(run)["signals"]]


def archived_audit(run: ArchivedRun) -> list[ArchivedAuditEvent]:
    return list(ArchivedAuditEvent.objects.filter(run_id=run.id).order_by("chain_seq"))


def archived_run_full(run: ArchivedRun) -> ArchivedRun:
    """The run with its input, result and error, read back from its export file if need be."""
    if run.batch.export_file:
        recorded = _exported_document(run)["run"]
        run.input, run.result, run.error = recorded["input"], recorded["result"], recorded["error"]
    return run


def archived_detail(run_id: str) -> dict:
    """The API's run detail for an archived run, plus where it went."""
    from durable.serializers import JournalEntrySerializer, RunSerializer, SignalSerializer

    run = archived_run_full(archived_get(run_id))
    return {**RunSerializer(run).data,
            "journal": JournalEntrySerializer(archived_journal(run), many=True).data,
            "signals": SignalSerializer(archived_signals(run), many=True).data,
            "archived": {"archived_at": run.archived_at.isoformat(), "batch": run.batch.token,
                         "export_file": run.batch.export_file or None}}


def history_document(run_id: str) -> dict:
    """The ``durable export`` document of an archived run (the same format as a live one)."""
    run = archived_run_full(archived_get(run_id))
    return {
        "format": FORMAT,
        "run": {"id": run.id, "workflow_name": run.workflow_name, "workflow_version": run.workflow_version,
                "input": run.input, "status": run.status, "result": run.result, "error": run.error,
                "created_at": run.created_at.isoformat(), "finished_at": run.finished_at.isoformat()},
        "journal": [entry_json(entry) for entry in archived_journal(run)],
        "signals": [{"id": s.id, "name": s.name, "payload": s.payload, "dedupe_key": s.dedupe_key,
                     "consumed_position": s.consumed_position,
                     "created_at": s.created_at.isoformat() if s.created_at else None}
                    for s in archived_signals(run)],
    }


def histories_archived(*, workflow: str | None = None, statuses=()):
    """Histories of archived runs, oldest first, for ``durable replay --archived``."""
    runs = ArchivedRun.objects.select_related("batch").order_by("finished_at", "id")
    if workflow:
        runs = runs.filter(workflow_name=workflow)
    if statuses:
        runs = runs.filter(status__in=list(statuses))
    for run in runs.iterator(chunk_size=200):
        yield history_parse(history_document(run.id), source=f"archived run {run.id}")
