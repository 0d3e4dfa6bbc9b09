"""Void and a new due date for operators' tools, over the API and from a terminal: each goes
to the invoice's run, refused clearly for an invoice that is paid or voided."""

import threading
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from rest_framework.test import APIClient

from durable import days
from durable.features.tokens import token_create
from durable.models import AuditEvent, RunStatus, Signal
from durable.testing import drive
from processes.billing.models import InvoiceStatus
from tests.processes.conftest import PAYMENTS_URL, issued_invoice
from tests.processes.test_billing import payment, reminders
from tests.workers import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def invoice(clock):
    return issued_invoice("NF-4001", clock.now() + days(2))


def api_client(*codenames: str) -> APIClient:
    user = User.objects.create_user("finance", password="pw-unused-123")
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="processes", codename__in=codenames)
    )
    client = APIClient()
    secret = token_create(user, scope="operate").secret
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


@pytest.fixture
def finance():
    return api_client("change_invoice", "view_invoice")


def invoice_command(*argv: str) -> str:
    out = StringIO()
    call_command("invoice", *argv, stdout=out)
    return out.getvalue()


# --- the API ---


def test_a_void_over_the_api_is_stored_for_the_run_which_ends_voided(finance, invoice):
    response = finance.post(
        "/api/invoices/NF-4001/void/", {"reason": "issued twice"}, format="json"
    )

    assert response.status_code == 202  # in a test's transaction the run cannot answer yet
    assert response.json() == {"invoice": "NF-4001", "status": "stored", "invoice_status": "open"}
    run = drive(invoice.run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, "voided")
    assert AuditEvent.objects.filter(
        run_id=run.id, actor="finance", detail__via="api", detail__update="void"
    ).exists()


def test_a_void_of_a_paid_invoice_over_the_api_is_409_with_the_reason(
    finance, invoice, signed_post
):
    signed_post(payment("evt_api", invoice_number="NF-4001"), url=PAYMENTS_URL)

    response = finance.post(
        "/api/invoices/NF-4001/void/", {"reason": "issued twice"}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invoice_settled"
    assert response.json()["error"]["message"] == "refused: invoice NF-4001 is already paid"


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "reason"),
        ({"reason": 0}, "reason"),
        ({"reason": "x" * 501}, "reason"),
    ],
)
def test_a_void_without_a_reason_in_text_is_400_and_stores_nothing(finance, invoice, body, field):
    response = finance.post("/api/invoices/NF-4001/void/", body, format="json")

    assert response.status_code == 400 and field in response.json()["error"]["detail"]
    assert not Signal.objects.filter(run_id=invoice.run_id).exists()


@pytest.mark.parametrize(
    "due_at, says",
    [
        ("2027-02-01", "time zone"),
        ("2020-01-01T12:00:00+00:00", "in the future"),
        ("9999-12-31T23:59:00-03:00", "within two years"),
        ("tomorrow", "ISO 8601"),
    ],
)
def test_a_due_date_that_is_not_a_near_future_instant_is_400(finance, invoice, due_at, says):
    response = finance.post("/api/invoices/NF-4001/due-date/", {"due_at": due_at}, format="json")

    assert response.status_code == 400 and says in str(response.json())
    assert not Signal.objects.filter(run_id=invoice.run_id).exists()


def test_a_new_due_date_over_the_api_goes_to_the_run(finance, invoice, clock):
    new_due = clock.now() + days(10)

    response = finance.post(
        "/api/invoices/NF-4001/due-date/", {"due_at": new_due.isoformat()}, format="json"
    )
    drive(invoice.run_id)

    assert response.status_code == 202
    invoice.refresh_from_db()
    assert invoice.due_at == new_due
    clock.advance(days(10))
    drive(invoice.run_id)
    assert reminders(invoice) == [f"{invoice.run_id}:due1:1"]  # reminded from the new date only


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_api_answers_200_once_the_run_applied_the_void(finance, invoice):
    """The run answers while the request waits: a thread plays the worker that takes the update."""

    def worker():
        try:
            wait_until(
                lambda: Signal.objects.filter(
                    run_id=invoice.run_id, name="durable.update:void"
                ).exists(),
                timeout=10,
                message="the void to be stored",
            )
            drive(invoice.run_id)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    response = finance.post(
        "/api/invoices/NF-4001/void/", {"reason": "issued twice"}, format="json"
    )
    thread.join(timeout=20)

    assert response.status_code == 200
    assert response.json() == {
        "invoice": "NF-4001",
        "status": "applied",
        "invoice_status": "voided",
    }


def test_the_invoice_api_needs_the_change_permission_and_knows_its_invoices(invoice):
    viewer = api_client("view_invoice")

    assert (
        viewer.post("/api/invoices/NF-4001/void/", {"reason": "x"}, format="json").status_code
        == 403
    )
    assert APIClient().post(
        "/api/invoices/NF-4001/void/", {"reason": "x"}, format="json"
    ).status_code in (401, 403)
    finance = APIClient()
    finance.force_authenticate(User.objects.create_superuser("root", password="pw-unused-123"))
    assert (
        finance.post("/api/invoices/NF-9/void/", {"reason": "x"}, format="json").status_code == 404
    )
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.OPEN


# --- the command ---


def test_the_void_command_asks_first_and_without_a_terminal_needs_yes(invoice, monkeypatch):
    monkeypatch.setattr("sys.stdin", StringIO(""))  # no terminal, as in CI

    with pytest.raises(CommandError, match="add --yes") as refused:
        invoice_command("void", "NF-4001", "--reason", "issued twice")

    assert refused.value.returncode == 2
    assert not Signal.objects.filter(run_id=invoice.run_id).exists()


def test_the_void_command_with_yes_goes_to_the_run(invoice):
    output = invoice_command("void", "NF-4001", "--reason", "issued twice", "--yes")

    assert "NF-4001: stored; its run will apply it" in output
    assert drive(invoice.run_id).result == "voided"
    assert AuditEvent.objects.filter(
        run_id=invoice.run_id, actor__startswith="cli:", detail__update="void"
    ).exists()


def test_the_commands_refuse_a_paid_invoice_an_unknown_one_and_a_bad_date(invoice, signed_post):
    with pytest.raises(CommandError, match="no invoice 'NF-9'") as unknown:
        invoice_command("void", "NF-9", "--reason", "x", "--yes")
    with pytest.raises(CommandError, match="in the future") as past:
        invoice_command("due-date", "NF-4001", "--at", "2020-01-01T00:00:00+00:00", "--yes")
    signed_post(payment("evt_cli", invoice_number="NF-4001"), url=PAYMENTS_URL)
    with pytest.raises(CommandError, match="refused: invoice NF-4001 is already paid") as paid:
        invoice_command(
            "due-date", "NF-4001", "--at", (invoice.due_at + days(5)).isoformat(), "--yes"
        )

    assert (unknown.value.returncode, past.value.returncode, paid.value.returncode) == (2, 2, 1)
