"""The invoice admin: an invoice is issued with its run, and voided or given a new due date
only through that run (an update), never by editing the row."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.urls import reverse

from durable import days
from durable.models import AuditEvent, RunStatus, Signal, WorkflowRun
from durable.testing import drive
from processes.billing.models import Invoice, InvoiceStatus
from tests.processes.conftest import PAYMENTS_URL, issued_invoice
from tests.processes.test_billing import payment, reminders

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:processes_invoice_changelist")


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("ana", password="pw-unused-123"))
    return client


@pytest.fixture
def invoice(clock):
    return issued_invoice("NF-2001", clock.now() + days(2))


def act(client, action: str, invoices, **form):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [i.pk for i in invoices], **form}
    )


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_an_invoice_added_in_the_admin_is_issued_with_its_reminders_run(operator, clock):
    response = operator.post(
        reverse("admin:processes_invoice_add"),
        {
            "number": "NF-3001",
            "customer_name": "Floricultura Jardim",
            "amount": "120.50",
            "due_at_0": (clock.now() + days(5)).strftime("%Y-%m-%d"),
            "due_at_1": "12:00:00",
            "wa_id": "5511900000001",
        },
    )

    assert response.status_code == 302
    invoice = Invoice.objects.get(number="NF-3001")
    run = WorkflowRun.objects.get(pk=invoice.run_id)
    assert run.workflow_name == "billing"
    assert AuditEvent.objects.filter(run_id=run.id, actor="ana").exists()


def test_the_change_form_does_not_edit_the_status_or_the_due_date(operator, invoice):
    response = operator.post(
        reverse("admin:processes_invoice_change", args=[invoice.pk]),
        {
            "customer_name": "Padaria Boa Massa Ltda",
            "wa_id": invoice.wa_id,
            "status": "voided",
            "due_at_0": "2030-01-01",
            "due_at_1": "00:00:00",
        },
    )

    assert response.status_code == 302
    before_due = invoice.due_at
    invoice.refresh_from_db()
    assert (invoice.customer_name, invoice.status, invoice.due_at) == (
        "Padaria Boa Massa Ltda",
        InvoiceStatus.OPEN,
        before_due,
    )


def test_an_invoice_cannot_be_deleted_from_the_admin(operator, invoice):
    response = operator.post(
        reverse("admin:processes_invoice_delete", args=[invoice.pk]), {"post": "yes"}
    )

    assert response.status_code == 403
    assert Invoice.objects.filter(pk=invoice.pk).exists()


def test_void_asks_for_a_reason_first_and_changes_nothing_until_sent(operator, invoice):
    response = act(operator, "void_invoices", [invoice])

    assert response.status_code == 200
    assert "NF-2001" in response.content.decode() and 'name="reason"' in response.content.decode()
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.OPEN


def test_void_goes_to_the_invoices_run_which_ends_voided(operator, invoice):
    response = act(operator, "void_invoices", [invoice], apply="1", reason="issued twice")

    assert response.status_code == 302
    assert said(response) == [
        "NF-2001: stored; its run will apply it (it did not answer within 5 s)"
    ]
    run = drive(invoice.run_id)  # the worker, in a test
    invoice.refresh_from_db()
    assert (run.status, run.result, invoice.status) == (
        RunStatus.COMPLETED,
        "voided",
        InvoiceStatus.VOIDED,
    )
    assert AuditEvent.objects.filter(
        run_id=run.id,
        actor="ana",
        detail__update="void",
        detail__via="admin",
        detail__invoice="NF-2001",
    ).exists()


def test_voiding_a_paid_invoice_is_refused_with_the_reason(operator, invoice, signed_post):
    signed_post(payment("evt_admin", invoice_number="NF-2001"), url=PAYMENTS_URL)

    response = act(operator, "void_invoices", [invoice], apply="1", reason="issued twice")

    assert said(response) == ["NF-2001: refused: the invoice is paid"]


def test_void_without_a_reason_shows_the_form_again_and_stores_nothing(operator, invoice):
    response = act(operator, "void_invoices", [invoice], apply="1", reason="")

    assert response.status_code == 400
    assert "This field is required" in response.content.decode()
    assert not Signal.objects.filter(run_id=invoice.run_id).exists()


@pytest.mark.parametrize(
    "due_at, error",
    [
        ("2020-01-01T10:00", "must be in the future"),
        ("9999-12-31T23:59", "within two years"),
        ("tomorrow", "Enter a valid date/time"),
    ],
)
def test_a_due_date_in_the_past_far_away_or_unreadable_is_refused_on_the_form(
    operator, invoice, due_at, error
):
    response = act(operator, "change_due_date", [invoice], apply="1", due_at=due_at)

    assert response.status_code == 400
    assert error in response.content.decode()
    before = invoice.due_at
    invoice.refresh_from_db()
    assert invoice.due_at == before


def test_a_new_due_date_goes_to_the_run_which_writes_it_and_starts_again_from_it(
    operator, invoice, clock
):
    new_due = (clock.now() + days(10)).replace(second=0, microsecond=0)

    # The admin reads the time in the team's zone, as it shows times (São Paulo).
    act(
        operator,
        "change_due_date",
        [invoice],
        apply="1",
        due_at=new_due.astimezone(ZoneInfo("America/Sao_Paulo")).strftime("%Y-%m-%dT%H:%M"),
        reason="renegotiated by phone",
    )
    drive(invoice.run_id)

    invoice.refresh_from_db()
    assert invoice.due_at == new_due
    assert AuditEvent.objects.filter(
        run_id=invoice.run_id,
        detail__update="change_due_date",
        detail__reason="renegotiated by phone",
    ).exists()
    clock.advance(days(9))
    drive(invoice.run_id)
    assert reminders(invoice) == []  # nothing before the new date (the old one was in 2 days)
    clock.advance(days(1))
    drive(invoice.run_id)
    assert reminders(invoice) == [f"{invoice.run_id}:due1:1"]  # the schedule started again from it


def test_a_new_due_date_needs_a_reason_on_the_form(operator, invoice, clock):
    new_due = (clock.now() + days(10)).replace(second=0, microsecond=0)

    response = act(
        operator, "change_due_date", [invoice], apply="1", due_at=new_due.strftime("%Y-%m-%dT%H:%M")
    )

    invoice.refresh_from_db()
    assert response.status_code == 400 and invoice.due_at != new_due


def test_a_reminder_is_not_sent_for_an_invoice_settled_outside_its_run(invoice, clock):
    Invoice.objects.filter(pk=invoice.pk).update(status=InvoiceStatus.VOIDED)  # by hand, in SQL

    clock.advance(days(2) + timedelta(minutes=1))
    run = drive(invoice.run_id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "voided")
    assert reminders(invoice) == []
