"""Writes of reconciliation: open a day's batch and start its run, idempotently."""

from datetime import date

from django.db import transaction

from durable import services
from processes.reconciliation.models import ReconciliationBatch


def reconciliation_start(*, batch_date: date, actor: str) -> ReconciliationBatch:
    """Open the batch and start ``reconcile:<date>``; a second call (a second beat, a
    retried task) finds both and starts nothing."""
    with transaction.atomic():
        batch, _ = ReconciliationBatch.objects.get_or_create(date=batch_date)
        services.run_start("reconcile", batch_date.isoformat(), id=batch.run_id, actor=actor)
    return batch
