"""Writes on runs: start, signal, cancel, retry, wake. Each works inside the caller's
transaction: the row, its audit event and its dispatch commit together or not at all.
"""
import json
import logging
import uuid
from contextlib import nullcontext
from datetime import timedelta

from django.db import IntegrityError, connection, transaction

from durable import clock, codec, conf, hooks, registry, sql
from durable.archive_models import ArchivedRun
from durable.durations import as_timedelta
from durable.dispatch import dispatch
from durable.errors import InvalidTransition, RunArchived, RunConflict, RunFinished, RunNotFound, SignalConflict
from durable.models import (
    FINISHED_STATUSES,
    AuditAction,
    AuditEvent,
    EntryKind,
    EntryStatus,
    JournalEntry,
    Signal,
    WorkflowRun,
)

log = logging.getLogger(__name__)


def _audit(run_id: str, action: str, actor: str, detail: dict | None = None, *,
           first: bool = False) -> AuditEvent:
    """Every caller holds the run's row lock already (it inserted, updated or locked the
    row in this transaction); ``first`` when it created the run just now."""
    event = AuditEvent(run_id=run_id, action=str(action), actor=actor or "system", detail=detail or {},
                       created_at=clock.now())
    event.save(parent_locked=True, first_in_chain=first)
    return event


def _archived(run_id: str) -> RunArchived:
    return RunArchived(f"run {run_id!r} finished and was archived; it cannot start again "
                       "(read it in the archive: durable export, the admin, the API)")


def _grace():
    return clock.now() + timedelta(seconds=conf.dispatch_grace_seconds())


def _from(transition: str) -> str:
    """"failed or blocked": the statuses ``transition`` starts from, for error messages."""
    return " or ".join(WorkflowRun.sources_of(transition))


def _get_locked(run_id: str) -> WorkflowRun:
    run = WorkflowRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def run_start(workflow, *args, actor: str, id: str | None = None,
              audit: dict | None = None, parent: str | None = None, **kwargs) -> WorkflowRun:
    """Create a run and dispatch it once the caller's transaction commits.

    Starting an id that exists returns the existing run (a retried request or a
    redelivered webhook must not start a second process); the same id with another
    workflow or other input is a RunConflict, never a silent mix-up.
    """
    definition = registry.resolve(workflow)
    encoded = definition.encode_input(args, kwargs)
    run_id = id or f"{definition.name}:{uuid.uuid4()}"
    now = clock.now()
    run = WorkflowRun(id=run_id, workflow_name=definition.name, workflow_version=definition.version,
                      input=encoded, created_at=now, updated_at=now, wake_at=_grace(),
                      parent_id=parent)
    with transaction.atomic(savepoint=False):  # joins the caller's transaction as it is
        # One statement: not inserted when the id is live or archived (an archived id never
        # starts again), so the check costs nothing on the common path.
        inserted = sql.insert_unless_exists(run, unless_in=ArchivedRun)
        if inserted:
            _audit(run_id, AuditAction.START, actor, {"workflow": definition.name, "version": definition.version,
                                            **(audit or {})}, first=True)
    if not inserted:
        existing = WorkflowRun.objects.filter(pk=run_id).first()
        if existing is None:  # what stopped the insert is the archive (nothing was written)
            raise _archived(run_id)
        if existing.workflow_name != definition.name or existing.input != encoded:
            raise RunConflict(
                f"run {run_id!r} already exists as {existing.workflow_name} with input "
                f"{existing.input!r}; refusing to start {definition.name} with input {encoded!r}")
        return existing
    dispatch(run_id, queue=definition.queue)
    return run


def signal_send(run_id: str, name: str, payload=None, *, dedupe_key: str | None = None,
                reserved_by: str | None = None, actor: str,
                audit: dict | None = None) -> Signal:
    """Record a signal for a run and wake the run once the caller's transaction commits.

    A signal with a dedupe key already seen for this run is the same signal: the
    provider's redelivery must not resume the workflow twice. The same key with another
    name or payload is a ``SignalConflict``, never a silent duplicate; so is a key under a
    prefix another app reserved (``reserve_dedupe_prefix``): its owner passes
    ``reserved_by``. A refused signal writes nothing.
    """
    if not name:
        raise ValueError("a signal needs a name")
    encoded = codec.encode(payload)
    _check_reservation(dedupe_key, reserved_by)
    now = clock.now()
    existing = None
    for locked in (False, True):
        signal = Signal(run_id=run_id, name=name, payload=encoded, dedupe_key=dedupe_key or None, created_at=now)
        event = AuditEvent(run_id=run_id, action=str(AuditAction.SIGNAL), actor=actor or "system", created_at=now,
                           detail={"name": name, "dedupe_key": dedupe_key, **(audit or {})})
        try:
            with _one_write(locked):  # all or nothing: a refusal leaves the caller's transaction usable
                if locked:
                    _get_locked(run_id)
                # Waking the run bumps signal_seq (which also locks its row): a worker about
                # to park the run sees the bump and looks again (Lease.finish), so no signal
                # is slept through.
                woken = sql.record_signal(signal, event, now, _grace())
            break
        except IntegrityError:
            # The key's signal exists (a redelivery, or a concurrent sender won), or another
            # writer extended the audit chain while we waited for the run: again, locked.
            existing = _signal_with_key(run_id, dedupe_key)
            if existing is not None:
                break
            if locked:
                raise
    if existing is None and not woken:
        existing = _signal_with_key(run_id, dedupe_key)  # a redelivery to a finished run
        if existing is None:
            status = WorkflowRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
            if status is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            raise RunFinished(f"run {run_id!r} is {status} and takes no more signals")
    if existing is not None:
        return _same_signal(existing, name, encoded)
    dispatch(run_id)  # a blocked run ignores it; its signals wait for the repair
    return signal


def _one_write(locked: bool):
    """The scope of signal_send's writes. One statement alone needs none on PostgreSQL
    outside a transaction (it is atomic by itself); a caller's transaction gets a savepoint,
    so a refused signal leaves it usable; the locked retry and SQLite, a transaction."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block and not locked:
        return nullcontext()
    return transaction.atomic()


def _signal_with_key(run_id: str, dedupe_key: str | None) -> Signal | None:
    return Signal.objects.filter(run_id=run_id, dedupe_key=dedupe_key).first() if dedupe_key else None


def signal_replace_untaken(run_id: str, dedupe_key: str, payload, *, actor: str,
                           audit: dict | None = None) -> bool:
    """Give the run's not-yet-taken signal with ``dedupe_key`` a new payload, in the caller's
    transaction: for an engine signal whose news changed before the run read it (a failed
    child, retried, that now completed). False when there is none left to change: the run
    took it and acted on it."""
    with transaction.atomic(savepoint=False):
        _get_locked(run_id)
        untaken = Signal.objects.filter(run_id=run_id, dedupe_key=dedupe_key, consumed_position__isnull=True)
        signal = untaken.first()
        if signal is None:
            return False
        untaken.update(payload=codec.encode(payload))
        _audit(run_id, AuditAction.SIGNAL, actor, {"name": signal.name, "signal_id": signal.pk, "dedupe_key": dedupe_key,
                                         "replaced": True, **(audit or {})})
    return True


def run_lock(run_id: str) -> None:
    """Inside the caller's transaction: hold the run's row until it ends.

    For an app whose rows change with a run's (an approval case): it locks the run first,
    then its own rows, the order run_cancel and the run's own steps take, so the two wait
    for each other instead of deadlocking. RunNotFound if there is no such run."""
    if not connection.in_atomic_block:
        raise RuntimeError("run_lock holds the row until the transaction ends: call it inside one")
    if not list(WorkflowRun.objects.select_for_update().filter(pk=run_id).values_list("pk")):
        raise RunNotFound(f"no run with id {run_id!r}")


def run_cancel(run_id: str, *, reason: str = "", actor: str, graceful: bool = False,
               cleanup=None, audit: dict | None = None) -> WorkflowRun:
    """Cancel a run. Bumping the fencing token stops a worker that is running it right now.

    ``graceful=True`` (for a run whose body can still run) wakes the run instead and raises
    ``workflow.Cancelled`` from the call it is paused in, so the body can clean up (tell the
    customer, release a reservation); the run ends ``cancelled`` when the body is done, or
    when ``cleanup`` (default DURABLE_CANCEL_CLEANUP_SECONDS, one hour) has passed.
    """
    with transaction.atomic():
        run = _get_locked(run_id)
        if not run.allows("cancel"):
            raise RunFinished(f"run {run_id!r} is already {run.status}")
        now = clock.now()
        if graceful and run.allows("claim"):
            return _cancel_gracefully(run, reason=reason, actor=actor, now=now, audit=audit,
                                      cleanup=as_timedelta(cleanup) if cleanup is not None
                                      else timedelta(seconds=conf.cancel_cleanup_seconds()))
        changes = dict(status=run.status_after("cancel"), fencing_token=run.fencing_token + 1,
                       error={"type": "Cancelled", "message": reason or "cancelled"}, wake_at=None,
                       lease_owner="", lease_expires_at=None, waiting_for="", updated_at=now,
                       finished_at=now)
        WorkflowRun.objects.filter(pk=run_id).update(**changes)
        run.cancel()
        for name, value in changes.items():
            if name != "status":
                setattr(run, name, value)
        _audit(run_id, AuditAction.CANCEL, actor, {"reason": reason, **(audit or {})})
        hooks.run_cancelled.send(sender=WorkflowRun, run_id=run_id, reason=reason, actor=actor)
        _cancel_children(run_id, reason=reason, actor=actor, graceful=False)
        if run.parent_id:
            from durable import children

            children.notify_parent(run, status=run.status, result=None, error=run.error)
    return run


def _cancel_children(run_id: str, *, reason: str, actor: str, graceful: bool) -> None:
    """A cancelled parent's unfinished children are cancelled too, the same way."""
    for child_id in WorkflowRun.objects.filter(parent_id=run_id).exclude(
            status__in=FINISHED_STATUSES).values_list("id", flat=True):
        run_cancel(child_id, reason=f"its parent {run_id} was cancelled: {reason or 'cancelled'}",
                   actor=actor, graceful=graceful, audit={"parent": run_id})


def _cancel_gracefully(run: WorkflowRun, *, reason: str, actor: str, now, audit, cleanup) -> WorkflowRun:
    if run.cancel_request is None:  # asking twice changes nothing
        run.cancel_request = {"reason": reason or "cancelled", "actor": actor,
                              "deadline": (now + cleanup).isoformat(), "asked_at": now.isoformat()}
        # signal_seq: a worker about to park this run looks again and sees the request.
        sql.wake_runs([run.id], now=now, by=now, cancel_request=run.cancel_request)
        _audit(run.id, AuditAction.CANCEL, actor, {"reason": reason, "graceful": True,
                                         "cleanup_until": run.cancel_request["deadline"], **(audit or {})})
        _cancel_children(run.id, reason=reason, actor=actor, graceful=True)
        dispatch(run.id)
    return run


def run_retry(run_id: str, *, actor: str, audit: dict | None = None) -> WorkflowRun:
    """Send a failed or blocked run back to pending.

    For a run that failed on a step, that step gets a fresh retry budget and runs again;
    a blocked run replays against the (fixed) code.
    """
    with transaction.atomic():
        run = _get_locked(run_id)
        if not run.allows("retry"):
            raise InvalidTransition(f"run {run_id!r} is {run.status}; only {_from('retry')} runs "
                                    "can be retried")
        now = clock.now()
        last = JournalEntry.objects.filter(run_id=run_id).order_by("-position").first()
        if last is not None and last.kind == EntryKind.STEP and last.status == EntryStatus.FAILED:
            last.status, last.attempt, last.wake_at, last.updated_at = EntryStatus.RETRYING, 0, None, now
            last.save(update_fields=["status", "attempt", "wake_at", "updated_at"])
        previous_error = run.error
        changes = dict(status=run.status_after("retry"), error=None, finished_at=None,
                       updated_at=now, wake_at=_grace())
        WorkflowRun.objects.filter(pk=run_id).update(**changes)
        run.retry()
        for name, value in changes.items():
            if name != "status":
                setattr(run, name, value)
        _audit(run_id, AuditAction.RETRY, actor, {"previous_error": previous_error, **(audit or {})})
    dispatch(run_id)
    return run


def run_wake(run_id: str, *, actor: str, audit: dict | None = None) -> WorkflowRun:
    """Fire the run's timer now: a sleep ends, a step's back-off is skipped.

    A wait for a signal is only looked at again, never timed out early: that would
    decide on the customer's behalf.
    """
    with transaction.atomic():
        run = _get_locked(run_id)
        if not run.allows("wake"):
            raise InvalidTransition(f"run {run_id!r} is {run.status}; only {_from('wake')} runs "
                                    "can be woken")
        now = clock.now()
        JournalEntry.objects.filter(
            run_id=run_id, wake_at__gt=now, kind__in=[EntryKind.SLEEP, EntryKind.STEP],
            status__in=[EntryStatus.WAITING, EntryStatus.RETRYING]).update(wake_at=now, updated_at=now)
        run.wake_at, run.updated_at = _grace(), now
        WorkflowRun.objects.filter(pk=run_id).update(wake_at=run.wake_at, updated_at=now)
        _audit(run_id, AuditAction.WAKE, actor, audit)
    dispatch(run_id)
    return run


# --- signal_send's helpers ---


def _check_reservation(dedupe_key: str | None, reserved_by: str | None) -> None:
    reservation = registry.dedupe_reservation(dedupe_key) if dedupe_key else None
    if reservation is not None and reservation[1] != reserved_by:
        prefix, owner = reservation
        raise SignalConflict(f"dedupe key {dedupe_key!r} is under the prefix {prefix!r}, reserved "
                             f"by {owner!r}: only {owner} sends signals with such keys")
    if reservation is None and reserved_by is not None:
        raise ValueError(f"reserved_by={reserved_by!r}, but dedupe key {dedupe_key!r} is under no "
                         "prefix reserved by it (reserve_dedupe_prefix)")


def _same_signal(existing: Signal, name: str, encoded) -> Signal:
    """The existing signal if this send is its redelivery; SignalConflict otherwise."""
    if existing.name != name:
        raise SignalConflict(
            f"dedupe key {existing.dedupe_key!r} was already used for run {existing.run_id!r} by "
            f"signal #{existing.pk} {existing.name!r}; refusing a {name!r} signal with the same key")
    if _canonical(existing.payload) != _canonical(encoded):
        raise SignalConflict(
            f"dedupe key {existing.dedupe_key!r} was already used for run {existing.run_id!r} by "
            f"signal #{existing.pk} {existing.name!r} with another payload; refusing to take a "
            "different payload as a redelivery")
    return existing


def _canonical(value) -> str:
    """JSON text that tells true from 1 and ignores key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
