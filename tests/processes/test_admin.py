"""The processes admin: rows that only the processes write are shown, never added or deleted by
hand."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from processes.billing.models import FinanceTicket, Invoice, PaymentEvent
from processes.onboarding.models import Account, Company
from processes.reconciliation.models import ReconciliationBatch
from processes.whatsapp.models import InboundMessage, OutboundMessage, PendingStatus

pytestmark = pytest.mark.django_db

PROCESS_WRITTEN = [
    Account,
    PaymentEvent,
    FinanceTicket,
    InboundMessage,
    OutboundMessage,
    PendingStatus,
    ReconciliationBatch,
]


@pytest.fixture
def superuser(client):
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))
    return client


def admin_url(model, action: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{action}", args=args)


@pytest.mark.parametrize("model", PROCESS_WRITTEN, ids=lambda model: model.__name__)
def test_the_add_form_of_a_process_written_model_is_refused_with_403(superuser, model):
    response = superuser.post(admin_url(model, "add"), {})

    assert response.status_code == 403
    assert model.objects.count() == 0


@pytest.mark.parametrize("model", PROCESS_WRITTEN, ids=lambda model: model.__name__)
def test_the_list_of_a_process_written_model_offers_no_add_button_and_no_delete_action(
    superuser, model
):
    response = superuser.get(admin_url(model, "changelist"))

    html = response.content.decode()
    assert response.status_code == 200
    assert admin_url(model, "add") not in html
    assert 'value="delete_selected"' not in html


def test_a_process_written_row_cannot_be_deleted_from_the_admin(superuser):
    company = Company.objects.create(name="Padaria", wa_id="5511999990001")
    account = Account.objects.create(
        company=company, number="0001-9", idempotency_key="onboarding:c-1"
    )

    response = superuser.post(admin_url(Account, "delete", account.pk), {"post": "yes"})

    assert response.status_code == 403
    assert Account.objects.filter(pk=account.pk).exists()


def test_an_operator_still_resolves_a_finance_ticket(superuser, django_capture_on_commit_callbacks):
    invoice = Invoice.objects.create(
        number="INV-1", customer_name="Padaria", amount="10.00", due_at="2026-01-01T00:00:00Z"
    )
    ticket = FinanceTicket.objects.create(
        invoice=invoice, idempotency_key="billing:INV-1", reason="unpaid"
    )

    response = superuser.post(admin_url(FinanceTicket, "change", ticket.pk), {"resolved": "on"})

    ticket.refresh_from_db()
    assert response.status_code == 302
    assert ticket.resolved is True
