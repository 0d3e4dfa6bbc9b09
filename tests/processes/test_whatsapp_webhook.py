"""The WhatsApp webhook: signatures, storage first, redeliveries, senders, statuses."""

import json
from datetime import timedelta

import pytest

from durable.models import Signal, WorkflowRun
from processes import signing
from processes.onboarding.models import Company, Document
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from processes.whatsapp.models import InboundMessage, InboundStatus, OutboundMessage, OutboundStatus
from processes.whatsapp.services import message_send
from tests.processes.conftest import WHATSAPP_URL, document, whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db

CONTRACT = document("wamid.CONTRACT", "contrato social", filename="contrato.pdf")


def test_the_verification_handshake_echoes_the_challenge(api_client, settings):
    response = api_client.get(
        WHATSAPP_URL,
        {
            "hub.mode": "subscribe",
            "hub.challenge": "1158201444",
            "hub.verify_token": settings.WHATSAPP_VERIFY_TOKEN,
        },
    )

    assert response.status_code == 200
    assert response.content == b"1158201444"


def test_the_verification_handshake_refuses_a_wrong_token(api_client):
    response = api_client.get(
        WHATSAPP_URL, {"hub.mode": "subscribe", "hub.challenge": "1", "hub.verify_token": "guess"}
    )

    assert response.status_code == 403


def test_a_bad_signature_is_403_and_stores_nothing(signed_post):
    response = signed_post(whatsapp_webhook(CONTRACT), secret="not-the-app-secret")

    assert response.status_code == 403
    assert not InboundMessage.objects.exists()
    assert not Company.objects.exists()
    assert not WorkflowRun.objects.exists()


def test_a_missing_signature_is_403_and_stores_nothing(api_client):
    response = api_client.post(
        WHATSAPP_URL, data=json.dumps(whatsapp_webhook(CONTRACT)), content_type="application/json"
    )

    assert response.status_code == 403
    assert not InboundMessage.objects.exists()


def test_a_signature_of_another_body_is_403(api_client, settings):
    body = json.dumps(whatsapp_webhook(CONTRACT)).encode()
    signature = signing.sign(body + b" ", settings.WHATSAPP_APP_SECRET)

    response = api_client.post(
        WHATSAPP_URL, data=body, content_type="application/json", HTTP_X_HUB_SIGNATURE_256=signature
    )

    assert response.status_code == 403


def test_malformed_json_is_400_with_a_clear_message(signed_post):
    response = signed_post(b'{"entry": [')

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]


def test_a_message_without_an_id_is_quarantined_and_the_delivery_is_200(signed_post):
    response = signed_post({"entry": [{"changes": [{"value": {"messages": [{"type": "text"}]}}]}]})

    assert response.status_code == 200
    assert QuarantinedItem.objects.get().reason == "the message has no id"
    assert not InboundMessage.objects.exists()


def test_a_first_document_from_an_unknown_sender_starts_onboarding_with_the_signal(signed_post):
    response = signed_post(whatsapp_webhook(CONTRACT))

    assert response.status_code == 200
    company = Company.objects.get(wa_id="5511999990001")
    run = WorkflowRun.objects.get(pk=company.run_id)
    assert run.workflow_name == "onboarding"
    assert list(run.signals.values_list("name", "dedupe_key")) == [
        ("documents_received", "wamid.CONTRACT")
    ]
    assert company.name == "Padaria Boa Massa"
    assert Document.objects.get(company=company).kind == "articles_of_association"
    assert InboundMessage.objects.get().status == InboundStatus.PROCESSED


def test_a_redelivered_message_is_one_signal(signed_post):
    signed_post(whatsapp_webhook(CONTRACT))
    response = signed_post(whatsapp_webhook(CONTRACT))  # the provider retries

    assert response.status_code == 200
    assert WebhookDelivery.objects.get().times_received == 2
    assert Signal.objects.filter(name="documents_received").count() == 1
    assert InboundMessage.objects.count() == 1


def test_a_batched_payload_stores_every_message_of_every_entry(signed_post):
    first = whatsapp_webhook(document("wamid.A", "contrato social"))
    second = whatsapp_webhook(
        document("wamid.B", "comprovante de endereço", wa_id="5511999990002"),
        whatsapp_message("wamid.C", wa_id="5511999990002"),
    )
    first["entry"].extend(second["entry"])

    response = signed_post(first)

    assert response.json() == {"delivery": WebhookDelivery.objects.get().pk}
    assert InboundMessage.objects.count() == 3
    assert Company.objects.count() == 2
    assert Signal.objects.filter(name="documents_received").count() == 2


def test_a_sender_without_a_phone_is_known_by_business_scoped_user_id(signed_post):
    signed_post(
        whatsapp_webhook(whatsapp_message("wamid.T1", wa_id="5511999990003", user_id="BR.123"))
    )

    signed_post(
        whatsapp_webhook(
            document("wamid.D1", "selfie", type="image", wa_id=None, user_id="BR.123"),
            contacts=[{"user_id": "BR.123", "profile": {"name": "X"}}],
        )
    )

    company = Company.objects.get()
    assert (company.wa_id, company.user_id) == ("5511999990003", "BR.123")
    assert company.documents.get().kind == "selfie"


def test_a_message_whose_one_contact_is_someone_else_is_never_attached_to_that_contacts_company(
    signed_post,
):
    other = Company.objects.create(wa_id="5511977770000", user_id="BR.OTHER")
    shared_card = {
        "wa_id": "5511977770000",
        "user_id": "BR.OTHER",
        "profile": {"name": "Outra Empresa"},
    }

    signed_post(
        whatsapp_webhook(
            whatsapp_message("wamid.T1", wa_id="5511999990001"), contacts=[shared_card]
        )
    )

    message = InboundMessage.objects.get()
    assert (message.sender_wa_id, message.sender_user_id) == ("5511999990001", "")
    assert message.company != other and message.company.wa_id == "5511999990001"
    assert other.inbound_messages.count() == 0


def test_a_senders_user_id_comes_from_the_contact_whose_wa_id_is_the_sender(signed_post):
    contacts = [
        {"wa_id": "5511977770000", "user_id": "BR.OTHER", "profile": {"name": "Outra"}},
        {"wa_id": "5511999990001", "user_id": "BR.SENDER", "profile": {"name": "Padaria"}},
    ]

    signed_post(
        whatsapp_webhook(whatsapp_message("wamid.T1", wa_id="5511999990001"), contacts=contacts)
    )

    company = Company.objects.get()
    assert (company.wa_id, company.user_id, company.name) == (
        "5511999990001",
        "BR.SENDER",
        "Padaria",
    )


def test_a_message_that_names_no_sender_takes_no_identity_from_a_lone_contact(signed_post):
    Company.objects.create(wa_id="5511977770000", user_id="BR.OTHER")
    nameless = whatsapp_message("wamid.T1", wa_id=None)

    signed_post(
        whatsapp_webhook(nameless, contacts=[{"wa_id": "5511977770000", "user_id": "BR.OTHER"}])
    )

    message = InboundMessage.objects.get()
    assert (message.status, message.company) == (InboundStatus.UNMATCHED, None)


def test_an_unsupported_message_is_kept_and_visible_to_operators_and_its_new_sender_greeted(
    signed_post,
):
    signed_post(whatsapp_webhook(whatsapp_message("wamid.S", type="sticker", id="m1")))

    message = InboundMessage.objects.get(wamid="wamid.S")
    assert message.status == InboundStatus.UNSUPPORTED
    assert "'sticker'" in message.note
    assert WorkflowRun.objects.get().pk == message.company.run_id  # its first step is the greeting


def test_a_document_after_the_onboarding_ended_is_kept_unmatched(signed_post):
    signed_post(whatsapp_webhook(CONTRACT))
    from durable import services

    services.run_cancel(Company.objects.get().run_id, reason="customer withdrew", actor="test")

    signed_post(whatsapp_webhook(document("wamid.LATE", "comprovante")))

    late = InboundMessage.objects.get(wamid="wamid.LATE")
    assert late.status == InboundStatus.UNMATCHED
    assert "cancelled" in late.note


def test_statuses_move_an_outbound_message_forward_only(signed_post, clock):
    company = Company.objects.create(wa_id="5511999990009")
    sent = message_send(company=company, body="Olá", idempotency_key="k1")

    def status(name, ts):
        return {
            "id": sent.provider_message_id,
            "status": name,
            "timestamp": ts,
            "recipient_id": company.wa_id,
        }

    signed_post(whatsapp_webhook(statuses=[status("read", "3"), status("delivered", "2")]))

    sent.refresh_from_db()
    assert sent.status == OutboundStatus.READ
    assert [event["status"] for event in sent.status_history] == ["read", "delivered"]


def test_a_message_sent_twice_with_one_key_is_one_message(clock):
    company = Company.objects.create(wa_id="5511999990010")

    message_send(company=company, body="Olá", idempotency_key="same")
    message_send(company=company, body="Olá", idempotency_key="same")

    assert OutboundMessage.objects.filter(idempotency_key="same").count() == 1


def test_a_message_whose_routing_was_lost_is_routed_by_the_sweep(clock):
    from processes.whatsapp.services import inbound_route_stale, webhook_receive

    webhook_receive(whatsapp_webhook(whatsapp_message("wamid.LOST")))  # its on-commit never ran
    message = InboundMessage.objects.get(wamid="wamid.LOST")
    assert message.status == InboundStatus.RECEIVED
    assert inbound_route_stale() == 0  # not yet: the web process may still be routing it

    clock.advance(timedelta(minutes=2))
    routed = inbound_route_stale()

    message.refresh_from_db()
    assert routed == 1
    assert message.status != InboundStatus.RECEIVED and message.company is not None
    assert WorkflowRun.objects.filter(pk=message.company.run_id).exists()
