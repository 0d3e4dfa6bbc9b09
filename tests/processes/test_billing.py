"""Billing reminders end to end, with payments arriving through the signed webhook."""

from datetime import timedelta
from decimal import Decimal

import pytest

from durable import UpdateRejected, days, services, workflow
from durable.errors import UpdateFailed
from durable.models import EntryKind, JournalEntry, RunStatus, Signal
from durable.testing import drive, override_workflow
from processes.billing import steps as billing_steps
from processes.billing.models import FinanceTicket, InvoiceStatus, PaymentEvent
from processes.billing.services import (
    InvoiceSettled,
    invoice_due_date_change,
    invoice_issue,
    invoice_void,
)
from processes.webhooks.models import QuarantinedItem
from processes.whatsapp.models import OutboundMessage
from tests.durable.test_api import client_for, user_with
from tests.processes.conftest import PAYMENTS_URL, issued_invoice

pytestmark = pytest.mark.django_db


@pytest.fixture
def invoice(clock):
    return issued_invoice("NF-1001", clock.now() - timedelta(hours=1))


def payment(
    event_id: str, invoice_number: str = "NF-1001", type: str = "payment.succeeded"
) -> dict:
    return {"id": event_id, "type": type, "data": {"invoice": invoice_number, "amount": "350.00"}}


def reminders(invoice) -> list[str]:
    return list(
        OutboundMessage.objects.filter(idempotency_key__startswith=invoice.run_id + ":")
        .order_by("pk")
        .values_list("idempotency_key", flat=True)
    )


def test_paid_before_the_second_reminder_ends_quietly(invoice, signed_post, clock):
    clock.advance(days(1))

    response = signed_post(payment("evt_1"), url=PAYMENTS_URL)
    run = drive(invoice.run_id)
    clock.advance(days(10))
    run = drive(invoice.run_id)

    assert response.status_code == 200
    assert (run.status, run.result) == (RunStatus.COMPLETED, "paid")
    assert reminders(invoice) == [f"billing:{invoice.pk}:1"]
    assert not FinanceTicket.objects.exists()
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.PAID


def test_unpaid_after_two_reminders_opens_exactly_one_finance_ticket(invoice, clock):
    clock.advance(days(3))
    drive(invoice.run_id)
    clock.advance(days(3))
    run = drive(invoice.run_id)
    drive(invoice.run_id)  # a stray second advance changes nothing

    assert run.result == "escalated"
    assert reminders(invoice) == [f"{invoice.run_id}:1", f"{invoice.run_id}:2"]
    assert FinanceTicket.objects.filter(invoice=invoice).count() == 1
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.ESCALATED


def test_a_future_invoice_is_reminded_only_when_due(clock):
    invoice = invoice_issue(
        number="NF-2002",
        customer_name="X",
        amount=Decimal("10"),
        due_at=clock.now() + days(5),
        wa_id="5511955550000",
        actor="test",
    )

    drive(invoice.run_id)
    clock.advance(days(5))
    drive(invoice.run_id)

    assert reminders(invoice) == [f"{invoice.run_id}:1"]


def test_an_invoice_paid_before_it_is_due_gets_no_reminder(signed_post, clock):
    invoice = invoice_issue(
        number="NF-3003",
        customer_name="Y",
        amount=Decimal("350.00"),
        due_at=clock.now() + days(5),
        wa_id="5511955551111",
        actor="test",
    )
    drive(invoice.run_id)

    signed_post(payment("evt_early", invoice_number="NF-3003"), url=PAYMENTS_URL)
    run = drive(invoice.run_id)
    clock.advance(days(5))
    drive(invoice.run_id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "paid")
    assert reminders(invoice) == []


def test_a_redelivered_payment_event_is_one_signal(invoice, signed_post):
    signed_post(payment("evt_2"), url=PAYMENTS_URL)
    response = signed_post(payment("evt_2"), url=PAYMENTS_URL)

    assert response.json()["duplicate"] is True
    assert PaymentEvent.objects.count() == 1
    assert Signal.objects.filter(run_id=invoice.run_id, name="paid").count() == 1


def test_a_payment_webhook_with_a_bad_signature_is_403_and_stores_nothing(invoice, signed_post):
    response = signed_post(payment("evt_3"), url=PAYMENTS_URL, secret="forged")

    assert response.status_code == 403
    assert not PaymentEvent.objects.exists()
    assert not Signal.objects.filter(name="paid").exists()


def test_a_payment_for_an_unknown_invoice_is_kept_unmatched(signed_post):
    response = signed_post(payment("evt_4", invoice_number="NF-404"), url=PAYMENTS_URL)

    assert response.json()["status"] == "unmatched"
    assert PaymentEvent.objects.get().note == "no invoice 'NF-404'"


OVERLONG = {  # the column each goes to: event_id 128, event_type 64, an invoice number 32
    "id": payment("evt_" + "x" * 200),
    "type": payment("evt_type", type="invoice.paid" + "!" * 60),
    "data.invoice": payment("evt_long", invoice_number="NF-" + "9" * 400),
}


@pytest.mark.parametrize("where, event", OVERLONG.items(), ids=OVERLONG.keys())
def test_a_payment_field_longer_than_its_column_is_quarantined_and_answered_200(
    invoice, signed_post, where, event
):
    response = signed_post(event, url=PAYMENTS_URL)

    item = QuarantinedItem.objects.get()
    assert (response.status_code, response.json()["status"]) == (200, "quarantined")
    assert (item.where, item.kind) == (where, "payment") and "characters" in item.reason
    assert not PaymentEvent.objects.exists()
    assert not Signal.objects.filter(run_id=invoice.run_id, name="paid").exists()


def test_a_redelivered_overlong_payment_is_one_quarantined_item(signed_post):
    event = payment("evt_long", invoice_number="NF-" + "9" * 400)

    signed_post(event, url=PAYMENTS_URL)
    signed_post(event, url=PAYMENTS_URL)  # the provider retries anyway

    assert QuarantinedItem.objects.count() == 1


def test_a_payment_event_without_an_id_is_400(signed_post):
    response = signed_post({"type": "payment.succeeded"}, url=PAYMENTS_URL)

    assert response.status_code == 400
    assert "'id'" in response.json()["detail"]


def test_a_payment_event_with_a_lone_surrogate_or_nul_is_stored_safely(signed_post):
    event = payment("evt_5", invoice_number="NF-404")
    event["data"]["payer"] = "Padaria \ud800\u0000"

    response = signed_post(event, url=PAYMENTS_URL)

    assert response.status_code == 200
    assert PaymentEvent.objects.get().payload["data"]["payer"] == "Padaria \ufffd\ufffd"


def test_a_payment_event_id_that_cannot_be_stored_verbatim_is_400(signed_post):
    response = signed_post(payment("evt_\u0000"), url=PAYMENTS_URL)

    assert response.status_code == 400
    assert not PaymentEvent.objects.exists()


def test_a_payment_event_is_kept_raw_before_it_is_parsed(signed_post):
    from processes.webhooks.models import WebhookDelivery

    signed_post({"type": "payment.succeeded"}, url=PAYMENTS_URL)

    assert WebhookDelivery.objects.get().source == "payments"


def updates_of(invoice) -> list[tuple[str, str]]:
    return list(
        JournalEntry.objects.filter(run_id=invoice.run_id, kind=EntryKind.UPDATE)
        .order_by("position")
        .values_list("name", "status")
    )


def test_a_voided_invoice_ends_its_run_with_no_further_reminder(invoice, clock):
    invoice_void(invoice, actor="ops", reason="issued twice")

    run = drive(invoice.run_id)
    clock.advance(days(7))
    drive(invoice.run_id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "voided")
    assert reminders(invoice) == [f"{invoice.run_id}:1"]  # the one sent before the void
    assert not FinanceTicket.objects.exists()


def test_a_void_is_an_update_the_run_applies_under_the_invoices_lock(invoice):
    applied = invoice_void(
        invoice, actor="ops:ana", reason="issued twice"
    )  # in a test's transaction:
    assert applied is False  # stored, not yet applied
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.OPEN  # the run decides, not the caller

    run = drive(invoice.run_id)

    invoice.refresh_from_db()
    assert (run.result, invoice.status) == ("voided", InvoiceStatus.VOIDED)
    assert updates_of(invoice) == [("void", "completed")]
    assert services.update_wait(run, f"void:{invoice.pk}", timeout=0) == {"status": "voided"}


def test_a_void_stored_before_a_payment_is_refused_by_the_run_with_the_reason(invoice, signed_post):
    invoice_void(invoice, actor="ops")
    signed_post(payment("evt_late"), url=PAYMENTS_URL)  # lands before the run wakes

    run = drive(invoice.run_id)

    assert run.result == "paid"
    assert updates_of(invoice) == [("void", "failed")]
    with pytest.raises(UpdateFailed) as refused:  # what the operator's call answers
        services.update_wait(run, f"void:{invoice.pk}", timeout=0)
    assert refused.value.reason == "the invoice is paid"
    with pytest.raises(InvoiceSettled, match="already paid"):
        invoice_void(invoice, actor="ops")  # asked again: the row answers at once


def test_a_due_date_change_of_a_voided_invoice_is_refused_and_stores_nothing(invoice):
    invoice_void(invoice, actor="ops")
    drive(invoice.run_id)
    stored = Signal.objects.filter(run_id=invoice.run_id).count()

    with pytest.raises(InvoiceSettled, match="voided"):
        invoice_due_date_change(invoice, due_at=invoice.due_at + days(10), actor="ops")

    assert Signal.objects.filter(run_id=invoice.run_id).count() == stored


def test_an_invoice_whose_reminders_ended_with_a_ticket_is_voided_on_its_row(invoice, clock):
    clock.advance(days(3))
    drive(invoice.run_id)
    clock.advance(days(3))
    assert drive(invoice.run_id).result == "escalated"
    with pytest.raises(InvoiceSettled, match="escalated"):  # finance's ticket decides its date
        invoice_due_date_change(invoice, due_at=invoice.due_at + days(10), actor="ops")

    assert invoice_void(invoice, actor="finance", reason="written off") is True

    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.VOIDED


def test_the_run_update_api_refuses_a_due_date_without_an_offset_with_the_reason(invoice):
    client = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = client.post(
        f"/api/runs/{invoice.run_id}/updates/change_due_date/",
        {"payload": {"due_at": "2027-02-01"}},
        format="json",
    )

    assert response.status_code == 422
    assert "ISO 8601 date and time with its offset" in str(response.json())
    assert not Signal.objects.filter(
        run_id=invoice.run_id, name__startswith="durable.update"
    ).exists()


def test_a_new_due_date_restarts_the_schedule_from_it(invoice, clock):
    invoice_due_date_change(invoice, due_at=clock.now() + days(10), actor="ops")
    drive(invoice.run_id)

    clock.advance(days(9))
    drive(invoice.run_id)
    assert reminders(invoice) == [f"{invoice.run_id}:1"]  # nothing before the new date
    clock.advance(days(1))
    drive(invoice.run_id)
    clock.advance(days(3))
    run = drive(invoice.run_id)

    assert reminders(invoice) == [
        f"{invoice.run_id}:1",
        f"{invoice.run_id}:due1:1",
        f"{invoice.run_id}:due1:2",
    ]
    assert run.status == RunStatus.WAITING


def test_moving_the_due_date_back_to_an_earlier_one_is_a_move_of_its_own(invoice, clock):
    first, second = clock.now() + days(10), clock.now() + days(20)
    invoice_due_date_change(invoice, due_at=first, actor="ops")
    drive(invoice.run_id)
    invoice_due_date_change(invoice, due_at=second, actor="ops")
    drive(invoice.run_id)

    invoice_due_date_change(invoice, due_at=first, actor="ops")  # back again
    drive(invoice.run_id)
    clock.advance(days(10))
    drive(invoice.run_id)

    invoice.refresh_from_db()
    assert invoice.due_at == first
    assert updates_of(invoice) == [("change_due_date", "completed")] * 3
    assert (
        reminders(invoice)[-1] == f"{invoice.run_id}:due3:1"
    )  # reminded from the date it went back to


def test_the_date_an_invoice_already_has_is_no_change_and_stores_nothing(invoice, clock):
    invoice_due_date_change(invoice, due_at=clock.now() + days(10), actor="ops")
    drive(invoice.run_id)
    stored = Signal.objects.filter(run_id=invoice.run_id).count()

    assert invoice_due_date_change(invoice, due_at=clock.now() + days(10), actor="ops") is True

    assert Signal.objects.filter(run_id=invoice.run_id).count() == stored


def test_the_run_update_api_gets_the_same_due_date_rules_from_the_run(invoice, clock):
    client = client_for(user_with("view_workflowrun", "operate_workflowrun"))
    past = (clock.now() - days(1)).isoformat()

    response = client.post(
        f"/api/runs/{invoice.run_id}/updates/change_due_date/",
        {"payload": {"due_at": past}, "timeout": 0},
        format="json",
    )
    run = drive(invoice.run_id)

    assert response.status_code == 202
    with pytest.raises(UpdateFailed) as refused:
        services.update_wait(run, response.json()["update_id"], timeout=0)
    assert refused.value.reason == "the new due date must be in the future"
    before = invoice.due_at
    invoice.refresh_from_db()
    assert invoice.due_at == before


def old_path_billing(invoice_id: int) -> str:
    """Billing as it was before void and renegotiation (no patch marker in its journal)."""
    from processes.billing.workflow import remind_until_paid

    return remind_until_paid(invoice_id, workflow.step(billing_steps.invoice_due_at, invoice_id))


def test_a_run_on_the_path_before_void_existed_refuses_a_void_at_once_and_stores_nothing(clock):
    with override_workflow(old_path_billing, name="billing"):
        invoice = invoice_issue(
            number="NF-OLD",
            customer_name="Padaria",
            amount=Decimal("10.00"),
            due_at=clock.now() + days(2),
            wa_id="5511955554444",
            actor="test",
        )
        drive(invoice.run_id)

    with pytest.raises(UpdateRejected, match="started before void and renegotiation existed"):
        services.run_update(
            invoice.run_id, "void", {"reason": "issued twice"}, actor="ops", timeout=0
        )
    with pytest.raises(InvoiceSettled, match="started before void and renegotiation existed"):
        invoice_void(invoice, actor="ops", reason="issued twice")

    assert not Signal.objects.filter(run_id=invoice.run_id).exists()


def test_a_payment_racing_a_void_wins_and_is_recorded_once(invoice, signed_post):
    invoice_void(invoice, actor="ops", reason="renegotiated off-line")
    signed_post(payment("evt_race"), url=PAYMENTS_URL)  # both land before the run wakes
    signed_post(payment("evt_race"), url=PAYMENTS_URL)  # and the provider retries

    run = drive(invoice.run_id)

    invoice.refresh_from_db()
    assert (run.result, invoice.status) == ("paid", InvoiceStatus.PAID)
    assert PaymentEvent.objects.filter(invoice=invoice).count() == 1


def test_a_paid_invoice_cannot_be_voided(invoice, signed_post):
    signed_post(payment("evt_first"), url=PAYMENTS_URL)

    with pytest.raises(InvoiceSettled, match="already paid"):
        invoice_void(invoice, actor="ops")

    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.PAID


def test_a_due_date_change_for_an_invoice_whose_run_was_cancelled_says_its_reminders_ended(invoice):
    services.run_cancel(invoice.run_id, reason="moved to another system", actor="ops")

    with pytest.raises(InvoiceSettled, match="its reminders have ended"):
        invoice_due_date_change(invoice, due_at=invoice.due_at + days(10), actor="ops")

    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.OPEN
