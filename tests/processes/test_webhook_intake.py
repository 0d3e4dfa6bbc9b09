"""The WhatsApp webhook never loses a message: raw bytes first, each part on its own,
what cannot be taken quarantined for an operator, 200 unless the signature or JSON is bad."""

import json

import pytest
from django.contrib.auth.models import User

from processes import signing
from processes.onboarding.models import Company
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from processes.webhooks.services import delivery_signature_valid
from processes.whatsapp.models import InboundMessage, OutboundMessage, OutboundStatus
from tests.processes.conftest import WHATSAPP_URL, whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db

GOOD = whatsapp_message("wamid.GOOD", text="Oi, tudo bem?")


def value_of(delivery: dict) -> dict:
    return delivery["entry"][0]["changes"][0]["value"]


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("operator", password="pw-unused-123"))
    return client


def test_a_signed_delivery_is_stored_byte_for_byte_and_its_signature_checks_again(signed_post):
    body = b'{"object": "whatsapp_business_account",  "entry": []}\n'

    response = signed_post(body)

    delivery = WebhookDelivery.objects.get()
    assert response.status_code == 200
    assert bytes(delivery.body) == body
    assert delivery_signature_valid(delivery)


def test_a_badly_signed_delivery_stores_no_bytes(signed_post):
    signed_post(whatsapp_webhook(GOOD), secret="not-the-app-secret")

    assert not WebhookDelivery.objects.exists()


def test_a_redelivery_of_the_same_bytes_is_one_delivery_and_one_quarantined_item(signed_post):
    delivery = whatsapp_webhook(GOOD, {"type": "text"})

    signed_post(delivery)
    signed_post(delivery)

    assert WebhookDelivery.objects.get().times_received == 2
    assert QuarantinedItem.objects.count() == 1
    assert InboundMessage.objects.count() == 1


def test_metadata_that_is_not_an_object_does_not_cost_the_message_beside_it(signed_post):
    delivery = whatsapp_webhook(GOOD)
    value_of(delivery)["metadata"] = "x"

    response = signed_post(delivery)

    assert response.status_code == 200
    assert InboundMessage.objects.filter(wamid="wamid.GOOD").exists()


def test_contacts_and_statuses_of_the_wrong_shape_do_not_cost_the_message(signed_post):
    delivery = whatsapp_webhook(GOOD)
    value_of(delivery).update(contacts="nobody", statuses={"id": "x"})

    response = signed_post(delivery)

    assert response.status_code == 200
    assert InboundMessage.objects.filter(wamid="wamid.GOOD").exists()
    assert QuarantinedItem.objects.get().where == "entry[0].changes[0].value.statuses"


def test_a_message_without_an_id_is_quarantined_and_the_good_messages_land(signed_post):
    delivery = whatsapp_webhook(
        GOOD, {"type": "text", "from": "5511999990001"}, whatsapp_message("wamid.GOOD2")
    )

    response = signed_post(delivery)

    assert response.status_code == 200
    assert QuarantinedItem.objects.count() == 1
    assert set(InboundMessage.objects.values_list("wamid", flat=True)) == {
        "wamid.GOOD",
        "wamid.GOOD2",
    }
    item = QuarantinedItem.objects.get()
    assert (item.where, item.kind) == ("entry[0].changes[0].value.messages[1]", "message")
    assert json.loads(item.fragment) == {"type": "text", "from": "5511999990001"}


def test_a_message_nested_too_deep_is_quarantined_and_its_neighbours_land(signed_post):
    deep = whatsapp_message("wamid.DEEP")
    for _ in range(200):
        deep["text"] = {"body": deep["text"]}

    response = signed_post(whatsapp_webhook(deep, GOOD))

    assert response.status_code == 200
    assert list(InboundMessage.objects.values_list("wamid", flat=True)) == ["wamid.GOOD"]
    assert "nested more than" in QuarantinedItem.objects.get().reason


def test_a_body_that_is_not_an_object_is_quarantined_whole_with_200(signed_post):
    response = signed_post([1, 2, 3])

    assert response.status_code == 200
    assert QuarantinedItem.objects.get().kind == "delivery"


@pytest.mark.parametrize("errors", [131000, "Message undeliverable", {"code": 1}, None])
def test_a_failed_status_with_errors_of_any_shape_is_applied(signed_post, errors, clock):
    OutboundMessage.objects.create(
        idempotency_key="k-1",
        to_wa_id="5511999990001",
        body="Olá",
        backend="console",
        provider_message_id="wamid.OUT1",
        status=OutboundStatus.SENT,
    )
    status = {"id": "wamid.OUT1", "status": "failed", "timestamp": "1767225700", "errors": errors}

    response = signed_post(whatsapp_webhook(GOOD, statuses=[status]))

    assert response.status_code == 200
    assert OutboundMessage.objects.get().status == OutboundStatus.FAILED
    assert InboundMessage.objects.filter(wamid="wamid.GOOD").exists()
    assert not QuarantinedItem.objects.exists()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_are_refused_with_400_not_dropped(signed_post, constant):
    body = json.dumps(whatsapp_webhook(GOOD)).replace('"1767225600"', constant).encode()

    response = signed_post(body)

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]
    assert not InboundMessage.objects.exists()
    assert bytes(WebhookDelivery.objects.get().body) == body


LONE_SURROGATE_DELIVERY = json.dumps(
    whatsapp_webhook(
        whatsapp_message("wamid.SURROGATE", text="Oi \ud800 tudo bem\u0000?"),
        contacts=[{"wa_id": "5511999990001", "profile": {"name": "Padaria \ud800"}}],
    )
).encode()


def test_a_lone_surrogate_in_text_and_profile_name_is_stored_and_the_admin_renders(
    signed_post, admin_client
):
    assert b"\\ud800" in LONE_SURROGATE_DELIVERY

    response = signed_post(LONE_SURROGATE_DELIVERY)

    message = InboundMessage.objects.get(wamid="wamid.SURROGATE")
    company = Company.objects.get()
    assert response.status_code == 200
    assert message.payload["message"]["text"]["body"] == "Oi \ufffd tudo bem\ufffd?"
    assert company.name == "Padaria \ufffd"
    for page in (
        "/admin/processes/inboundmessage/",
        f"/admin/processes/inboundmessage/{message.pk}/change/",
        f"/admin/processes/company/{company.pk}/change/",
        "/admin/processes/webhookdelivery/",
        f"/admin/processes/webhookdelivery/{WebhookDelivery.objects.get().pk}/change/",
    ):
        assert admin_client.get(page).status_code == 200, page


def test_a_lone_surrogate_in_a_conversation_breaks_no_reviewer_panel(
    signed_post, in_review, client, ana
):
    from approvals.models import ApprovalRequest
    from tests.processes.conftest import PHONE

    signed_post(
        whatsapp_webhook(whatsapp_message("wamid.SURROGATE2", wa_id=PHONE, text="ok \ud800"))
    )
    client.force_login(ana)

    page = client.get(f"/approvals/{ApprovalRequest.objects.get(run_id=in_review.id).pk}/")

    assert page.status_code == 200
    assert "ok \ufffd" in page.content.decode()


def test_a_message_id_that_cannot_be_stored_verbatim_is_quarantined_not_rewritten(signed_post):
    response = signed_post(whatsapp_webhook(whatsapp_message("wamid.\ud800"), GOOD))

    assert response.status_code == 200
    assert list(InboundMessage.objects.values_list("wamid", flat=True)) == ["wamid.GOOD"]
    assert "cannot be stored" in QuarantinedItem.objects.get().reason


def test_a_quarantined_part_with_a_lone_surrogate_renders_in_the_admin(signed_post, admin_client):
    signed_post(whatsapp_webhook(whatsapp_message("wamid.\ud800", text="\ud800\u0000")))
    item = QuarantinedItem.objects.get()

    page = admin_client.get(f"/admin/processes/quarantineditem/{item.pk}/change/")

    assert page.status_code == 200
    assert "\\ud800" in page.content.decode()  # shown as its escape, stored as ASCII


def test_two_long_sender_ids_sharing_32_characters_are_two_companies(signed_post):
    first, second = "5" * 40 + "1", "5" * 40 + "2"

    signed_post(whatsapp_webhook(whatsapp_message("wamid.L1", wa_id=first)))
    signed_post(whatsapp_webhook(whatsapp_message("wamid.L2", wa_id=second)))

    assert set(Company.objects.values_list("wa_id", flat=True)) == {first, second}
    assert set(InboundMessage.objects.values_list("sender_wa_id", flat=True)) == {first, second}


def test_a_sender_id_longer_than_we_store_is_quarantined_not_cut(signed_post):
    response = signed_post(whatsapp_webhook(whatsapp_message("wamid.HUGE", wa_id="5" * 129), GOOD))

    assert response.status_code == 200
    assert list(InboundMessage.objects.values_list("wamid", flat=True)) == ["wamid.GOOD"]
    assert "longer than 128" in QuarantinedItem.objects.get().reason


def test_quarantined_items_are_in_the_needs_attention_view_until_handled(signed_post, admin_client):
    signed_post(whatsapp_webhook(GOOD, {"type": "text"}))
    item = QuarantinedItem.objects.get()
    work_list = "/admin/processes/quarantineditem/?attention=yes"

    before = admin_client.get(work_list).content.decode()
    admin_client.post(work_list, {"action": "mark_handled", "_selected_action": [item.pk]})
    after = admin_client.get(work_list).content.decode()

    assert "the message has no id" in before
    assert "the message has no id" not in after
    item.refresh_from_db()
    assert item.resolved_by == "operator" and item.resolved_at is not None


def test_the_bytes_of_a_delivery_are_kept_even_when_the_json_is_bad(api_client, settings):
    body = b'{"entry": ['

    response = api_client.post(
        WHATSAPP_URL,
        data=body,
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signing.sign(body, settings.WHATSAPP_APP_SECRET),
    )

    assert response.status_code == 400, response.content
    assert bytes(WebhookDelivery.objects.get().body) == body


def test_fields_longer_than_their_columns_cost_no_message_and_no_500(signed_post):
    message = whatsapp_message("wamid.WIDE", text="Oi")
    message["type"] = "t" * 400  # message_type holds 32
    delivery = whatsapp_webhook(
        message, statuses=[{"id": "wamid.UNKNOWN", "status": "s" * 400, "timestamp": "9" * 400}]
    )  # pending: 32 and 32
    value_of(delivery)["metadata"]["phone_number_id"] = "9" * 400  # holds 64

    response = signed_post(delivery)

    assert response.status_code == 200
    assert InboundMessage.objects.get().wamid == "wamid.WIDE"
    assert not QuarantinedItem.objects.exists()
