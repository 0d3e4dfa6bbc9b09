"""Every message type and status the Cloud API sends gets the answer docs/processes.md's table
says: a greeting for a new customer whatever they sent first, one "what we can read" for a
known one, nothing for a reaction or a notice, and a call's status kept as a call's."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from processes.onboarding.models import Company
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from processes.whatsapp.models import (
    InboundMessage,
    InboundStatus,
    OutboundMessage,
    OutboundStatus,
    PendingStatus,
)
from processes.whatsapp.selectors import inbound_needing_attention
from processes.whatsapp.services import message_send
from tests.processes.conftest import HELLO, PHONE, issued_invoice, whatsapp_webhook

pytestmark = pytest.mark.django_db

GREETING = "Olá! Para abrir a sua conta PJ, escreva o CNPJ da empresa"
WHAT_WE_READ = "só conseguimos ler textos, documentos em PDF e fotos"
OUR_MESSAGE = "wamid.HBgNNTUxMTk4ODg4Nzc3NxUCABEYEjQ2QzY5"


def sent(wamid: str, kind: str, content=None, **more) -> dict:
    """A message as the Cloud API delivers it: ``from``, ``id``, ``timestamp``, ``type`` and
    the type's own object (none for ``request_welcome``)."""
    message = {"from": PHONE, "id": wamid, "timestamp": "1767225600", "type": kind, **more}
    if content is not None:
        message[kind] = content
    return message


def replying_to(wamid: str) -> dict:
    return {"context": {"from": "551130000000", "id": wamid}}


UNREADABLE = {
    "voice note": lambda n: sent(
        f"wamid.AUDIO{n}",
        "audio",
        {
            "id": f"media-audio-{n}",
            "mime_type": "audio/ogg; codecs=opus",
            "sha256": "c2Vt",
            "voice": True,
        },
    ),
    "video": lambda n: sent(
        f"wamid.VIDEO{n}",
        "video",
        {"id": f"media-video-{n}", "mime_type": "video/mp4", "sha256": "c2Vt", "caption": "olha"},
    ),
    "sticker": lambda n: sent(
        f"wamid.STICKER{n}",
        "sticker",
        {
            "id": f"media-sticker-{n}",
            "mime_type": "image/webp",
            "sha256": "c2Vt",
            "animated": False,
        },
    ),
    "location": lambda n: sent(
        f"wamid.LOCATION{n}",
        "location",
        {
            "latitude": -23.5613,
            "longitude": -46.6565,
            "name": "Padaria Boa Massa",
            "address": "Av. Paulista, 1000",
        },
    ),
    "contact card": lambda n: sent(
        f"wamid.CONTACTS{n}",
        "contacts",
        [
            {
                "name": {"formatted_name": "João Contador", "first_name": "João"},
                "phones": [
                    {"phone": "+55 11 97777-0000", "wa_id": "5511977770000", "type": "CELL"}
                ],
            }
        ],
    ),
    "flow reply": lambda n: sent(
        f"wamid.FLOW{n}",
        "interactive",
        {
            "type": "nfm_reply",
            "nfm_reply": {"name": "flow", "body": "Sent", "response_json": '{"cnpj": "x"}'},
        },
        **replying_to(OUR_MESSAGE),
    ),
    "order": lambda n: sent(
        f"wamid.ORDER{n}",
        "order",
        {
            "catalog_id": "CATALOG",
            "text": "quero este",
            "product_items": [
                {
                    "product_retailer_id": "pj-basic",
                    "quantity": 1,
                    "item_price": 0,
                    "currency": "BRL",
                }
            ],
        },
    ),
    "unsupported": lambda n: sent(
        f"wamid.UNSUPPORTED{n}",
        "unsupported",
        errors=[
            {
                "code": 131051,
                "title": "Message type unknown",
                "message": "Message type unknown",
                "error_data": {"details": "Message type is currently not supported."},
            }
        ],
    ),
}
# Replies that choose an option: read (tests/processes/test_whatsapp_interactive.py), never
# "what we can read"; these name options onboarding never offered.
OPTION_REPLIES = {
    "button reply": lambda n: sent(
        f"wamid.BUTTONREPLY{n}",
        "interactive",
        {"type": "button_reply", "button_reply": {"id": "sim", "title": "Sim"}},
        **replying_to(OUR_MESSAGE),
    ),
    "list reply": lambda n: sent(
        f"wamid.LISTREPLY{n}",
        "interactive",
        {
            "type": "list_reply",
            "list_reply": {"id": "pj", "title": "Conta PJ", "description": "Abrir conta"},
        },
        **replying_to(OUR_MESSAGE),
    ),
    "template button": lambda n: sent(
        f"wamid.BUTTON{n}",
        "button",
        {"text": "Falar com atendente", "payload": "atendente"},
        **replying_to(OUR_MESSAGE),
    ),
}
CHAT_OPENED = sent("wamid.WELCOME1", "request_welcome")
REACTION = sent("wamid.REACTION1", "reaction", {"message_id": OUR_MESSAGE, "emoji": "\U0001f44d"})
NUMBER_CHANGED = sent(
    "wamid.SYSTEM1",
    "system",
    {
        "body": "Padaria changed from 5511988887777 to 5511966665555",
        "wa_id": "5511966665555",
        "type": "customer_changed_number",
    },
)


def greeting_of(company: Company) -> str:
    return OutboundMessage.objects.get(idempotency_key=f"{company.run_id}:greet").body


def what_we_read_replies():
    return OutboundMessage.objects.filter(idempotency_key__startswith="unreadable:")


@pytest.mark.parametrize(
    "first",
    [*UNREADABLE.values(), *OPTION_REPLIES.values(), lambda n: CHAT_OPENED, lambda n: REACTION],
    ids=[*UNREADABLE, *OPTION_REPLIES, "chat opened", "reaction"],
)
def test_a_new_customer_is_greeted_whatever_their_first_message_is(customer, first):
    customer(first(1))

    company = Company.objects.get(wa_id=PHONE)
    assert greeting_of(company).startswith(GREETING)
    assert InboundMessage.objects.get().company == company
    assert not what_we_read_replies().exists()  # the greeting already says what to send


@pytest.mark.parametrize("unreadable", UNREADABLE.values(), ids=UNREADABLE)
def test_a_known_customer_sending_a_type_we_cannot_read_hears_once_what_we_can_read(
    customer, unreadable
):
    customer(HELLO)

    customer(unreadable(1))
    customer(unreadable(2))

    reply = what_we_read_replies().get()
    assert WHAT_WE_READ in reply.body and reply.company == Company.objects.get()
    assert InboundMessage.objects.get(wamid=unreadable(1)["id"]).status == InboundStatus.UNSUPPORTED


@pytest.mark.parametrize("reply", OPTION_REPLIES.values(), ids=OPTION_REPLIES)
def test_a_known_customer_choosing_an_option_we_never_offered_changes_nothing_and_hears_nothing(
    customer, reply
):
    customer(HELLO)
    before = OutboundMessage.objects.count()

    customer(reply(1))

    stored = InboundMessage.objects.get(wamid=reply(1)["id"])
    assert stored.status == InboundStatus.KEPT and "nothing changed" in stored.note
    assert OutboundMessage.objects.count() == before and not what_we_read_replies().exists()


def test_one_what_we_can_read_answers_a_voice_note_a_location_and_a_sticker_together(customer):
    customer(HELLO)

    customer(UNREADABLE["voice note"](1), UNREADABLE["location"](1))
    customer(UNREADABLE["sticker"](1))

    assert what_we_read_replies().count() == 1


def test_a_voice_note_delivered_again_in_another_batch_is_answered_once(customer, signed_post):
    customer(HELLO)
    voice = UNREADABLE["voice note"](1)

    customer(voice)
    signed_post(whatsapp_webhook(voice, sent("wamid.T2", "text", {"body": "alô?"})))

    assert what_we_read_replies().count() == 1
    assert InboundMessage.objects.filter(wamid=voice["id"]).count() == 1


def test_opening_the_chat_twice_is_one_greeting_and_no_what_we_can_read(customer):
    customer(CHAT_OPENED)

    customer(sent("wamid.WELCOME2", "request_welcome"))

    company = Company.objects.get()
    assert OutboundMessage.objects.filter(company=company).count() == 1
    assert greeting_of(company).startswith(GREETING)
    assert InboundMessage.objects.get(wamid="wamid.WELCOME2").status == InboundStatus.KEPT


def test_a_reaction_from_a_customer_is_kept_and_not_answered(customer):
    customer(HELLO)

    customer(REACTION)

    assert not what_we_read_replies().exists()
    assert InboundMessage.objects.get(wamid="wamid.REACTION1").status == InboundStatus.KEPT


def test_a_number_change_notice_starts_nothing_and_waits_for_an_operator(signed_post):
    signed_post(whatsapp_webhook(NUMBER_CHANGED))

    notice = InboundMessage.objects.get()
    assert not Company.objects.exists() and not OutboundMessage.objects.exists()
    assert notice in inbound_needing_attention()


def test_a_billing_customer_with_no_onboarding_hears_once_what_we_can_read_and_starts_nothing(
    signed_post, clock
):
    issued_invoice("NF-7001", clock.now() + timedelta(days=5), wa_id=PHONE)

    signed_post(whatsapp_webhook(UNREADABLE["voice note"](1)))
    signed_post(whatsapp_webhook(UNREADABLE["sticker"](2)))

    assert what_we_read_replies().get().idempotency_key == f"unreadable:{PHONE}"
    assert not Company.objects.exists()


def test_a_new_sender_over_the_hourly_cap_is_held_whatever_they_sent(signed_post, settings):
    settings.ONBOARDING_NEW_SENDERS_PER_HOUR = 0

    signed_post(whatsapp_webhook(UNREADABLE["voice note"](1)))

    held = InboundMessage.objects.get()
    assert (held.status, held.company) == (InboundStatus.RECEIVED, None)
    assert held.note.startswith("held:") and not Company.objects.exists()


def test_errors_whatsapp_reports_for_a_change_wait_for_an_operator_beside_its_messages(signed_post):
    delivery = whatsapp_webhook(HELLO)
    delivery["entry"][0]["changes"][0]["value"]["errors"] = [
        {
            "code": 131000,
            "title": "Something went wrong",
            "message": "Something went wrong",
            "error_data": {"details": "Message failed to send because of an unknown error."},
        }
    ]

    signed_post(delivery)

    item = QuarantinedItem.objects.get()
    assert (item.where, item.reason, item.resolved_at) == (
        "entry[0].changes[0].value.errors",
        "WhatsApp reports errors",
        None,
    )
    assert "131000" in item.fragment and InboundMessage.objects.get().status == InboundStatus.KEPT


# --- calls: their statuses arrive among the statuses of messages ---


def call_status(
    state: str, *, call_id: str = "wacid.HBgNNTUxMTk4ODg4Nzc3NxUCABEYEjE", **more
) -> dict:
    return {
        "id": call_id,
        "timestamp": "1767225700",
        "type": "call",
        "status": state,
        "recipient_id": PHONE,
        **more,
    }


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("operator", password="pw-unused-123"))
    return client


def test_a_calls_statuses_are_kept_as_call_statuses_not_as_statuses_waiting_for_a_message(
    signed_post,
):
    states = [call_status("RINGING"), call_status("ACCEPTED"), call_status("REJECTED")]

    signed_post(whatsapp_webhook(statuses=states))

    kept = QuarantinedItem.objects.order_by("where")
    assert not PendingStatus.objects.exists()
    assert [item.reason.split(":")[0] for item in kept] == [
        "call status RINGING",
        "call status ACCEPTED",
        "call status REJECTED",
    ]
    assert all("wacid.HBgNNTUxMTk4ODg4Nzc3NxUCABEYEjE" in item.fragment for item in kept)
    assert "3 call status(es), kept" in WebhookDelivery.objects.get().outcome


def test_a_call_status_is_on_the_operators_list_of_items_but_not_their_work_list(
    signed_post, operator
):
    signed_post(whatsapp_webhook(statuses=[call_status("RINGING")]))

    changelist = reverse("admin:processes_quarantineditem_changelist")
    assert "call status RINGING" in operator.get(changelist).content.decode()
    assert (
        "call status RINGING" not in operator.get(changelist, {"attention": "yes"}).content.decode()
    )


def test_a_call_status_naming_one_of_our_messages_never_changes_it(signed_post, clock):
    ours = message_send(idempotency_key="test:call", body="Olá", to_wa_id=PHONE)

    signed_post(
        whatsapp_webhook(statuses=[call_status("failed", call_id=ours.provider_message_id)])
    )

    ours.refresh_from_db()
    assert (ours.status, ours.status_history) == (OutboundStatus.SENT, [])
    assert not PendingStatus.objects.exists()


@pytest.mark.parametrize(
    "status",
    [
        {"id": "wacid.HBgNNTUxMTk4", "status": "delivered"},  # a call's id, a message's word
        {"id": "CALL-2", "status": "RINGING"},  # only a call rings
    ],
    ids=["call-id", "call-state"],
)
def test_a_status_without_its_type_is_a_calls_by_its_id_or_its_state(signed_post, status):
    signed_post(whatsapp_webhook(statuses=[{**status, "timestamp": "1767225700"}]))

    assert QuarantinedItem.objects.get().reason.startswith(f"call status {status['status']}")
    assert not PendingStatus.objects.exists()


def test_a_status_carrying_call_fields_is_a_calls_even_without_its_type(signed_post):
    signed_post(
        whatsapp_webhook(
            statuses=[
                {
                    "id": "CALL-1",
                    "status": "completed",
                    "timestamp": "1767225700",
                    "call": {"direction": "BUSINESS_INITIATED"},
                }
            ]
        )
    )

    assert QuarantinedItem.objects.get().reason.startswith("call status completed")
    assert not PendingStatus.objects.exists()


def test_message_statuses_beside_a_call_status_still_move_our_message(signed_post, clock):
    ours = message_send(idempotency_key="test:beside", body="Olá", to_wa_id=PHONE)
    delivered = {
        "id": ours.provider_message_id,
        "status": "delivered",
        "timestamp": "1767225650",
        "recipient_id": PHONE,
    }

    signed_post(whatsapp_webhook(statuses=[call_status("RINGING"), delivered]))

    ours.refresh_from_db()
    assert ours.status == OutboundStatus.DELIVERED
    assert QuarantinedItem.objects.count() == 1
