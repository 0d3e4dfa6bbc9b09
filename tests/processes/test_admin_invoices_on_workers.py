"""Billing operated from the admin in headless Chromium while the invoices' runs live on a real
Celery worker and beat (issue 36, done-when): a void and a due-date change, each with its
reason, applied by the runs, and no reminder after either when the old due time passes."""

import time
from datetime import timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from durable import clock
from durable.models import AuditEvent, RunStatus, WorkflowRun
from processes.billing.models import Invoice, InvoiceStatus
from processes.billing.services import invoice_issue
from processes.whatsapp.models import OutboundMessage
from tests.browser import admin_page, browser  # noqa: F401  (browser: the fixture)
from tests.workers import celery_processes, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL (test_admin_invoices_browser.py covers SQLite)",
    ),
]

PASSWORD = "correct-horse-battery"
DUE_IN = 20  # seconds: the reminders would start then


def operate(page, live_server, invoice, action: str, button: str, **fields) -> str:
    page.goto(live_server.url + reverse("admin:processes_invoice_changelist"))
    page.check(f"input[name=_selected_action][value='{invoice.pk}']")
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")
    page.wait_for_load_state()
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)
    page.get_by_role("button", name=button).click()
    page.wait_for_load_state()
    return page.locator("ul.messagelist").inner_text()


def test_a_void_and_a_new_due_date_from_the_admin_reach_the_runs_on_a_worker_and_no_reminder_goes(
    browser, live_server, settings, tmp_path
):
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    User.objects.create_superuser("ops", password=PASSWORD)
    due_at = clock.now() + timedelta(seconds=DUE_IN)
    with celery_processes(
        tmp_path,
        DURABLE_LEASE_SECONDS="5",
        DURABLE_DISPATCH_GRACE_SECONDS="1",
        DURABLE_SWEEP_INTERVAL_SECONDS="0.5",
    ) as celery:
        celery.start_worker()
        celery.start_beat()
        voided, moved = (
            invoice_issue(
                number=number,
                customer_name="Padaria Boa Massa",
                amount=Decimal("350.00"),
                due_at=due_at,
                wa_id=f"551195555444{n}",
                actor="test",
            )
            for n, number in enumerate(("NF-W-1", "NF-W-2"))
        )
        for invoice in (voided, moved):
            wait_until(
                lambda invoice=invoice: WorkflowRun.objects.get(
                    pk=invoice.run_id
                ).waiting_for.startswith("signal:"),
                timeout=30,
                message="the run waits for the due date",
            )
        # Written in the team's zone, as the admin shows and reads times.
        new_due = timezone.localtime(
            clock.now() + timedelta(days=2), ZoneInfo(settings.REVIEWER_TIME_ZONE)
        ).replace(second=0, microsecond=0)
        with admin_page(browser, live_server, "ops", PASSWORD) as page:
            said_void = operate(
                page, live_server, voided, "void_invoices", "Void invoices", reason="issued twice"
            )
            said_moved = operate(
                page,
                live_server,
                moved,
                "change_due_date",
                "Change the due date",
                due_at=new_due.strftime("%Y-%m-%dT%H:%M"),
                reason="renegotiated by phone",
            )
        assert said_void == "NF-W-1: voided"
        assert said_moved == "NF-W-2: due date changed; reminders start again from it"
        time.sleep(
            max(0.0, (due_at - clock.now()).total_seconds()) + 3
        )  # past the old due time, the worker up

    voided.refresh_from_db()
    moved.refresh_from_db()
    run = WorkflowRun.objects.get(pk=voided.run_id)
    assert (voided.status, run.status, run.result) == (
        InvoiceStatus.VOIDED,
        RunStatus.COMPLETED,
        "voided",
    )
    assert (moved.status, moved.due_at) == (InvoiceStatus.OPEN, new_due)
    assert WorkflowRun.objects.get(pk=moved.run_id).status == RunStatus.WAITING
    assert not OutboundMessage.objects.filter(
        idempotency_key__startswith="billing:"
    ).exists()  # no reminder
    assert AuditEvent.objects.filter(
        run_id=voided.run_id, actor="ops", detail__update="void"
    ).exists()
    assert AuditEvent.objects.filter(
        run_id=moved.run_id,
        actor="ops",
        detail__update="change_due_date",
        detail__reason="renegotiated by phone",
    ).exists()
    assert Invoice.objects.count() == 2
