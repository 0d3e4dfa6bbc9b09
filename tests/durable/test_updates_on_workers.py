"""Updates on real Celery workers: the caller waits for the result the workflow returns; a
worker SIGKILLed, or frozen (SIGSTOP), while it applies the update leaves it applied once, by
the next worker."""

import os
import signal
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection

from durable import clock, services
from durable.errors import UpdateTimeout
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun
from processes.billing.models import InvoiceStatus
from processes.billing.services import invoice_issue, invoice_void
from tests.durable.test_waits_on_workers import waiting
from tests.effects.models import Effect
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_caller_gets_the_result_the_workflow_returns(celery):
    celery.start_worker()
    run = services.run_start("updated_on_workers", id="upd:sync", actor="test")
    waiting(run.id)

    result = services.run_update(
        run.id, "change_due_date", {"due": "2027-03-01"}, actor="ops", timeout=30
    )

    assert result == {"due": "2027-03-01"}
    assert JournalEntry.objects.get(run_id=run.id, kind=EntryKind.UPDATE).status == "completed"


def test_an_update_whose_worker_is_killed_while_applying_it_is_applied_once(celery):
    celery.env["SLOW_UPDATE_SECONDS"] = "4"
    celery.start_worker("w1", concurrency=1)
    celery.start_beat()
    run = services.run_start("updated_on_workers", id="upd:killed", actor="test")
    waiting(run.id)
    answers = []

    def caller():
        try:
            answers.append(
                services.run_update(
                    run.id,
                    "change_due_date",
                    {"due": "2027-04-01"},
                    actor="ops",
                    timeout=40,
                    dedupe_key="ticket-7",
                )
            )
        except UpdateTimeout as stored:  # the documented outcome when no worker finishes in time
            answers.append(stored)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=caller)
    thread.start()
    wait_until(
        lambda: Effect.objects.filter(name="due_date_started").exists(),
        timeout=60,
        message="the update's step to start",
    )
    celery.kill("w1")
    celery.env["SLOW_UPDATE_SECONDS"] = "0"
    celery.start_worker("w2", concurrency=1)
    thread.join(timeout=60)

    assert answers == [{"due": "2027-04-01"}]
    updates = JournalEntry.objects.filter(run_id=run.id, kind=EntryKind.UPDATE)
    assert [(entry.name, entry.status) for entry in updates] == [("change_due_date", "completed")]
    steps = JournalEntry.objects.filter(run_id=run.id, kind=EntryKind.STEP, name="slow_due_date")
    assert steps.count() == 1 and steps.get().status == "completed"
    keys = set(
        Effect.objects.filter(name="due_date_started").values_list("idempotency_key", flat=True)
    )
    assert len(keys) == 1  # the killed attempt and the next one: the same step, the same key


def test_an_update_whose_worker_is_frozen_while_applying_it_is_applied_once_by_another(celery):
    celery.env["SLOW_UPDATE_SECONDS"] = "6"
    celery.start_worker("w1", concurrency=1)
    celery.start_beat()
    run = services.run_start("updated_on_workers", id="upd:frozen", actor="test")
    waiting(run.id)
    answers = []

    def caller():
        try:
            answers.append(
                services.run_update(
                    run.id,
                    "change_due_date",
                    {"due": "2027-05-01"},
                    actor="ops",
                    timeout=60,
                    dedupe_key="ticket-8",
                )
            )
        except UpdateTimeout as stored:
            answers.append(stored)
        finally:
            connection.close()

    thread = threading.Thread(target=caller)
    thread.start()
    wait_until(
        lambda: Effect.objects.filter(name="due_date_started").exists(),
        timeout=60,
        message="the update's step to start",
    )
    frozen = celery.procs["w1"]
    os.killpg(frozen.pid, signal.SIGSTOP)  # alive, holding its lease, doing nothing
    try:
        celery.env["SLOW_UPDATE_SECONDS"] = "0"
        celery.start_worker("w2", concurrency=1)
        thread.join(timeout=90)
    finally:
        os.killpg(frozen.pid, signal.SIGCONT)  # it wakes up fenced: its late writes are refused

    assert answers == [{"due": "2027-05-01"}]
    wait_until(
        lambda: JournalEntry.objects.filter(
            run_id=run.id, kind=EntryKind.UPDATE, status="completed"
        ).exists(),
        timeout=30,
        message="the update entry to be completed",
    )
    updates = JournalEntry.objects.filter(run_id=run.id, kind=EntryKind.UPDATE)
    assert [(entry.name, entry.status) for entry in updates] == [("change_due_date", "completed")]
    steps = JournalEntry.objects.filter(run_id=run.id, kind=EntryKind.STEP, name="slow_due_date")
    assert steps.count() == 1 and steps.get().status == "completed"
    started = Effect.objects.filter(name="due_date_started")
    assert (
        started.count() == 2 and len(set(started.values_list("idempotency_key", flat=True))) == 1
    )  # w1, then w2


def test_an_operators_void_is_answered_by_the_invoices_run_on_a_worker(celery):
    celery.start_worker()
    invoice = invoice_issue(
        number="NF-W-1",
        customer_name="Padaria Boa Massa",
        amount=Decimal("350.00"),
        due_at=clock.now() + timedelta(days=5),
        wa_id="5511955554444",
        actor="test",
    )
    waiting(invoice.run_id)

    assert invoice_void(invoice, actor="ops:ana", reason="issued twice", timeout=30) is True

    wait_until(
        lambda: WorkflowRun.objects.get(pk=invoice.run_id).status == RunStatus.COMPLETED,
        timeout=30,
        message="the voided invoice's run to end",
    )
    invoice.refresh_from_db()
    assert (WorkflowRun.objects.get(pk=invoice.run_id).result, invoice.status) == (
        "voided",
        InvoiceStatus.VOIDED,
    )
