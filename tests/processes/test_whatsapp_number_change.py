"""WhatsApp's notices about a customer's identity, through the signed webhook: a new number
moves the customer's company to it, a changed identity is a finding on their open case."""

import pytest

from approvals.models import ApprovalAudit, ApprovalRequest
from durable.models import WorkflowRun
from durable.testing import drive
from processes.onboarding.models import Company
from processes.whatsapp.models import InboundMessage, InboundStatus, OutboundMessage
from processes.whatsapp.selectors import inbound_needing_attention
from tests.processes.conftest import (
    ADDRESS,
    CONTRACT,
    HELLO,
    PHONE,
    QUIET,
    SELFIE,
    whatsapp_webhook,
)
from tests.processes.test_onboarding import open_case

pytestmark = pytest.mark.django_db

NEW_PHONE = "5511966665555"


def notice(wamid: str, kind: str, **fields) -> dict:
    """A ``system`` message as the Cloud API delivers it: from the number the customer had."""
    return {
        "from": PHONE,
        "id": wamid,
        "timestamp": "1767225700",
        "type": "system",
        "system": {"type": kind, **fields},
    }


NUMBER_CHANGED = notice(
    "wamid.SYSTEM-NUMBER",
    "user_changed_number",
    wa_id=NEW_PHONE,
    body=f"User Padaria Boa Massa changed from {PHONE} to {NEW_PHONE}",
)
IDENTITY_CHANGED = notice(
    "wamid.SYSTEM-IDENTITY",
    "customer_identity_changed",
    identity="a1b2c3",
    body="Padaria Boa Massa's security code changed",
)


def from_new_phone(message: dict) -> dict:
    return {**message, "from": NEW_PHONE, "id": message["id"] + "-NEW"}


@pytest.fixture
def whatsapp(signed_post, clock):
    """Delivers what WhatsApp sends (a system notice has no contacts), then lets every
    onboarding run advance past the quiet period, as the customer fixture does."""

    def deliver(*messages):
        assert signed_post(whatsapp_webhook(*messages, contacts=[])).status_code == 200
        for company in Company.objects.all():
            drive(company.run_id)
        clock.advance(QUIET + 1)
        for company in Company.objects.all():
            drive(company.run_id)
        clock.advance(1)

    return deliver


def test_a_customer_who_changes_number_mid_onboarding_is_one_case_answered_at_the_new_number(
    customer, whatsapp, client, ana
):
    customer(HELLO)
    customer(CONTRACT)

    whatsapp(NUMBER_CHANGED)
    changed_at = InboundMessage.objects.get(wamid=NUMBER_CHANGED["id"]).received_at
    whatsapp(from_new_phone(ADDRESS))
    whatsapp(from_new_phone(SELFIE))

    company = Company.objects.get()
    assert (company.wa_id, company.former_wa_id) == (NEW_PHONE, PHONE)
    assert WorkflowRun.objects.filter(workflow_name="onboarding").count() == 1
    case = open_case(company.run_id)
    assert len(case.summary["documents_received"].splitlines()) == 3
    assert OutboundMessage.objects.filter(idempotency_key__endswith=":greet").count() == 1
    replies = OutboundMessage.objects.filter(created_at__gt=changed_at)
    assert replies.exists() and set(replies.values_list("to_wa_id", flat=True)) == {NEW_PHONE}
    client.force_login(ana)
    page = client.get(f"/approvals/{case.pk}/").content.decode()
    assert f"changed from {PHONE} to {NEW_PHONE}" in page and f"+{NEW_PHONE}" in page


def test_a_number_change_during_the_review_re_checks_the_open_case(
    in_review, whatsapp, client, ana
):
    case = open_case(in_review.id)

    whatsapp(NUMBER_CHANGED)

    recheck = ApprovalAudit.objects.get(request=case, action="recheck")
    assert recheck.detail["changed"]["whatsapp"] == [PHONE, NEW_PHONE]
    assert ApprovalRequest.objects.get(pk=case.pk).summary["whatsapp"] == NEW_PHONE
    client.force_login(ana)
    assert (
        f"changed number from {PHONE} to {NEW_PHONE}"
        in client.get(f"/approvals/{case.pk}/").content.decode()
    )


def test_an_identity_change_on_an_open_case_is_a_finding_and_changes_nothing_else(
    in_review, whatsapp, client, ana
):
    case = open_case(in_review.id)

    whatsapp(IDENTITY_CHANGED)

    after = ApprovalRequest.objects.get(pk=case.pk)
    assert [item["code"] for item in after.summary["findings"]][-1] == "identity_changed"
    assert (after.risk, after.required_approvals, after.status) == (
        case.risk,
        case.required_approvals,
        case.status,
    )
    assert Company.objects.get().wa_id == PHONE
    client.force_login(ana)
    assert (
        "the customer&#x27;s identity changed"
        in client.get(f"/approvals/{case.pk}/").content.decode()
    )


def test_a_number_change_for_a_number_no_company_has_is_kept_for_an_operator(whatsapp):
    whatsapp(NUMBER_CHANGED)

    kept = InboundMessage.objects.get()
    assert (kept.status, kept.company) == (InboundStatus.UNMATCHED, None)
    assert PHONE in kept.note and NEW_PHONE in kept.note
    assert kept in inbound_needing_attention() and not Company.objects.exists()


def test_a_number_change_to_a_number_with_its_own_company_merges_nothing(customer, whatsapp):
    customer(HELLO)
    customer(CONTRACT)
    whatsapp(from_new_phone(HELLO))  # the new number wrote first: a company of its own

    whatsapp(NUMBER_CHANGED)

    kept = InboundMessage.objects.get(wamid=NUMBER_CHANGED["id"])
    assert kept.status == InboundStatus.UNMATCHED and "not merged" in kept.note
    assert sorted(Company.objects.values_list("wa_id", flat=True)) == sorted([PHONE, NEW_PHONE])
