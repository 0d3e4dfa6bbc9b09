"""Writes on runs: start, signal, cancel, retry, wake. Each works inside the caller's
transaction: the row, its audit event and its dispatch commit together or not at all.

Here are the rules (which transition a run allows, what counts as the same signal, who
follows a cancel); the statements are the live store's (``durable.store.live``).
"""
import json
import logging
import uuid
from contextlib import nullcontext
from datetime import timedelta

from django.db import IntegrityError, connection, transaction

from durable import clock, codec, conf, hooks, registry
from durable.dispatch import dispatch
from durable.durations import as_timedelta
from durable.errors import InvalidTransition, RunArchived, RunConflict, RunFinished, RunNotFound, SignalConflict
from durable.models import FINISHED_STATUSES, AuditAction, AuditEvent, Signal, WorkflowRun
from durable.store import live

log = logging.getLogger(__name__)


def _archived(run_id: str) -> RunArchived:
    return RunArchived(f"run {run_id!r} finished and was archived; it cannot start again "
                       "(read it in the archive: durable export, the admin, the API)")


def _grace():
    return clock.now() + timedelta(seconds=conf.dispatch_grace_seconds())


def _from(transition: str) -> str:
    """"failed or blocked": the statuses ``transition`` starts from, for error messages."""
    return " or ".join(WorkflowRun.sources_of(transition))


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
    inserted = live.create_run(run, actor=actor, detail={"workflow": definition.name,
                                                          "version": definition.version, **(audit or {})})
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
                    live.lock_run(run_id)
                # Waking the run bumps signal_seq (which also locks its row): a worker about
                # to park the run sees the bump and looks again (LiveStore.finish), so no signal
                # is slept through.
                woken = live.record_signal(signal, event, now, _grace())
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
    return live.replace_untaken_signal(run_id, dedupe_key, codec.encode(payload), actor=actor,
                                       detail=audit or {})


def run_lock(run_id: str) -> None:
    """Inside the caller's transaction: hold the run's row until it ends.

    For an app whose rows change with a run's (an approval case): it locks the run first,
    then its own rows, the order run_cancel and the run's own steps take, so the two wait
    for each other instead of deadlocking. RunNotFound if there is no such run."""
    if not connection.in_atomic_block:
        raise RuntimeError("run_lock holds the row until the transaction ends: call it inside one")
    live.hold_run(run_id)


def run_cancel(run_id: str, *, reason: str = "", actor: str, graceful: bool = False,
               cleanup=None, audit: dict | None = None) -> WorkflowRun:
    """Cancel a run. Bumping the fencing token stops a worker that is running it right now.

    ``graceful=True`` (for a run whose body can still run) wakes the run instead and raises
    ``workflow.Cancelled`` from the call it is paused in, so the body can clean up (tell the
    customer, release a reservation); the run ends ``cancelled`` when the body is done, or
    when ``cleanup`` (default DURABLE_CANCEL_CLEANUP_SECONDS, one hour) has passed.
    """
    with transaction.atomic():
        run = live.lock_run(run_id)
        if not run.allows("cancel"):
            raise RunFinished(f"run {run_id!r} is already {run.status}")
        if graceful and run.allows("claim"):
            return _cancel_gracefully(run, reason=reason, actor=actor, audit=audit,
                                      cleanup=as_timedelta(cleanup) if cleanup is not None
                                      else timedelta(seconds=conf.cancel_cleanup_seconds()))
        live.cancel_run(run, reason=reason, actor=actor, detail=audit or {})
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


def _cancel_gracefully(run: WorkflowRun, *, reason: str, actor: str, audit, cleanup) -> WorkflowRun:
    if run.cancel_request is None:  # asking twice changes nothing
        now = clock.now()
        request = {"reason": reason or "cancelled", "actor": actor,
                   "deadline": (now + cleanup).isoformat(), "asked_at": now.isoformat()}
        live.request_cancel(run, request, actor=actor, detail={
            "reason": reason, "graceful": True, "cleanup_until": request["deadline"], **(audit or {})})
        _cancel_children(run.id, reason=reason, actor=actor, graceful=True)
        dispatch(run.id)
    return run


def run_retry(run_id: str, *, actor: str, audit: dict | None = None) -> WorkflowRun:
    """Send a failed or blocked run back to pending.

    For a run that failed on a step, that step gets a fresh retry budget and runs again;
    a blocked run replays against the (fixed) code.
    """
    with transaction.atomic():
        run = live.lock_run(run_id)
        if not run.allows("retry"):
            raise InvalidTransition(f"run {run_id!r} is {run.status}; only {_from('retry')} runs "
                                    "can be retried")
        live.retry_run(run, actor=actor, detail=audit or {})
    dispatch(run_id)
    return run


def run_wake(run_id: str, *, actor: str, audit: dict | None = None) -> WorkflowRun:
    """Fire the run's timer now: a sleep ends, a step's back-off is skipped.

    A wait for a signal is only looked at again, never timed out early: that would
    decide on the customer's behalf.
    """
    with transaction.atomic():
        run = live.lock_run(run_id)
        if not run.allows("wake"):
            raise InvalidTransition(f"run {run_id!r} is {run.status}; only {_from('wake')} runs "
                                    "can be woken")
        live.fire_timers(run, actor=actor, detail=audit)
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
