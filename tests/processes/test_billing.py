"""Billing reminders end to end, with payments arriving through the signed webhook."""
from datetime import timedelta
from decimal import Decimal

import pytest

from durable import days
from durable.models import RunStatus, Signal
from durable.testing import drive
from processes.billing.models import FinanceTicket, InvoiceStatus, PaymentEvent
from processes.billing.services import InvoiceSettled, invoice_due_date_change, invoice_issue, invoice_void
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import PAYMENTS_URL

pytestmark = pytest.mark.django_db


@pytest.fixture
def invoice(clock):
    invoice = invoice_issue(number="NF-1001", customer_name="Padaria Boa Massa", amount=Decimal("350.00"),
                            due_at=clock.now() - timedelta(hours=1), wa_id="5511955554444", actor="test")
    drive(invoice.run_id)
    return invoice


def payment(event_id: str, invoice_number: str = "NF-1001", type: str = "payment.succeeded") -> dict:
    return {"id": event_id, "type": type, "data": {"invoice": invoice_number, "amount": "350.00"}}


def reminders(invoice) -> list[str]:
    return list(OutboundMessage.objects.filter(idempotency_key__startswith=invoice.run_id + ":")
                .order_by("pk").values_list("idempotency_key", flat=True))


def test_paid_before_the_second_reminder_ends_quietly(invoice, signed_post, clock):
    clock.advance(days(1))

    response = signed_post(payment("evt_1"), url=PAYMENTS_URL)
    run = drive(invoice.run_id)
    clock.advance(days(10))
    run = drive(invoice.run_id)

    assert response.status_code == 200
    assert (run.status, run.result) == (RunStatus.COMPLETED, "paid")
    assert reminders(invoice) == ["billing:%d:1" % invoice.pk]
    assert not FinanceTicket.objects.exists()
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.PAID


def test_unpaid_after_two_reminders_opens_exactly_one_finance_ticket(invoice, clock):
    clock.advance(days(3))
    drive(invoice.run_id)
    clock.advance(days(3))
    run = drive(invoice.run_id)
    drive(invoice.run_id)   # a stray second advance changes nothing

    assert run.result == "escalated"
    assert reminders(invoice) == [f"{invoice.run_id}:1", f"{invoice.run_id}:2"]
    assert FinanceTicket.objects.filter(invoice=invoice).count() == 1
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.ESCALATED


def test_a_future_invoice_is_reminded_only_when_due(clock):
    invoice = invoice_issue(number="NF-2002", customer_name="X", amount=Decimal("10"),
                            due_at=clock.now() + days(5), wa_id="5511955550000", actor="test")

    drive(invoice.run_id)
    clock.advance(days(5))
    drive(invoice.run_id)

    assert reminders(invoice) == [f"{invoice.run_id}:1"]


def test_an_invoice_paid_before_it_is_due_gets_no_reminder(signed_post, clock):
    invoice = invoice_issue(number="NF-3003", customer_name="Y", amount=Decimal("350.00"),
                            due_at=clock.now() + days(5), wa_id="5511955551111", actor="test")
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


def test_a_payment_naming_an_invoice_longer_than_the_note_is_kept_with_the_note_cut_to_fit(signed_post):
    number = "NF-" + "9" * 400   # a provider's field longer than any invoice number we issue

    response = signed_post(payment("evt_long", invoice_number=number), url=PAYMENTS_URL)

    event = PaymentEvent.objects.get()
    assert (response.status_code, response.json()["status"]) == (200, "unmatched")
    assert len(event.note) == PaymentEvent._meta.get_field("note").max_length
    assert event.note.startswith("no invoice 'NF-999") and event.note.endswith("…")
    assert event.payload["data"]["invoice"] == number   # the whole value is kept, in the payload


def test_a_payment_event_without_an_id_is_400(signed_post):
    response = signed_post({"type": "payment.succeeded"}, url=PAYMENTS_URL)

    assert response.status_code == 400
    assert "'id'" in response.json()["detail"]


def test_a_payment_event_id_too_long_to_store_whole_is_400(signed_post):
    response = signed_post(payment("evt_" + "x" * 200), url=PAYMENTS_URL)

    assert response.status_code == 400
    assert not PaymentEvent.objects.exists()


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


def test_a_voided_invoice_ends_its_run_with_no_further_reminder(invoice, clock):
    invoice_void(invoice, actor="ops", reason="issued twice")

    run = drive(invoice.run_id)
    clock.advance(days(7))
    drive(invoice.run_id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "voided")
    assert reminders(invoice) == [f"{invoice.run_id}:1"]    # the one sent before the void
    assert not FinanceTicket.objects.exists()


def test_a_new_due_date_restarts_the_schedule_from_it(invoice, clock):
    invoice_due_date_change(invoice, due_at=clock.now() + days(10), actor="ops")
    drive(invoice.run_id)

    clock.advance(days(9))
    drive(invoice.run_id)
    assert reminders(invoice) == [f"{invoice.run_id}:1"]    # nothing before the new date
    clock.advance(days(1))
    drive(invoice.run_id)
    clock.advance(days(3))
    run = drive(invoice.run_id)

    assert reminders(invoice) == [f"{invoice.run_id}:1", f"{invoice.run_id}:due1:1", f"{invoice.run_id}:due1:2"]
    assert run.status == RunStatus.WAITING


def test_a_payment_racing_a_void_wins_and_is_recorded_once(invoice, signed_post):
    invoice_void(invoice, actor="ops", reason="renegotiated off-line")
    signed_post(payment("evt_race"), url=PAYMENTS_URL)        # both land before the run wakes
    signed_post(payment("evt_race"), url=PAYMENTS_URL)        # and the provider retries

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
