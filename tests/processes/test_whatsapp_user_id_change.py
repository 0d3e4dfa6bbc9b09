"""WhatsApp's notice that a customer's business-scoped user id changed, through the signed
webhook: their company takes the new id, and two companies are never merged."""

import pytest

from approvals.models import ApprovalAudit, ApprovalRequest
from processes.onboarding.models import Company
from processes.whatsapp.models import InboundMessage, InboundStatus
from tests.processes.conftest import HELLO, PHONE, whatsapp_message, whatsapp_webhook
from tests.processes.test_onboarding import open_case

pytestmark = pytest.mark.django_db

OLD_USER_ID, NEW_USER_ID = "BR.1234567890", "BR.9876543210"


def user_id_changed(wamid: str = "wamid.SYSTEM-USER-ID") -> dict:
    return {
        "from": PHONE,
        "from_user_id": OLD_USER_ID,
        "id": wamid,
        "timestamp": "1767225700",
        "type": "system",
        "system": {
            "type": "user_changed_user_id",
            "user_id": NEW_USER_ID,
            "body": "User Padaria Boa Massa changed their user id",
        },
    }


def test_a_user_id_change_moves_the_company_to_the_new_user_id(customer, signed_post):
    customer({**HELLO, "from_user_id": OLD_USER_ID})

    signed_post(whatsapp_webhook(user_id_changed(), contacts=[]))

    company = Company.objects.get(wa_id=PHONE)
    assert (company.user_id, company.former_user_id) == (NEW_USER_ID, OLD_USER_ID)
    assert InboundMessage.objects.get(wamid="wamid.SYSTEM-USER-ID").status == InboundStatus.KEPT


def test_a_user_id_change_to_an_id_with_its_own_company_merges_nothing(customer, signed_post):
    customer({**HELLO, "from_user_id": OLD_USER_ID})
    signed_post(whatsapp_webhook(whatsapp_message("wamid.OTHER", wa_id=None, user_id=NEW_USER_ID)))

    signed_post(whatsapp_webhook(user_id_changed(), contacts=[]))

    kept = InboundMessage.objects.get(wamid="wamid.SYSTEM-USER-ID")
    assert kept.status == InboundStatus.UNMATCHED and "not merged" in kept.note
    assert Company.objects.get(wa_id=PHONE).user_id == OLD_USER_ID
    assert Company.objects.filter(user_id=NEW_USER_ID).exclude(wa_id=PHONE).exists()


def test_a_user_id_change_during_the_review_re_checks_the_open_case(in_review, signed_post):
    case = open_case(in_review.id)

    signed_post(whatsapp_webhook(user_id_changed(), contacts=[]))

    recheck = ApprovalAudit.objects.get(request=case, action="recheck")
    assert NEW_USER_ID in recheck.detail["changed"]["whatsapp"][1]
    assert ApprovalRequest.objects.get(pk=case.pk).summary["whatsapp"] == f"{PHONE} / {NEW_USER_ID}"


def test_meta_s_notice_without_a_phone_finds_the_company_by_the_previous_user_id(
    customer, signed_post
):
    customer({**HELLO, "from_user_id": OLD_USER_ID})
    notice = {
        "from_user_id": NEW_USER_ID,
        "id": "wamid.SYSTEM-NO-PHONE",
        "timestamp": "1767225700",
        "type": "system",
        "system": {
            "type": "user_changed_user_id",
            "user_id": NEW_USER_ID,
            "previous_user_id": OLD_USER_ID,
            "body": "changed",
        },
    }

    signed_post(whatsapp_webhook(notice, contacts=[]))

    company = Company.objects.get(wa_id=PHONE)
    assert (company.user_id, company.former_user_id) == (NEW_USER_ID, OLD_USER_ID)
    assert Company.objects.count() == 1


def test_a_message_sent_before_the_change_and_delivered_after_it_joins_the_same_company(
    customer, signed_post
):
    customer({**HELLO, "from_user_id": OLD_USER_ID})
    signed_post(whatsapp_webhook(user_id_changed(), contacts=[]))

    signed_post(
        whatsapp_webhook(whatsapp_message("wamid.LATE", wa_id=None, user_id=OLD_USER_ID, text="Oi"))
    )

    assert Company.objects.count() == 1
    assert InboundMessage.objects.get(wamid="wamid.LATE").company == Company.objects.get(
        wa_id=PHONE
    )
