"""Writes on runs: start, signal, cancel, retry, wake. Each works inside the caller's
transaction: the row, its audit event and its dispatch commit together or not at all.

Here are the rules (which transition a run allows, what counts as the same signal, who
follows a cancel); the statements are the live store's (``durable.runtime.store.live``).
"""

import logging
import time
import uuid
from datetime import timedelta

from django.db import connection, transaction

from durable import clock, codec, conf, hooks
from durable.durations import as_timedelta
from durable.errors import (
    InvalidTransition,
    RunArchived,
    RunConflict,
    RunFinished,
    RunNotFound,
    SignalConflict,
    UpdateFailed,
    UpdateTimeout,
)
from durable.models import FINISHED_STATUSES, EntryStatus, RunStatus, Signal, WorkflowRun
from durable.runtime import children, forks, queries, registry, tracing
from durable.runtime.context import UPDATE_SIGNAL_PREFIX
from durable.runtime.dispatch import dispatch
from durable.runtime.priorities import DEFAULT_PRIORITY, check_priority
from durable.runtime.store import live

log = logging.getLogger(__name__)

# How many times a send or a cancel follows a chain that continues as new under it.
CHAIN_HOPS = 5
# Updates' dedupe keys: reserved for the engine (durable.apps), so no signal can take one.
UPDATE_KEY_PREFIX = "durable:update:"
# Signal names only the engine sends: an update's request and a child's outcome (a parent
# takes the first signal of that name). Compared without regard to case.
ENGINE_SIGNAL_PREFIXES = (UPDATE_SIGNAL_PREFIX, children.SIGNAL_PREFIX)


def _from(transition: str) -> str:
    """ "failed or blocked": the statuses ``transition`` starts from, for error messages."""
    return " or ".join(WorkflowRun.sources_of(transition))


def run_start(
    workflow,
    *args,
    actor: str,
    id: str | None = None,
    audit: dict | None = None,
    parent: str | None = None,
    priority: int = DEFAULT_PRIORITY,
    **kwargs,
) -> WorkflowRun:
    """Create a run and dispatch it once the caller's transaction commits.

    Starting an id that exists returns the existing run (a retried request or a
    redelivered webhook must not start a second process); the same id with another
    workflow or other input is a RunConflict, never a silent mix-up. ``priority`` (0..9,
    higher first) orders the sweep's pick, the run's place in a limit's line and, where
    the broker supports it, its messages.
    """
    definition = registry.resolve(workflow)
    check_priority(priority)
    encoded = definition.encode_input(args, kwargs)
    run_id = id or f"{definition.name}:{uuid.uuid4()}"
    detail = {"workflow": definition.name, "version": definition.version, **(audit or {})}
    if priority != DEFAULT_PRIORITY:
        detail["priority"] = priority
    with tracing.span(
        "durable.run_start", {"durable.run_id": run_id, "durable.workflow": definition.name}
    ):
        return live.start_run(
            definition,
            encoded,
            run_id,
            parent=parent,
            actor=actor,
            detail=detail,
            priority=priority,
        )


def run_fork(
    run_id: str, *, at_position: int, actor: str, id: str | None = None, audit: dict | None = None
) -> WorkflowRun:
    """Run a run again from ``at_position`` on the code deployed now, as a new run.

    The fork has the source's input and a copy of its journal before the position, so what
    happened before is not done again and what follows runs anew (with new idempotency keys:
    a step's effect repeats, which is the point of re-running a step fixed after a bug). The
    source is not changed, even if it is still running. A position past the journal, inside
    a wait or after a child run was started is an ``InvalidFork`` and creates nothing; an id
    already taken returns that fork if it is this one, else ``RunConflict``.
    """
    forks.check_position(at_position)
    with transaction.atomic():
        source = live.lock_run(run_id)
        definition = registry.get(source.workflow_name)
        kept = forks.kept_entries(run_id, live.journal_of(run_id), at_position)
        fork_id = id or f"{definition.name}:{uuid.uuid4()}"
        fork = live.fork_run(source, definition, fork_id, kept, actor=actor, detail=audit or {})
        if fork is None:
            return _same_fork(fork_id, source, at_position)
    return fork


def _same_fork(fork_id: str, source: WorkflowRun, at_position: int) -> WorkflowRun:
    existing = WorkflowRun.objects.filter(pk=fork_id).first()
    if existing is None:
        raise RunArchived(f"run {fork_id!r} finished and was archived; a fork cannot take its id")
    if existing.forked_from_id != source.id or existing.fork_position != at_position:
        raise RunConflict(
            f"run {fork_id!r} already exists and is not the fork of {source.id!r} at "
            f"position {at_position}; refusing to take its id"
        )
    return existing


def run_query(run_id: str, name: str, *args):
    """What the run's query ``name`` answers now (``workflow.on_query``): its body replayed
    from the journal, with nothing run and nothing written, and the handler called at the
    run's position (the newest run of a chain that continued as new). RunNotFound,
    QueryNotFound, or QueryFailed with the reason."""
    run = live.current_run(run_id)
    return queries.answer(run, live.journal_of(run.id), name, args)


def run_update(
    run_id: str,
    name: str,
    payload=None,
    *,
    actor: str,
    timeout: float = 10.0,
    dedupe_key: str | None = None,
    audit: dict | None = None,
):
    """Ask the run to apply update ``name`` (``workflow.on_update``) and wait for its result.

    The validator runs here first, on the run replayed to where it is: ``UpdateRejected``
    (or ``UpdateNotFound``) with its reason, and nothing is stored. Else the update is
    stored (a signal, under ``dedupe_key`` when given: the same key is the same update) and
    the run woken; its handler runs in the workflow at its next durable call, or while it
    waits, journaled once. Returns the handler's result; ``UpdateFailed`` if it raised;
    ``UpdateTimeout`` after ``timeout`` seconds (0: do not wait), the update stored and
    still to be applied. Inside a transaction the update is stored with it, and the run
    cannot see it before it commits: ``UpdateTimeout`` at once, whatever ``timeout``.
    """
    encoded = codec.encode(payload)
    run = live.current_run(run_id)
    if run.is_finished:
        raise RunFinished(f"run {run.id!r} is {run.status} and takes no more updates")
    queries.validate_update(run, live.journal_of(run.id), name, codec.decode(encoded))
    update_id = dedupe_key or uuid.uuid4().hex
    key = f"{UPDATE_KEY_PREFIX}{update_id}"
    if len(key) > 255:
        raise ValueError("an update's dedupe key is at most 240 characters")
    signal, new = live.send_signal(
        run.id,
        UPDATE_SIGNAL_PREFIX + name,
        {"id": update_id, "payload": encoded},
        dedupe_key=key,
        actor=actor,
        detail={"update": name, "update_id": update_id, **(audit or {})},
    )
    if not new and signal.name != UPDATE_SIGNAL_PREFIX + name:
        raise SignalConflict(
            f"update key {update_id!r} was already used for update {signal.name!r}"
        )
    return update_wait(run, update_id, timeout=0 if connection.in_atomic_block else timeout)


def update_wait(run: WorkflowRun, update_id: str, *, timeout: float):
    """The result of update ``update_id`` of ``run`` (or its chain's successors) once applied."""
    deadline, pause = time.monotonic() + timeout, 0.01
    while True:
        entry = live.update_outcome(run, update_id)
        if entry is not None:
            if entry.status == EntryStatus.FAILED:
                error = entry.error or {}
                error_type, reason = error.get("type", "Error"), error.get("message", "")
                raise UpdateFailed(
                    f"update {entry.name!r} failed in the workflow: {error_type}: {reason}",
                    error_type,
                    reason,
                )
            return codec.decode((entry.result or {}).get("value"))
        if time.monotonic() >= deadline:
            raise UpdateTimeout(
                f"update {update_id!r} is stored; run {run.id!r} did not apply it within "
                f"{timeout} s and will still apply it",
                update_id,
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def signal_send(
    run_id: str,
    name: str,
    payload=None,
    *,
    dedupe_key: str | None = None,
    reserved_by: str | None = None,
    actor: str,
    audit: dict | None = None,
) -> Signal:
    """Record a signal for a run and wake the run once the caller's transaction commits.

    A signal with a dedupe key already seen for this run is the same signal: the
    provider's redelivery must not resume the workflow twice. The same key with another
    name or payload is a ``SignalConflict``, never a silent duplicate; so is a key under a
    prefix another app reserved (``reserve_dedupe_prefix``): its owner passes
    ``reserved_by``. A refused signal writes nothing.
    """
    if not name:
        raise ValueError("a signal needs a name")
    _refuse_engine_signal_name(name)
    encoded = codec.encode(payload)
    _check_reservation(dedupe_key, reserved_by)
    with tracing.span(
        "durable.signal_send", {"durable.run_id": run_id, "durable.signal_name": name}
    ):
        signal = _signal_record(run_id, name, encoded, dedupe_key, actor=actor, audit=audit)
        # The run that took it: the newest of a chain that continued as new.
        tracing.note({"durable.signal_id": signal.pk, "durable.run_id": signal.run_id})
    return signal


def _signal_record(
    run_id: str, name: str, encoded, dedupe_key: str | None, *, actor: str, audit: dict | None
) -> Signal:
    target, detail = run_id, audit or {}
    for _ in range(CHAIN_HOPS):
        try:
            signal, new = live.send_signal(
                target, name, encoded, dedupe_key=dedupe_key, actor=actor, detail=detail
            )
            break
        except (RunFinished, RunNotFound):  # a run that continued as new: its newest run takes it
            newest = live.current_run(run_id)
            if newest.id == target:
                raise
            taken = live.signal_in_chain(newest, dedupe_key)  # a redelivery an earlier run took
            if taken is not None:
                return _same_signal(taken, name, encoded)
            target, detail = newest.id, {"sent_to": run_id, **(audit or {})}
    else:
        raise RunFinished(
            f"run {run_id!r}'s chain kept continuing as new while a signal was sent to it"
        )
    return signal if new else _same_signal(signal, name, encoded)


def _refuse_engine_signal_name(name: str) -> None:
    folded = name.casefold()
    if folded.startswith(UPDATE_SIGNAL_PREFIX):
        raise SignalConflict(
            f"signal names starting with {UPDATE_SIGNAL_PREFIX!r} (in any case) are updates: "
            "send one with services.run_update, whose validator runs first"
        )
    for prefix in ENGINE_SIGNAL_PREFIXES:
        if folded.startswith(prefix):
            raise SignalConflict(
                f"signal names starting with {prefix!r} (in any case) are the engine's own"
            )


def signal_replace_untaken(
    run_id: str, dedupe_key: str, payload, *, actor: str, audit: dict | None = None
) -> bool:
    """Give the run's not-yet-taken signal with ``dedupe_key`` a new payload, in the caller's
    transaction: for an engine signal whose news changed before the run read it (a failed
    child, retried, that now completed). False when there is none left to change: the run
    took it and acted on it."""
    return live.replace_untaken_signal(
        run_id, dedupe_key, codec.encode(payload), actor=actor, detail=audit or {}
    )


def run_lock(run_id: str) -> None:
    """Inside the caller's transaction: hold the run's row until it ends.

    For an app whose rows change with a run's (an approval case): it locks the run first,
    then its own rows, the order run_cancel and the run's own steps take, so the two wait
    for each other instead of deadlocking. RunNotFound if there is no such run."""
    if not connection.in_atomic_block:
        raise RuntimeError("run_lock holds the row until the transaction ends: call it inside one")
    live.hold_run(run_id)


def run_cancel(
    run_id: str,
    *,
    reason: str = "",
    actor: str,
    graceful: bool = False,
    cleanup=None,
    audit: dict | None = None,
) -> WorkflowRun:
    """Cancel a run. Bumping the fencing token stops a worker that is running it right now.

    ``graceful=True`` (for a run whose body can still run) wakes the run instead and raises
    ``workflow.Cancelled`` from the call it is paused in, so the body can clean up (tell the
    customer, release a reservation); the run ends ``cancelled`` when the body is done, or
    when ``cleanup`` (default DURABLE_CANCEL_CLEANUP_SECONDS, one hour) has passed.
    """
    with transaction.atomic():
        run = _lock_newest(run_id)
        run_id = run.id
        if not run.allows("cancel"):
            raise RunFinished(f"run {run_id!r} is already {run.status}")
        if graceful and run.allows("claim"):
            return _cancel_gracefully(
                run,
                reason=reason,
                actor=actor,
                audit=audit,
                cleanup=as_timedelta(cleanup)
                if cleanup is not None
                else timedelta(seconds=conf.cancel_cleanup_seconds()),
            )
        live.cancel_run(run, reason=reason, actor=actor, detail=audit or {})
        hooks.run_cancelled.send(sender=WorkflowRun, run_id=run_id, reason=reason, actor=actor)
        _cancel_children(run_id, reason=reason, actor=actor, graceful=False)
        live.notify_parent(run, status=run.status, result=None, error=run.error)
    return run


def _lock_newest(run_id: str) -> WorkflowRun:
    """The newest run of ``run_id``'s chain, its row locked: one that continues as new while
    we look is followed under the lock, so a cancel never lands on a run that just ended."""
    for _ in range(CHAIN_HOPS):
        run = live.lock_run(live.current_run(run_id).id)
        if run.status != RunStatus.CONTINUED:
            return run
    return run


def _cancel_children(run_id: str, *, reason: str, actor: str, graceful: bool) -> None:
    """A cancelled parent's unfinished children are cancelled too, the same way."""
    for child_id in (
        WorkflowRun.objects.filter(parent_id=run_id)
        .exclude(status__in=FINISHED_STATUSES)
        .values_list("id", flat=True)
    ):
        run_cancel(
            child_id,
            reason=f"its parent {run_id} was cancelled: {reason or 'cancelled'}",
            actor=actor,
            graceful=graceful,
            audit={"parent": run_id},
        )


def _cancel_gracefully(run: WorkflowRun, *, reason: str, actor: str, audit, cleanup) -> WorkflowRun:
    if run.cancel_request is None:  # asking twice changes nothing
        now = clock.now()
        request = {
            "reason": reason or "cancelled",
            "actor": actor,
            "deadline": (now + cleanup).isoformat(),
            "asked_at": now.isoformat(),
        }
        live.request_cancel(
            run,
            request,
            actor=actor,
            detail={
                "reason": reason,
                "graceful": True,
                "cleanup_until": request["deadline"],
                **(audit or {}),
            },
        )
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
            raise InvalidTransition(
                f"run {run_id!r} is {run.status}; only {_from('retry')} runs can be retried"
            )
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
            raise InvalidTransition(
                f"run {run_id!r} is {run.status}; only {_from('wake')} runs can be woken"
            )
        live.fire_timers(run, actor=actor, detail=audit)
    dispatch(run_id)
    return run


# --- signal_send's helpers ---


def _check_reservation(dedupe_key: str | None, reserved_by: str | None) -> None:
    reservation = registry.dedupe_reservation(dedupe_key) if dedupe_key else None
    if reservation is not None and reservation[1] != reserved_by:
        prefix, owner = reservation
        raise SignalConflict(
            f"dedupe key {dedupe_key!r} is under the prefix {prefix!r}, reserved "
            f"by {owner!r}: only {owner} sends signals with such keys"
        )
    if reservation is None and reserved_by is not None:
        raise ValueError(
            f"reserved_by={reserved_by!r}, but dedupe key {dedupe_key!r} is under no "
            "prefix reserved by it (reserve_dedupe_prefix)"
        )


def _same_signal(existing: Signal, name: str, encoded) -> Signal:
    """The existing signal if this send is its redelivery; SignalConflict otherwise."""
    if existing.name != name:
        raise SignalConflict(
            f"dedupe key {existing.dedupe_key!r} was already used for run {existing.run_id!r} by "
            f"signal #{existing.pk} {existing.name!r}; refusing a {name!r} signal with the same key"
        )
    if codec.canonical(existing.payload) != codec.canonical(encoded):
        raise SignalConflict(
            f"dedupe key {existing.dedupe_key!r} was already used for run {existing.run_id!r} by "
            f"signal #{existing.pk} {existing.name!r} with another payload; refusing to take a "
            "different payload as a redelivery"
        )
    return existing
