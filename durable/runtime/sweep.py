"""The sweep: dispatch every run whose ``wake_at`` has passed.

``wake_at`` covers deadlines, sleeps, retry back-offs, expired leases, and dispatches
that may have been lost, so one indexed range scan finds all of them. Each picked run's
``wake_at`` moves one grace period ahead, so the next tick does not dispatch it again
while its message is in flight. ``SKIP LOCKED`` lets two beats sweep at once harmlessly.
On PostgreSQL the pick and the move are one statement (``durable.runtime.store.live.pick_due``).

Timers due before the next tick are sent now with a countdown of less than one tick, so
a timer fires on time instead of up to a tick late; no message ever waits longer than
that on the broker.

A running run is picked only once its lease has expired (its worker died or froze): its
advance goes to the default queue's takeover lane (``conf.takeover_queue()``), which the
default workers consume beside the default queue, so the takeover does not wait behind a
backlog of new work. So does a run whose turn in a limit's line has come: a token that
waits behind the backlog for its run is a token the limit's rate loses.
"""

import logging
import time
from contextlib import nullcontext
from datetime import timedelta

from django.conf import settings
from django.core.cache import InvalidCacheBackendError, caches
from django.db import connection, transaction

from durable import clock, conf
from durable.models import RunStatus
from durable.runtime.dispatch import dispatch
from durable.runtime.store.live import on_live_connection, pick_due

log = logging.getLogger(__name__)


def sweep_due(*, limit: int | None = None, lookahead: float | None = None) -> list[str]:
    started = time.monotonic()
    # A connection the database dropped while idle is reopened, not reported.
    run_ids = on_live_connection(lambda: _sweep_due(limit=limit, lookahead=lookahead))
    # For /metrics and `durable health`: the sweep runs in its own worker, not in the web
    # process, so its duration is stored, not counted.
    gap = record_sweep(time.monotonic() - started, dispatched=len(run_ids))
    if gap is not None and gap > late_after_seconds():
        log.warning(
            "the sweep ran %.1f s after the previous one (more than twice its interval): "
            "its queue (%s) or its worker is behind, and timers and takeovers wait with it",
            gap,
            conf.sweep_queue(),
        )
    return run_ids


def _sweep_due(*, limit: int | None, lookahead: float | None) -> list[str]:
    limit = limit or conf.sweep_batch()
    lookahead = conf.sweep_lookahead_seconds() if lookahead is None else lookahead
    now = clock.now()
    horizon = now + timedelta(seconds=lookahead)
    until = horizon + timedelta(seconds=conf.dispatch_grace_seconds())
    # One statement on PostgreSQL; SQLite's SELECT and UPDATE need a transaction.
    with transaction.atomic() if connection.vendor != "postgresql" else nullcontext():
        picked = pick_due(
            horizon, until, limit, grace=timedelta(seconds=conf.dispatch_grace_seconds())
        )
        for run_id, wake_at, status, waiting_for, advances, priority in picked:
            # A running run is due only once its lease expired: its worker died or froze.
            dispatch(
                run_id,
                delay=max(0.0, (wake_at - now).total_seconds()),
                lane=status == RunStatus.RUNNING or waiting_for.startswith("limit:"),
                advances=advances,
                priority=priority,
            )
    return [run_id for run_id, *_ in picked]


# --- the sweep's own record, for /metrics and `durable health` ---
# (not a row: it runs every second)

SWEEP_CACHE_KEY = "durable:sweep:last"


def sweep_cache():
    try:
        return caches["durable"]
    except InvalidCacheBackendError:
        return caches["default"]


def record_sweep(duration_seconds: float, *, dispatched: int) -> float | None:
    """Remember the last sweep for /metrics, and return how long after the previous one it
    ran (None for the first one the cache knows). A gap over twice the interval counts as a
    late sweep. Never lets a cache outage fail the sweep."""
    now = time.time()
    try:
        cache = sweep_cache()
        previous = cache.get(SWEEP_CACHE_KEY) or {}
        gap = now - previous["at"] if "at" in previous else None
        late = previous.get("late", 0) + (
            1 if gap is not None and gap > late_after_seconds() else 0
        )
        cache.set(
            SWEEP_CACHE_KEY,
            {
                "duration": duration_seconds,
                "dispatched": dispatched,
                "at": now,
                "gap": gap,
                "late": late,
            },
            timeout=None,
        )
        return gap
    except Exception:
        log.debug("could not record the sweep's duration", exc_info=True)
        return None


def late_after_seconds() -> float:
    """A sweep that comes more than two intervals after the one before it is late."""
    return 2 * float(getattr(settings, "DURABLE_SWEEP_INTERVAL_SECONDS", 1))


def last_sweep() -> dict | None:
    try:
        return sweep_cache().get(SWEEP_CACHE_KEY)
    except Exception:
        log.warning("could not read the last sweep's duration", exc_info=True)
        return None
