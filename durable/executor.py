"""``advance(run_id)``: claim a run, replay its journal, run what is new, then park or finish it.

One advance does all the work that is possible now: it loops when a wait is already
due or a signal raced in, so a driver or a task never needs to call it twice in a row.
"""
import logging
from datetime import timedelta

from django.db import connection

from durable import clock, codec, conf, leases, registry
from durable.context import Diverged, Raised, ReplayContext, Returned, Suspended, error_of, replay
from durable.errors import Fenced, PayloadError, StoreUnavailable, WorkflowNotFound

log = logging.getLogger(__name__)

MAX_REPLAYS_PER_ADVANCE = 100


class Outcome:
    SKIPPED = "skipped"      # not runnable, or another worker holds the lease
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    FENCED = "fenced"        # lost the lease mid-way; the new holder carries on
    INTERRUPTED = "interrupted"  # the database failed under us; the sweep retries later
    RELEASED = "released"


def advance(run_id: str, *, owner: str | None = None) -> str:
    claimed = leases.claim(run_id, owner=owner)
    if claimed is None:
        return Outcome.SKIPPED
    run, lease = claimed
    try:
        with leases.heartbeat.hold(lease):
            return _advance_claimed(run, lease)
    except Fenced:
        log.info("run %s: fenced (lease taken over or run cancelled)", run_id)
        return Outcome.FENCED
    except StoreUnavailable as exc:
        _hand_back(run, lease, exc)
        return Outcome.INTERRUPTED


def _advance_claimed(run, lease) -> str:
    try:
        definition = registry.get(run.workflow_name, run.workflow_version)
    except WorkflowNotFound as exc:
        lease.finish(run, transition="block", error={"type": "WorkflowNotFound", "message": str(exc)})
        return Outcome.BLOCKED
    if definition.lease_seconds and definition.lease_seconds != lease.seconds:
        lease.seconds = definition.lease_seconds
        lease.extend()
    journal = lease.load()
    try:
        args, kwargs = definition.decode_input(run.input)
    except Exception as exc:  # the code's signature no longer reads this run's input
        lease.finish(run, transition="block", error={
            "type": "InputMismatch", "message": f"the run's input no longer fits {definition.source}: "
                                                f"{type(exc).__name__}: {exc}"})
        return Outcome.BLOCKED
    ctx = ReplayContext(run, lease, journal, crash_loop=_crash_loop(run, lease, len(journal)))
    for _ in range(MAX_REPLAYS_PER_ADVANCE):
        outcome = replay(ctx, definition.fn, args, kwargs)
        if isinstance(outcome, Suspended):
            suspend = outcome.suspend
            if suspend.wake_at is not None and suspend.wake_at <= clock.now():
                continue  # already due (a zero back-off): go again without a round trip
            if lease.finish(run, transition="suspend", wake_at=suspend.wake_at,
                            waiting_for=suspend.waiting_for, check_signal_seq=True):
                return Outcome.WAITING
            ctx.reload_signals()  # a signal arrived since we looked: replay with it instead of parking
            continue
        if isinstance(outcome, Diverged):
            divergence = outcome.divergence
            log.warning("run %s blocked: %s", run.id, divergence.message)
            lease.finish(run, transition="block",
                         error={"type": divergence.error_type, "message": divergence.message})
            return Outcome.BLOCKED
        if isinstance(outcome, Returned):
            try:
                result = codec.encode(outcome.value)
            except PayloadError as exc:
                outcome = Raised(exc)
            else:
                lease.finish(run, transition="complete", result=result, error=None)
                return Outcome.COMPLETED
        log.info("run %s failed: %s: %s", run.id, type(outcome.error).__name__, outcome.error)
        lease.finish(run, transition="fail", error=error_of(outcome.error))
        return Outcome.FAILED
    lease.finish(run, transition="release", wake_at=clock.now() + timedelta(seconds=1))
    return Outcome.RELEASED


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
    return (f"its worker died or froze {run.recoveries} times there with no progress "
            f"(DURABLE_CRASH_LOOP_LIMIT = {limit}); fix the step or its resources, then retry the run")


def _hand_back(run, lease, exc: StoreUnavailable) -> None:
    """The database failed under this advance. Give the run back at once on a fresh
    connection, so the sweep resumes it next tick; if that fails too, the lease expires."""
    log.warning("run %s: database unavailable, handing the run back: %s", run.id,
                leases._first_line(exc))
    if connection.in_atomic_block:
        return
    connection.close()
    try:
        lease.finish(run, transition="release", wake_at=clock.now())
    except (Fenced, StoreUnavailable):
        log.info("run %s: could not hand the run back; it resumes when its lease expires", run.id)
