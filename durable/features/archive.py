"""Retention: move finished runs out of the hot tables, in short batches a kill cannot tear.

A batch is one transaction: lock up to N finished runs (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL, so a run a service or worker holds is left for the next pass), append an
``archive`` event to each run's audit chain, copy the run, its journal, signals and audit
rows into the archive tables (``archive_models.py``), delete the originals, commit. A kill
before the commit leaves the batch as it was; nothing is ever in both places.

With an export directory the run's journal and signals go to a gzip JSON Lines file
instead (one history document per line, ``durable replay`` reads it); the file is fsynced
before the transaction that deletes the rows commits, and renamed from ``.partial`` once
it has. The run stays as a tombstone and its audit chain stays in the database: a trail
that must prove it was not altered cannot live only in a file anyone can rewrite, and a
tombstone keeps ``run_start`` from starting an archived id a second time.

Rows of other apps that point at a run (approval cases) stay where they are: their foreign
key carries no database constraint, and the run is read from the archive. A relation that
does carry one keeps its runs hot until its rows are gone (nothing is ever broken).
"""

import fcntl
import gzip
import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, OuterRef

from durable import chain, clock
from durable.documents import FORMAT, PARTIAL, entry_json
from durable.durations import parse_age
from durable.models import AuditAction, AuditEvent, JournalEntry, Signal, WorkflowRun
from durable.models.archive import (
    ArchiveBatch,
)
from durable.runtime.store import live
from durable.runtime.store.live import DROPPED, MOVED

DEFAULT_BATCH_SIZE = 500
MAX_BATCH_SIZE = 5000
EXPORT_SUFFIX = ".jsonl.gz"
EXPORT_FORMAT = FORMAT  # each line is a history document, plus the run's audit rows


class ArchiveError(Exception):
    """The archive cannot go on (an export directory that cannot be written, a bad option)."""


def final_statuses() -> list[str]:
    """Statuses no transition leaves, read from WorkflowRun's state machine (a failed run
    can still be retried or cancelled, so it is not final)."""
    field_ = WorkflowRun._meta.get_field("status")
    sources = {str(move.source) for move in field_.get_all_transitions(WorkflowRun)}
    if sources & {"*", "+"}:
        return []
    return [status for status, _ in field_.choices if status not in sources]


def kept_relations():
    """Foreign keys from other tables to runs whose rows stay when the run is archived."""
    return [
        relation
        for relation in WorkflowRun._meta.related_objects
        if relation.get_accessor_name() not in MOVED and relation.get_accessor_name() not in DROPPED
    ]


def archivable(finished_before: datetime):
    """Runs the archive may take: final, finished before the cutoff, and referenced by no row
    whose foreign key the database enforces (those stay until their rows are gone)."""
    runs = WorkflowRun.objects.filter(status__in=final_statuses(), finished_at__lt=finished_before)
    for relation in kept_relations():
        if relation.field.db_constraint:
            referencing = relation.related_model._base_manager.filter(
                **{relation.field.name: OuterRef("pk")}
            )
            runs = runs.exclude(Exists(referencing))
    return runs


def cutoff(age: str | timedelta) -> datetime:
    return clock.now() - (age if isinstance(age, timedelta) else parse_age(age))


@dataclass
class PassReport:
    finished_before: datetime
    batches: int = 0
    runs: int = 0
    files: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # dry run: runs per workflow


def archive_pass(
    *,
    finished_before: datetime,
    actor: str,
    audit: dict | None = None,
    export_dir: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_batches: int | None = None,
    dry_run: bool = False,
    progress=None,
) -> PassReport:
    """Archive every archivable run, batch by batch, until none is left or ``max_batches``.

    Each batch commits on its own, so a pass killed half-way is resumed by running it again.
    ``dry_run`` only counts, per workflow, what a pass would take now.
    """
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ArchiveError(
            f"the batch size must be between 1 and {MAX_BATCH_SIZE}, got {batch_size}"
        )
    report = PassReport(finished_before=finished_before)
    if dry_run:
        rows = (
            archivable(finished_before)
            .order_by()
            .values("workflow_name")
            .annotate(n=Count("id"))
            .values_list("workflow_name", "n")
        )
        report.counts = dict(sorted(rows))
        report.runs = sum(report.counts.values())
        return report
    directory = _export_directory(export_dir) if export_dir is not None else None
    if directory is not None:
        recover_exports(directory)
    while max_batches is None or report.batches < max_batches:
        started = time.monotonic()
        batch = archive_batch(
            finished_before=finished_before,
            actor=actor,
            audit=audit,
            export_dir=directory,
            batch_size=batch_size,
        )
        if batch is None:
            break
        batch.seconds = time.monotonic() - started  # the transaction, file and rename included
        report.batches += 1
        report.runs += batch.runs
        if batch.export_file:
            report.files.append(batch.export_file)
        if progress is not None:
            progress(batch)
    return report


def archive_batch(
    *,
    finished_before: datetime,
    actor: str,
    audit: dict | None = None,
    export_dir: Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> ArchiveBatch | None:
    """Archive one batch in one transaction; None when no run is left to take."""
    now = clock.now()
    token = uuid.uuid4().hex
    partial = None
    try:
        with transaction.atomic():
            ids = live.lock_finished_runs(archivable(finished_before), batch_size)
            if not ids:
                return None
            batch = ArchiveBatch(
                token=token,
                actor=actor,
                detail=audit or {},
                finished_before=finished_before,
                runs=len(ids),
                created_at=now,
            )
            # Small on purpose (100 million runs): the batch row holds the rest.
            _append_archive_events(ids, actor=actor, now=now, detail={"batch": token})
            if export_dir is not None:
                final = export_dir / f"runs-{now:%Y%m%dT%H%M%S}-{token}{EXPORT_SUFFIX}"
                partial = _write_export(final.with_name(final.name + PARTIAL), ids)
                batch.export_file, batch.export_sha256, batch.export_bytes = (
                    str(final),
                    partial.sha256,
                    partial.size,
                )
            batch.save()
            copied = live.move_to_archive(ids, batch, now=now, exported=export_dir is not None)
            if copied != len(ids):  # never commit a batch that lost a run on the way
                raise ArchiveError(
                    f"batch {batch.token}: copied {copied} of {len(ids)} runs; rolled back"
                )
    except BaseException:
        if partial is not None:  # rolled back: its rows are still hot, the file must go
            partial.discard()
        raise
    if partial is not None:
        partial.publish()
    return batch


def _append_archive_events(ids: list[str], *, actor: str, now: datetime, detail: dict) -> None:
    """The last link of each run's chain says who archived it, when, in which batch. The
    runs are locked by the caller, so reading the chain heads here is safe."""
    heads = dict.fromkeys(ids, (0, chain.GENESIS))
    for run_id, seq, row_hash in AuditEvent.objects.filter(run_id__in=ids).values_list(
        "run_id", "chain_seq", "row_hash"
    ):
        if seq > heads[run_id][0]:
            heads[run_id] = (seq, row_hash)
    events = []
    for run_id in ids:
        seq, prev = heads[run_id]
        event = AuditEvent(
            run_id=run_id,
            action=str(AuditAction.ARCHIVE),
            actor=actor,
            detail=detail,
            created_at=now,
            chain_seq=seq + 1,
            prev_hash=prev,
        )
        event.row_hash = chain.row_digest(
            event, prev, parent=AuditEvent.chain_parent, fields=AuditEvent.chained_fields
        )
        event.row_mac = chain.seal(event.row_hash)
        events.append(event)
    AuditEvent.objects.bulk_create(events)


# --- export files ---


def _export_directory(export_dir) -> Path:
    directory = Path(export_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ArchiveError(f"cannot create the export directory {directory}: {error}") from None
    if not os.access(directory, os.W_OK):
        raise ArchiveError(f"the export directory {directory} is not writable")
    return directory


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Partial:
    """An export file written and fsynced under an exclusive lock, named ``.partial`` until
    the batch that deletes its rows has committed."""

    def __init__(self, path: Path, handle, sha256: str, size: int):
        self.path, self.handle, self.sha256, self.size = path, handle, sha256, size

    def publish(self) -> None:
        final = self.path.with_name(self.path.name[: -len(PARTIAL)])
        os.replace(self.path, final)
        _fsync_directory(final.parent)
        self.handle.close()  # releases the lock

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self.handle.close()


def _write_export(path: Path, ids: list[str]) -> _Partial:
    handle = open(path, "xb")
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        with gzip.GzipFile(fileobj=handle, mode="wb", filename="", mtime=0) as compressed:
            for document in _export_documents(ids):
                compressed.write(json.dumps(document, default=_iso, ensure_ascii=False).encode())
                compressed.write(b"\n")
        handle.flush()
        os.fsync(handle.fileno())
        _fsync_directory(path.parent)
        size = handle.tell()
    except BaseException:
        handle.close()
        path.unlink(missing_ok=True)
        raise
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return _Partial(path, handle, digest, size)


def _iso(value):
    """Datetimes in full (to the microsecond: the audit hashes cover them)."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot export {type(value).__name__}")


def _export_documents(ids: list[str]):
    journals = {run_id: [] for run_id in ids}
    for entry in JournalEntry.objects.filter(run_id__in=ids).order_by("run_id", "position"):
        journals[entry.run_id].append(
            entry_json(entry) | {"id": entry.id, "updated_at": entry.updated_at}
        )
    signals = {run_id: [] for run_id in ids}
    for signal in Signal.objects.filter(run_id__in=ids).order_by("id"):
        signals[signal.run_id].append(
            {
                "id": signal.id,
                "name": signal.name,
                "payload": signal.payload,
                "dedupe_key": signal.dedupe_key,
                "consumed_position": signal.consumed_position,
                "consumed_at": signal.consumed_at,
                "created_at": signal.created_at,
            }
        )
    audits = {run_id: [] for run_id in ids}
    for event in AuditEvent.objects.filter(run_id__in=ids).order_by("run_id", "chain_seq"):
        audits[event.run_id].append(
            {
                "id": event.id,
                "action": event.action,
                "actor": event.actor,
                "detail": event.detail,
                "created_at": event.created_at,
                "chain_seq": event.chain_seq,
                "prev_hash": event.prev_hash,
                "row_hash": event.row_hash,
            }
        )
    for run in WorkflowRun.objects.filter(id__in=ids).order_by("finished_at", "id"):
        yield {
            "format": EXPORT_FORMAT,
            "run": {
                "id": run.id,
                "workflow_name": run.workflow_name,
                "workflow_version": run.workflow_version,
                "input": run.input,
                "status": run.status,
                "result": run.result,
                "error": run.error,
                "attributes": run.attributes,
                "advances": run.advances,
                "created_at": run.created_at,
                "updated_at": run.updated_at,
                "finished_at": run.finished_at,
            },
            "journal": journals[run.id],
            "signals": signals[run.id],
            "audit": audits[run.id],
        }


def recover_exports(directory: Path) -> list[str]:
    """Finish what a killed pass left in ``directory``: a ``.partial`` whose batch committed is
    renamed into place; one whose batch never committed (its rows are still hot) is deleted.
    A file another pass is still writing is locked and left alone."""
    actions = []
    for path in sorted(Path(directory).glob(f"*{EXPORT_SUFFIX}{PARTIAL}")):
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            token = path.name[: -len(EXPORT_SUFFIX + PARTIAL)].rsplit("-", 1)[-1]
            if ArchiveBatch.objects.filter(token=token).exists():
                os.replace(path, path.with_name(path.name[: -len(PARTIAL)]))
                actions.append(f"completed {path.name}")
            else:
                path.unlink()
                actions.append(f"removed {path.name} (its batch never committed)")
    if actions:
        _fsync_directory(Path(directory))
    return actions


# --- the beat-scheduled policy ---


def retention_settings() -> dict | None:
    """DURABLE_RETENTION, or None when retention is off (the default)."""
    policy = getattr(settings, "DURABLE_RETENTION", None)
    if not policy or not policy.get("finished_before"):
        return None
    return policy


def retention_pass() -> PassReport | None:
    """One bounded pass of the configured policy (at most ``max_runs`` runs), for beat."""
    policy = retention_settings()
    if policy is None:
        return None
    batch_size = int(policy.get("batch_size", DEFAULT_BATCH_SIZE))
    max_runs = int(policy.get("max_runs", 50_000))
    return archive_pass(
        finished_before=cutoff(policy["finished_before"]),
        actor="beat:retention",
        audit={"via": "beat", "policy": {k: str(v) for k, v in policy.items()}},
        export_dir=policy.get("export") or None,
        batch_size=batch_size,
        max_batches=max(1, -(-max_runs // batch_size)),
    )
