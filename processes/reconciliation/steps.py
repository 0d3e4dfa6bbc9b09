"""The effects of reconciliation and the pure diff between them."""

from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time

from django.db.models import F

from durable import clock
from processes import conf
from processes.reconciliation import clients
from processes.reconciliation.clients import Line
from processes.reconciliation.models import BatchStatus, ReconciliationBatch


def open_batch(batch_date: str) -> str:
    """The day's batch, created if nothing opened it yet (atomic step)."""
    ReconciliationBatch.objects.get_or_create(date=date.fromisoformat(batch_date))
    return batch_date


def fetch_bank_statement(batch_date: str) -> list[Line]:
    return clients.bank().statement(date.fromisoformat(batch_date))


def fetch_ledger(batch_date: str) -> list[Line]:
    return clients.ledger().entries(date.fromisoformat(batch_date))


def missing_entries(statement: list[Line], ledger: list[Line]) -> list[Line]:
    """Bank lines the ledger lacks, in statement order. Pure: safe outside a step."""
    known = {line.id for line in ledger}
    return [line for line in statement if line.id not in known]


def post_correction(batch_date: str, line: Line, idempotency_key: str) -> str:
    """Post one missing entry (atomic step: the ledger row commits with its journal entry)."""
    day = date.fromisoformat(batch_date)
    posted = clients.ledger().post(day, line, idempotency_key=idempotency_key)
    ReconciliationBatch.objects.filter(date=day).update(
        corrections_posted=F("corrections_posted") + 1
    )
    return posted


def closing_window(batch_date: str) -> datetime:
    """When the batch closes: RECONCILIATION_CLOSING_TIME (UTC) on the day after the batch."""
    hour, minute = (
        int(part) for part in conf.setting("RECONCILIATION_CLOSING_TIME", "06:00").split(":")
    )
    day = date.fromisoformat(batch_date) + timedelta(days=1)
    return datetime.combine(day, dt_time(hour, minute), tzinfo=UTC)


def mark_reconciled(batch_date: str) -> str:
    """Close the batch (atomic step)."""
    ReconciliationBatch.objects.filter(date=batch_date).update(
        status=BatchStatus.RECONCILED, reconciled_at=clock.now()
    )
    return BatchStatus.RECONCILED
