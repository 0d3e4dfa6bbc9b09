"""``advance(run_id)``: claim a run, replay its journal, run what is new, then park or finish it.

One advance does all the work that is possible now: it loops when a wait is already
due or a signal raced in, so a driver or a task never needs to call it twice in a row.
"""

import logging
from datetime import datetime, timedelta

from django.db import connection, transaction

from durable import clock, codec, conf, hooks
from durable.errors import (
    Cancelled,
    Fenced,
    Handoff,
    PayloadError,
    RunConflict,
    StoreUnavailable,
    WorkflowNotFound,
)
from durable.models import WorkflowRun
from durable.runtime import heartbeat, registry, tracing
from durable.runtime.context import (
    Continued,
    Diverged,
    Raised,
    ReplayContext,
    Returned,
    Suspended,
    error_of,
    replay,
)
from durable.runtime.dispatch import dispatch
from durable.runtime.store import live
from durable.runtime.store.live import Settlement

log = logging.getLogger(__name__)

MAX_REPLAYS_PER_ADVANCE = 100
# A limit's turn this close is waited for in the advance (seconds; see _turn_in_a_moment).
WAIT_IN_PLACE = 0.25


class Outcome:
    SKIPPED = "skipped"  # not runnable, or another worker holds the lease
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    FENCED = "fenced"  # lost the lease mid-way; the new holder carries on
    INTERRUPTED = "interrupted"  # the database failed under us; the sweep retries later
    RELEASED = "released"
    CANCELLED = "cancelled"  # a graceful cancel ended, or the body cancelled itself
    HANDED_OFF = "handed off"  # the next step runs on another queue: sent there
    CONTINUED = "continued"  # ended with continue_as_new; its successor was started


def advance(
    run_id: str, *, owner: str | None = None, queue: str | None = None, advances: int | None = None
) -> str:
    """``queue``: the Celery queue this advance runs on; a step that asks for another hands
    the run there. None (in-process drivers) runs every step here. ``advances``: see
    ``store.live.claim`` (the sweep's messages carry it)."""
    with tracing.span("durable.advance", {"durable.run_id": run_id}):
        outcome = _advance(run_id, owner, queue, advances)
        tracing.note({"durable.outcome": outcome})
        return outcome


def _advance(run_id: str, owner: str | None, queue: str | None, advances: int | None) -> str:
    claimed = live.claim(run_id, owner=owner, advances=advances)
    if claimed is None:
        return Outcome.SKIPPED
    run, lease = claimed
    tracing.note({"durable.workflow": run.workflow_name})
    try:
        with heartbeat.heartbeat.hold(lease):
            return _advance_claimed(run, lease, queue)
    except Fenced:
        log.info("run %s: fenced (lease taken over or run cancelled)", run_id)
        return Outcome.FENCED
    except StoreUnavailable as exc:
        _hand_back(run, lease, exc)
        return Outcome.INTERRUPTED


def _advance_claimed(run, lease, queue: str | None) -> str:
    try:
        definition = registry.get(run.workflow_name, run.workflow_version)
    except WorkflowNotFound as exc:
        lease.settle(run, Settlement.block({"type": "WorkflowNotFound", "message": str(exc)}))
        return Outcome.BLOCKED
    if definition.lease_seconds and definition.lease_seconds != lease.seconds:
        lease.extend(seconds=definition.lease_seconds)
    # Only an advance writes journal entries, and a first claim (the claim counts advances)
    # follows none: a new run's journal is empty without asking, one statement per run saved.
    # A fork is the exception: it starts with the entries it copied.
    journal = lease.load() if run.advances > 1 or run.fork_position else {}
    try:
        args, kwargs = definition.decode_input(run.input)
    except Exception as exc:  # the code's signature no longer reads this run's input
        lease.settle(
            run,
            Settlement.block(
                {
                    "type": "InputMismatch",
                    "message": f"the run's input no longer fits {definition.source}: "
                    f"{type(exc).__name__}: {exc}",
                }
            ),
        )
        return Outcome.BLOCKED
    ctx = ReplayContext(
        run,
        lease,
        journal,
        crash_loop=_crash_loop(run, lease, len(journal)),
        queue=queue,
        default_queue=definition.queue or conf.default_queue(),
    )
    for _ in range(MAX_REPLAYS_PER_ADVANCE):
        cleanup_until = _cleanup_deadline(ctx.cancel_request)
        if cleanup_until is not None and clock.now() >= cleanup_until:
            return _end_cancelled(
                run, lease, ctx.cancel_request, note="its cleanup ran out of time"
            )
        try:
            outcome = replay(ctx, definition.fn, args, kwargs)
        except Handoff as handoff:
            return _hand_on(run, lease, handoff.queue)
        if ctx.cancel_delivered or _cancelled(outcome):
            if isinstance(outcome, Suspended):  # cleanup waits: but never past its deadline
                outcome.suspend.wake_at = min(
                    filter(None, [outcome.suspend.wake_at, cleanup_until]), default=None
                )
            else:
                return _end_cancelled(run, lease, ctx.cancel_request, outcome=outcome)
        if isinstance(outcome, Suspended):
            suspend = outcome.suspend
            if suspend.wake_at is not None and suspend.wake_at <= clock.now():
                continue  # already due (a zero back-off): go again without a round trip
            if _turn_in_a_moment(suspend):  # waiting here costs less than parking and coming back
                clock.sleep((suspend.wake_at - clock.now()).total_seconds())
                continue
            soon = _turn_before_the_next_sweep(suspend)
            park_until = (
                suspend.wake_at + timedelta(seconds=conf.dispatch_grace_seconds())
                if soon
                else suspend.wake_at
            )
            woken = lease.settle(run, Settlement.park(park_until, suspend.waiting_for))
            if woken is None:
                if (
                    soon
                ):  # the sweep would send it up to a tick late: a token idle that long is lost
                    dispatch(
                        run.id,
                        delay=max(0.0, (suspend.wake_at - clock.now()).total_seconds()),
                        queue=queue,
                        lane=True,
                    )
                return Outcome.WAITING
            # a signal arrived since we looked: replay with it instead of parking
            ctx.reload_signals()
            ctx.cancel_request = woken.cancel_request or ctx.cancel_request
            continue
        if isinstance(outcome, Diverged):
            divergence = outcome.divergence
            log.warning("run %s blocked: %s", run.id, divergence.message)
            lease.settle(
                run,
                Settlement.block({"type": divergence.error_type, "message": divergence.message}),
            )
            return Outcome.BLOCKED
        if isinstance(outcome, Returned):
            try:
                result = codec.encode(outcome.value)
            except PayloadError as exc:
                outcome = Raised(exc)
            else:
                lease.settle(run, Settlement.complete(result))
                return Outcome.COMPLETED
        if isinstance(outcome, Continued):
            try:
                encoded = definition.encode_input(outcome.args, outcome.kwargs)
            except PayloadError as exc:
                outcome = Raised(exc)
            else:
                settlement = Settlement.continue_as_new(
                    run, registry.get(run.workflow_name), encoded
                )
                try:
                    lease.settle(run, settlement)
                except RunConflict as exc:  # the successor's id is taken: an operator decides
                    lease.settle(
                        run, Settlement.block({"type": "RunConflict", "message": str(exc)})
                    )
                    return Outcome.BLOCKED
                log.info("run %s continued as %s", run.id, settlement.successor.id)
                return Outcome.CONTINUED
        log.info("run %s failed: %s: %s", run.id, type(outcome.error).__name__, outcome.error)
        lease.settle(run, Settlement.fail(error_of(outcome.error)))
        return Outcome.FAILED
    lease.settle(run, Settlement.release(clock.now() + timedelta(seconds=1)))
    return Outcome.RELEASED


def _turn_in_a_moment(suspend) -> bool:
    """A limit's turn that comes within ``WAIT_IN_PLACE`` seconds (a token whose step ended
    a few milliseconds after its waiter was told the turn): the advance waits for it."""
    return (
        suspend.waiting_for.startswith("limit:")
        and suspend.wake_at is not None
        and (suspend.wake_at - clock.now()).total_seconds() <= WAIT_IN_PLACE
    )


def _turn_before_the_next_sweep(suspend) -> bool:
    """A run waiting in a limit's line whose turn comes before the sweep's next look: the
    advance sends it itself, with a countdown, and leaves its ``wake_at`` a grace period
    later for the sweep to catch a lost message."""
    return (
        suspend.waiting_for.startswith("limit:")
        and suspend.wake_at is not None
        and (suspend.wake_at - clock.now()).total_seconds() < conf.sweep_lookahead_seconds()
    )


def _hand_on(run, lease, queue: str) -> str:
    """The next step runs on ``queue``: give the run back and send it there. A lost message
    is swept after the grace period to the default queue, whose worker hands it on again."""
    lease.settle(
        run,
        Settlement.release(
            clock.now() + timedelta(seconds=conf.dispatch_grace_seconds()),
            waiting_for=f"queue:{queue}",
        ),
    )
    dispatch(run.id, queue=queue)
    return Outcome.HANDED_OFF


def _cancelled(outcome) -> bool:
    return isinstance(outcome, Raised) and isinstance(outcome.error, Cancelled)


def _cleanup_deadline(request: dict | None):
    if not request or not request.get("deadline"):
        return None
    return datetime.fromisoformat(request["deadline"])


def _end_cancelled(run, lease, request: dict | None, *, outcome=None, note: str = "") -> str:
    """End the run ``cancelled``: a graceful cancel whose cleanup returned, re-raised or ran
    out of time, or a body that raised ``Cancelled`` itself. Hooks (open approval cases)
    run in the same transaction as the status change."""
    if request:
        reason, actor = request.get("reason", ""), request.get("actor", "")
    elif _cancelled(outcome):
        reason, actor = outcome.error.reason, outcome.error.actor or "workflow"
    else:  # a cancel delivered earlier whose request is gone: nothing more to say
        reason, actor = "cancelled", "workflow"
    error = {
        "type": "Cancelled",
        "message": reason or "cancelled",
        "actor": actor,
        "graceful": True,
    }
    if note:
        error["note"] = note
    result = None
    if isinstance(outcome, Returned):
        try:
            result = codec.encode(outcome.value)
        except PayloadError:
            result = None
    elif isinstance(outcome, Raised) and not isinstance(outcome.error, Cancelled):
        error["cleanup_error"] = error_of(outcome.error)
    elif isinstance(outcome, Diverged):
        error["cleanup_error"] = {
            "type": outcome.divergence.error_type,
            "message": outcome.divergence.message,
        }
    with transaction.atomic():
        lease.settle(run, Settlement.cancel(result, error))
        hooks.run_cancelled.send(sender=WorkflowRun, run_id=run.id, reason=reason, actor=actor)
    log.info("run %s cancelled (%s)", run.id, note or "gracefully")
    return Outcome.CANCELLED


def _crash_loop(run, lease, position: int) -> str | None:
    """Why the run must not go on past ``position`` (its worker died there too often), or None.

    Costs nothing on the happy path: ``recoveries`` comes back with the claim, and is only
    non-zero after a takeover of an expired lease.
    """
    if not run.recoveries:
        return None
    if run.recovery_position != position:  # progress since the last takeover
        lease.note_recovery(position)
        return None
    limit = conf.crash_loop_limit()
    if run.recoveries < limit:
        return None
    return (
        f"its worker died or froze {run.recoveries} times there with no progress "
        f"(DURABLE_CRASH_LOOP_LIMIT = {limit}); fix the step or its resources, then retry the run"
    )


def _hand_back(run, lease, exc: StoreUnavailable) -> None:
    """The database failed under this advance. Give the run back at once on a fresh
    connection, so the sweep resumes it next tick; if that fails too, the lease expires."""
    log.warning(
        "run %s: database unavailable, handing the run back: %s", run.id, live.first_line(exc)
    )
    if connection.in_atomic_block:
        return
    connection.close()
    try:
        lease.settle(run, Settlement.release(clock.now()))
    except (Fenced, StoreUnavailable):
        log.info("run %s: could not hand the run back; it resumes when its lease expires", run.id)
