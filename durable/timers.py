"""The sweep: dispatch every run whose ``wake_at`` has passed.

``wake_at`` covers deadlines, sleeps, retry back-offs, expired leases, and dispatches
that may have been lost, so one indexed range scan finds all of them. Each picked run's
``wake_at`` moves one grace period ahead, so the next tick does not dispatch it again
while its message is in flight. ``SKIP LOCKED`` lets two beats sweep at once harmlessly.
"""
import time
from datetime import timedelta

from django.db import connection, transaction

from durable import clock, conf, metrics
from durable.dispatch import dispatch
from durable.models import ACTIVE_STATUSES, WorkflowRun


def sweep_due(*, limit: int | None = None) -> list[str]:
    started = time.monotonic()
    run_ids = _sweep_due(limit=limit)
    # For /metrics: workers are other processes, so the duration is stored, not counted.
    metrics.record_sweep(time.monotonic() - started, dispatched=len(run_ids))
    return run_ids


def _sweep_due(*, limit: int | None) -> list[str]:
    limit = limit or conf.sweep_batch()
    now = clock.now()
    with transaction.atomic():
        due = WorkflowRun.objects.filter(wake_at__lte=now, status__in=ACTIVE_STATUSES).order_by("wake_at")
        if connection.features.has_select_for_update_skip_locked:
            due = due.select_for_update(skip_locked=True)
        run_ids = list(due.values_list("id", flat=True)[:limit])
        if run_ids:
            WorkflowRun.objects.filter(pk__in=run_ids).update(
                wake_at=now + timedelta(seconds=conf.dispatch_grace_seconds()))
            for run_id in run_ids:
                dispatch(run_id)
    return run_ids
