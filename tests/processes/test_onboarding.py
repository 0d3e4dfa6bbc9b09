"""Onboarding end to end through the signed WhatsApp webhook, driven in-process."""
import pytest

from durable import days, services
from durable.models import RunStatus
from durable.testing import drive
from processes.onboarding.models import Account, Company, CompanyStatus
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import document, whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db

PHONE = "5511988887777"
HELLO = whatsapp_message("wamid.HELLO", wa_id=PHONE)
CONTRACT = document("wamid.CONTRACT", "Contrato social", filename="contrato.pdf", wa_id=PHONE)
ADDRESS = document("wamid.ADDRESS", "comprovante de endereço", filename="luz.pdf", wa_id=PHONE)
SELFIE = document("wamid.SELFIE", "", type="image", wa_id=PHONE)


class SimulatedCrash(BaseException):
    """The process dies: not an error the step's retry policy would catch."""


@pytest.fixture
def customer(signed_post):
    """Plays the customer: each message goes through the signed webhook, then the run advances."""

    def send(message):
        assert signed_post(whatsapp_webhook(message)).status_code == 200
        return drive(Company.objects.get(wa_id=PHONE).run_id)

    return send


def sent_keys(run_id: str) -> list[str]:
    return [key.removeprefix(run_id + ":") for key in
            OutboundMessage.objects.order_by("created_at", "pk").values_list("idempotency_key", flat=True)]


def test_full_onboarding_asks_for_each_missing_document_then_opens_the_account(customer, clock):
    run = customer(HELLO)
    assert run.waiting_for == "signal:documents_received"
    customer(CONTRACT)
    clock.advance(days(2))
    customer(ADDRESS)
    run = customer(SELFIE)
    assert run.waiting_for == "signal:compliance_decision"
    assert Company.objects.get().status == CompanyStatus.IN_REVIEW

    services.signal_send(run.id, "compliance_decision", {"approved": True, "by": "ana", "reason": "ok"})
    run = drive(run.id)

    company = Company.objects.get()
    assert run.status == RunStatus.COMPLETED
    assert run.result == company.account.number
    assert company.status == CompanyStatus.APPROVED
    assert sent_keys(run.id) == ["greet", "ask:1", "ask:2", "welcome"]
    asks = OutboundMessage.objects.filter(idempotency_key__contains=":ask:").order_by("pk")
    assert ["comprovante de endereço" in m.body and "selfie" in m.body for m in asks] == [True, False]


def test_no_documents_brings_a_reminder_then_closes_the_case(customer, clock):
    run = customer(HELLO)

    clock.advance(days(7))
    drive(run.id)
    clock.advance(days(3))
    run = drive(run.id)

    assert run.result == "expired"
    assert Company.objects.get().status == CompanyStatus.CLOSED
    assert sent_keys(run.id) == ["greet", "remind:0", "closed"]


def test_a_document_after_the_reminder_keeps_the_case_open(customer, clock):
    run = customer(HELLO)
    clock.advance(days(7))
    drive(run.id)   # the sweep wakes the run at the deadline: the reminder goes out

    run = customer(CONTRACT)

    assert run.status == RunStatus.WAITING
    assert sent_keys(run.id) == ["greet", "remind:0", "ask:1"]


def test_a_late_compliance_decision_escalates_and_still_counts(customer, clock):
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    clock.advance(days(3))
    drive(run.id)
    clock.advance(days(3))
    drive(run.id)
    services.signal_send(run.id, "compliance_decision", {"approved": True, "by": "bruno"})
    run = drive(run.id)

    assert Company.objects.get().escalations == 2
    assert run.status == RunStatus.COMPLETED
    assert Account.objects.get().approved_by == "bruno"


def test_a_rejection_closes_without_an_account(customer):
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    services.signal_send(run.id, "compliance_decision", {"approved": False, "by": "ana", "reason": "CNPJ inapto"})
    run = drive(run.id)

    assert run.result == "rejected"
    assert not Account.objects.exists()
    assert Company.objects.get().status_reason == "CNPJ inapto"


def test_a_crash_during_account_creation_creates_one_account(customer, clock, monkeypatch, settings):
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    services.signal_send(run.id, "compliance_decision", {"approved": True, "by": "ana"})
    original_save = Account.save

    def save_then_die(account, *args, **kwargs):
        original_save(account, *args, **kwargs)
        monkeypatch.setattr(Account, "save", original_save)
        raise SimulatedCrash("power lost right after the account row was written")

    monkeypatch.setattr(Account, "save", save_then_die)
    with pytest.raises(SimulatedCrash):
        drive(run.id)
    clock.advance(settings.DURABLE_LEASE_SECONDS + 1)   # the dead worker's lease expires
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert Account.objects.count() == 1
    assert run.result == Account.objects.get().number
