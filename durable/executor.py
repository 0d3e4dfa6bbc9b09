"""``advance(run_id)``: claim a run, replay its journal, run what is new, then park or finish it.

One advance does all the work that is possible now: it loops when a wait is already
due or a signal raced in, so a driver or a task never needs to call it twice in a row.
"""
import logging
from datetime import timedelta

from durable import clock, codec, context, leases, registry
from durable.context import ReplayContext, error_of
from durable.errors import Divergence, Fenced, StoreUnavailable, Suspend, WorkflowNotFound
from durable.models import JournalEntry

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
        log.warning("run %s: database write failed, will resume after the lease expires: %s", run_id, exc)
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
    with leases.store_errors():
        journal = {entry.position: entry for entry in JournalEntry.objects.filter(run_id=run.id)}
    try:
        args, kwargs = definition.decode_input(run.input)
    except Exception as exc:  # the code's signature no longer reads this run's input
        lease.finish(run, transition="block", error={
            "type": "InputMismatch", "message": f"the run's input no longer fits {definition.source}: "
                                                f"{type(exc).__name__}: {exc}"})
        return Outcome.BLOCKED
    ctx = ReplayContext(run, lease, journal)
    for _ in range(MAX_REPLAYS_PER_ADVANCE):
        ctx.position = 0
        token = context._current.set(ctx)
        try:
            value = definition.fn(*args, **kwargs)
            ctx.check_fully_replayed()
            result = codec.encode(value)
        except Suspend as suspend:
            if suspend.wake_at is not None and suspend.wake_at <= clock.now():
                continue  # already due (a zero back-off): go again without a round trip
            if lease.finish(run, transition="suspend", wake_at=suspend.wake_at,
                            waiting_for=suspend.waiting_for, check_signal_seq=True):
                return Outcome.WAITING
            run.claim()  # a signal arrived since we looked: replay with it instead of parking
            ctx.reload_signals()
            continue
        except Divergence as divergence:
            log.warning("run %s blocked: %s", run.id, divergence.message)
            lease.finish(run, transition="block",
                         error={"type": getattr(divergence, "error_type", "JournalMismatch"),
                                "message": divergence.message})
            return Outcome.BLOCKED
        except Exception as exc:
            log.info("run %s failed: %s: %s", run.id, type(exc).__name__, exc)
            lease.finish(run, transition="fail", error=error_of(exc))
            return Outcome.FAILED
        finally:
            context._current.reset(token)
        lease.finish(run, transition="complete", result=result, error=None)
        return Outcome.COMPLETED
    lease.finish(run, transition="release", wake_at=clock.now() + timedelta(seconds=1))
    return Outcome.RELEASED
