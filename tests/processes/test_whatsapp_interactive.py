"""Reply buttons and lists both ways: a withdrawal confirmed with a tap, a file's kind chosen
from a list, the missing documents offered as one, the provider's limits checked before a
send, and text with numbered options where the customer's client cannot show them."""

import json

import pytest

from approvals.models import ApprovalRequest
from durable.models import RunStatus
from processes.onboarding.models import Company, CompanyStatus, Document, DocumentKind
from processes.onboarding.options import kind_question as kind_options
from processes.onboarding.services import CONTINUE_TEXT
from processes.whatsapp.backends import ListRow, OptionList, ReplyButton
from processes.whatsapp.models import InboundMessage, InboundStatus, OutboundMessage, OutboundStatus
from processes.whatsapp.selectors import conversation_for
from processes.whatsapp.services import message_send
from tests.processes.conftest import (
    ADDRESS,
    CONTRACT,
    HELLO,
    PHONE,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)

pytestmark = pytest.mark.django_db

MESSAGES = "/v21.0/PHONE-ID/messages"
MAY_WITHDRAW = whatsapp_message("wamid.MAYBE", wa_id=PHONE, text="desisto, quero cancelar")
UNNAMED = document("wamid.SCAN", "", filename="scan.pdf", wa_id=PHONE)


def tap(
    wamid: str,
    option_id: str,
    title: str,
    *,
    question: OutboundMessage | None = None,
    list_reply: bool = False,
) -> dict:
    """A button or list reply as the Cloud API delivers it, answering ``question``."""
    kind = "list_reply" if list_reply else "button_reply"
    message = {
        "from": PHONE,
        "id": wamid,
        "timestamp": "1767225700",
        "type": "interactive",
        "interactive": {"type": kind, kind: {"id": option_id, "title": title}},
    }
    if question is not None:
        message["context"] = {"from": "551130000000", "id": question.provider_message_id}
    return message


def says(wamid: str, text: str) -> dict:
    return whatsapp_message(wamid, wa_id=PHONE, text=text)


def withdrawal_question() -> OutboundMessage:
    return OutboundMessage.objects.get(idempotency_key="confirm-withdrawal:wamid.MAYBE")


def goodbyes(company: Company):
    return OutboundMessage.objects.filter(idempotency_key=f"{company.run_id}:bye")


@pytest.fixture
def asked_to_confirm(customer):
    """A customer with an application who wrote "desisto, quero cancelar"."""
    customer(HELLO)
    customer(MAY_WITHDRAW)
    return withdrawal_question()


# --- a withdrawal confirmed with a tap ---


def test_a_sentence_that_may_mean_a_withdrawal_is_answered_with_confirm_and_continue_buttons(
    customer, cloud_api
):
    customer(HELLO)

    customer(MAY_WITHDRAW)

    question = next(
        body for body in cloud_api.json_bodies("POST", MESSAGES) if body["type"] == "interactive"
    )
    assert question["interactive"]["type"] == "button"
    assert question["interactive"]["body"]["text"].startswith(
        "Quer cancelar o seu pedido de conta PJ?"
    )
    assert question["interactive"]["action"]["buttons"] == [
        {"type": "reply", "reply": {"id": "withdraw:confirm", "title": "Confirmar"}},
        {"type": "reply", "reply": {"id": "withdraw:continue", "title": "Continuar"}},
    ]


def test_the_confirm_button_withdraws_gracefully_with_one_goodbye(customer, asked_to_confirm):
    run = customer(tap("wamid.TAP1", "withdraw:confirm", "Confirmar", question=asked_to_confirm))

    company = Company.objects.get()
    assert run.status == RunStatus.CANCELLED
    assert company.status == CompanyStatus.WITHDRAWN
    assert goodbyes(company).count() == 1
    assert InboundMessage.objects.get(wamid="wamid.TAP1").status == InboundStatus.PROCESSED


def test_the_continue_button_cancels_nothing_and_says_the_application_goes_on(
    customer, asked_to_confirm
):
    run = customer(tap("wamid.TAP1", "withdraw:continue", "Continuar", question=asked_to_confirm))

    company = Company.objects.get()
    assert run.status == RunStatus.WAITING and company.status == CompanyStatus.COLLECTING
    assert not goodbyes(company).exists()
    assert OutboundMessage.objects.get(idempotency_key="option:wamid.TAP1").body == CONTINUE_TEXT


def test_a_redelivered_confirm_acts_once(customer, signed_post, asked_to_confirm):
    confirm = tap("wamid.TAP1", "withdraw:confirm", "Confirmar", question=asked_to_confirm)

    customer(confirm)
    customer(confirm)  # the provider retries

    assert InboundMessage.objects.filter(wamid="wamid.TAP1").count() == 1
    assert goodbyes(Company.objects.get()).count() == 1


def test_a_second_tap_on_an_answered_question_changes_nothing(customer, asked_to_confirm):
    customer(tap("wamid.TAP1", "withdraw:continue", "Continuar", question=asked_to_confirm))

    run = customer(tap("wamid.TAP2", "withdraw:confirm", "Confirmar", question=asked_to_confirm))

    assert (
        run.status == RunStatus.WAITING and Company.objects.get().status == CompanyStatus.COLLECTING
    )
    assert (
        "already answered; nothing changed" in InboundMessage.objects.get(wamid="wamid.TAP2").note
    )


def test_a_confirm_left_from_an_ended_application_does_not_cancel_the_new_one(
    customer, asked_to_confirm
):
    customer(says("wamid.CANCEL", "cancelar"))
    customer(says("wamid.AGAIN", "Oi, quero abrir a conta de novo"))
    company = Company.objects.get()
    assert company.application == 2

    run = customer(tap("wamid.LATE", "withdraw:confirm", "Confirmar", question=asked_to_confirm))

    assert (
        run.status == RunStatus.WAITING and Company.objects.get().status == CompanyStatus.COLLECTING
    )
    assert (
        "earlier application; nothing changed"
        in InboundMessage.objects.get(wamid="wamid.LATE").note
    )


@pytest.mark.parametrize("typed", ["1", "Confirmar", " confirmar! "])
def test_the_number_or_title_typed_answers_the_open_question(customer, asked_to_confirm, typed):
    run = customer(says("wamid.TYPED", typed))

    assert run.status == RunStatus.CANCELLED
    assert Company.objects.get().status == CompanyStatus.WITHDRAWN


def test_a_number_typed_with_no_open_question_is_only_text(customer):
    customer(HELLO)

    run = customer(says("wamid.TYPED", "1"))

    assert run.status == RunStatus.WAITING
    assert InboundMessage.objects.get(wamid="wamid.TYPED").note.startswith("text message")


def test_a_withdrawal_button_with_no_question_of_ours_changes_nothing(customer):
    customer(HELLO)

    run = customer(tap("wamid.FORGED", "withdraw:confirm", "Confirmar"))

    assert run.status == RunStatus.WAITING
    assert "answers no question of ours" in InboundMessage.objects.get(wamid="wamid.FORGED").note


# --- which document is this? ---


def kind_question(document_: Document) -> OutboundMessage:
    return OutboundMessage.objects.get(idempotency_key=f"document-kind:{document_.pk}")


def test_a_file_of_unknown_kind_gets_the_list_of_required_kinds_once(
    customer, signed_post, cloud_api
):
    customer(HELLO)

    customer(UNNAMED)
    signed_post(whatsapp_webhook(UNNAMED))  # redelivered

    scan = Document.objects.get(file_name="scan.pdf")
    lists = [
        body
        for body in cloud_api.json_bodies("POST", MESSAGES)
        if body["type"] == "interactive" and body["interactive"]["type"] == "list"
    ]
    assert len(lists) == 1
    assert lists[0]["interactive"]["body"]["text"] == "Qual documento é o arquivo scan.pdf?"
    assert [
        (row["id"], row["title"])
        for row in lists[0]["interactive"]["action"]["sections"][0]["rows"]
    ] == [
        (f"kind:{scan.pk}:articles_of_association", "Contrato social"),
        (f"kind:{scan.pk}:proof_of_address", "Comprovante de endereço"),
        (f"kind:{scan.pk}:selfie", "Selfie do responsável"),
    ]


def test_choosing_the_kind_from_the_list_counts_the_file_and_the_run_stops_asking(customer):
    customer(HELLO)
    customer(CONTRACT, SELFIE, UNNAMED)
    scan = Document.objects.get(file_name="scan.pdf")
    company = Company.objects.get()
    assert company.status == CompanyStatus.COLLECTING  # asked for the proof of address

    customer(
        tap(
            "wamid.KIND",
            f"kind:{scan.pk}:proof_of_address",
            "Comprovante de endereço",
            question=kind_question(scan),
            list_reply=True,
        )
    )

    scan.refresh_from_db()
    company.refresh_from_db()
    assert scan.kind == DocumentKind.ADDRESS
    assert company.status == CompanyStatus.IN_REVIEW
    assert OutboundMessage.objects.filter(idempotency_key__endswith=":under-review:1").exists()


def test_a_kind_chosen_during_the_review_is_recorded_and_told_to_the_reviewer(in_review, customer):
    scan = Document.objects.create(
        company=Company.objects.get(),
        media_id="SCAN",
        file_name="scan.pdf",
        message_id="wamid.SCAN-OLD",
        kind=DocumentKind.UNKNOWN,
    )
    body, choices = kind_options(scan)
    question = message_send(
        company=scan.company, body=body, idempotency_key="kind:q", list_=choices
    )

    customer(
        tap(
            "wamid.KIND",
            f"kind:{scan.pk}:proof_of_address",
            "Comprovante de endereço",
            question=question,
            list_reply=True,
        )
    )

    scan.refresh_from_db()
    assert scan.changes[-1]["change"] == "chosen" and scan.changes[-1]["to"] == DocumentKind.ADDRESS
    case = ApprovalRequest.objects.get(run_id=in_review.id, status="pending")
    assert case.summary["findings"][-1]["code"] == "document_relabelled"


def test_a_kind_chosen_for_a_deleted_document_changes_nothing(customer):
    customer(HELLO)
    customer(UNNAMED)
    scan = Document.objects.get(file_name="scan.pdf")
    Document.objects.filter(pk=scan.pk).update(withdrawn_at=Company.objects.get().created_at)

    customer(
        tap(
            "wamid.KIND",
            f"kind:{scan.pk}:proof_of_address",
            "Comprovante de endereço",
            question=kind_question(scan),
            list_reply=True,
        )
    )

    scan.refresh_from_db()
    assert (
        scan.kind == DocumentKind.UNKNOWN
        and "deleted" in InboundMessage.objects.get(wamid="wamid.KIND").note
    )


def test_a_number_typed_when_two_different_questions_are_open_answers_neither(customer):
    customer(HELLO)
    customer(CONTRACT)  # the ask offers the missing documents as a list
    customer(UNNAMED)  # and a file of unknown kind gets "Qual documento é este?"
    scan = Document.objects.get(file_name="scan.pdf")

    customer(says("wamid.TYPED", "1"))

    scan.refresh_from_db()
    assert scan.kind == DocumentKind.UNKNOWN
    assert not OutboundMessage.objects.filter(idempotency_key="option:wamid.TYPED").exists()


def test_a_number_typed_as_a_reply_to_one_question_answers_that_one(customer):
    customer(HELLO)
    customer(CONTRACT)
    customer(UNNAMED)
    scan = Document.objects.get(file_name="scan.pdf")
    typed = {
        **says("wamid.TYPED", "2"),
        "context": {"from": "551130000000", "id": kind_question(scan).provider_message_id},
    }

    customer(typed)

    scan.refresh_from_db()
    assert scan.kind == DocumentKind.ADDRESS


def test_a_forged_kind_naming_another_companys_document_changes_nothing(customer):
    other = Company.objects.create(wa_id="5511900000000")
    theirs = Document.objects.create(company=other, media_id="THEIRS", kind=DocumentKind.SELFIE)
    customer(HELLO)
    customer(UNNAMED)
    ours = Document.objects.get(file_name="scan.pdf")

    customer(
        tap(
            "wamid.FORGED1",
            f"kind:{theirs.pk}:proof_of_address",
            "Comprovante de endereço",
            question=kind_question(ours),
            list_reply=True,
        )
    )
    customer(
        tap(
            "wamid.FORGED2",
            f"kind:{theirs.pk}:proof_of_address",
            "Comprovante de endereço",
            list_reply=True,
        )
    )
    customer(
        {
            "from": PHONE,
            "id": "wamid.FORGED3",
            "timestamp": "1767225700",
            "type": "button",
            "button": {"payload": f"kind:{theirs.pk}:proof_of_address", "text": "Comprovante"},
        }
    )

    theirs.refresh_from_db()
    assert theirs.kind == DocumentKind.SELFIE
    assert kind_question(ours).answered_at is None
    assert all(
        "nothing changed" in note
        for note in InboundMessage.objects.filter(wamid__startswith="wamid.FORGED").values_list(
            "note", flat=True
        )
    )


# --- the missing documents as a list ---


def test_the_ask_for_several_missing_documents_offers_them_as_a_list(customer):
    customer(HELLO)

    customer(CONTRACT)

    ask = OutboundMessage.objects.get(idempotency_key__endswith=":ask:1")
    assert ask.body == "Ainda falta: comprovante de endereço, selfie do responsável."
    assert [item["id"] for item in ask.options["items"]] == [
        "missing:proof_of_address",
        "missing:selfie",
    ]


def test_choosing_a_missing_document_says_how_to_send_it(customer):
    customer(HELLO)
    customer(CONTRACT)
    ask = OutboundMessage.objects.get(idempotency_key__endswith=":ask:1")

    customer(
        tap(
            "wamid.MISSING",
            "missing:selfie",
            "Selfie do responsável",
            question=ask,
            list_reply=True,
        )
    )

    answer = OutboundMessage.objects.get(idempotency_key="option:wamid.MISSING").body
    assert answer == "Envie por aqui: selfie do responsável. Escreva na legenda qual documento é."


def test_the_ask_for_one_missing_document_has_no_list(customer):
    customer(HELLO)

    customer(CONTRACT, ADDRESS)

    assert OutboundMessage.objects.get(idempotency_key__endswith=":ask:1").options == {}


# --- the provider's limits and the fallback to text ---


@pytest.fixture
def recent_customer(signed_post):
    """A number that wrote a minute ago: inside the 24-hour window."""
    signed_post(whatsapp_webhook(HELLO))
    return Company.objects.get()


def test_the_cloud_api_gets_a_list_within_its_limits(cloud_api, recent_customer):
    rows = tuple(
        ListRow(id=f"row:{n}", title=f"Opção {n}", description="x" * 72) for n in range(10)
    )

    message_send(
        company=recent_customer,
        body="Escolha",
        idempotency_key="test:list",
        list_=OptionList(button="Ver opções", rows=rows),
    )

    sent = cloud_api.json_bodies("POST", MESSAGES)[-1]["interactive"]
    assert sent["type"] == "list" and sent["action"]["button"] == "Ver opções"
    assert len(sent["action"]["sections"][0]["rows"]) == 10


@pytest.mark.parametrize(
    "options",
    [
        {"buttons": (ReplyButton("a", "Uma opção longa demais!"),)},
        {"buttons": tuple(ReplyButton(str(n), f"Opção {n}") for n in range(4))},
        {
            "list_": OptionList(
                button="Ver", rows=(ListRow("a", "Um título longo demais p/ lista"),)
            )
        },
        {
            "list_": OptionList(
                button="Ver", rows=tuple(ListRow(str(n), f"Opção {n}") for n in range(11))
            )
        },
    ],
    ids=["button-title", "four-buttons", "row-title", "eleven-rows"],
)
def test_options_beyond_the_limits_raise_before_anything_is_sent(
    cloud_api, recent_customer, options
):
    before = len(cloud_api.requests)

    with pytest.raises(ValueError):
        message_send(
            company=recent_customer, body="Escolha", idempotency_key="test:too-long", **options
        )

    assert len(cloud_api.requests) == before
    assert not OutboundMessage.objects.filter(idempotency_key="test:too-long").exists()


def test_outside_the_window_the_options_go_numbered_in_the_template(cloud_api):
    company = Company.objects.create(wa_id="5511977776666")

    message_send(
        company=company,
        body="Quer continuar?",
        idempotency_key="test:template",
        buttons=(ReplyButton("y", "Sim"), ReplyButton("n", "Não")),
    )

    sent = cloud_api.json_bodies("POST", MESSAGES)[-1]
    assert sent["type"] == "template"
    assert (
        sent["template"]["components"][0]["parameters"][0]["text"]
        == "Quer continuar? 1. Sim; 2. Não."
    )


UNSUPPORTED = {
    "error": {
        "message": "(#131051) Unsupported message type",
        "type": "OAuthException",
        "code": 131051,
        "fbtrace_id": "A1",
    }
}


def test_a_client_that_cannot_show_buttons_gets_the_same_question_as_numbered_text(
    cloud_api, recent_customer
):
    answers = iter(
        [
            (400, json.dumps(UNSUPPORTED).encode(), "application/json"),
            (200, b'{"messages": [{"id": "wamid.TEXT1"}]}', "application/json"),
        ]
    )
    cloud_api.routes[("POST", MESSAGES)] = lambda: next(answers)

    sent = message_send(
        company=recent_customer,
        body="Quer cancelar?",
        idempotency_key="test:fallback",
        buttons=(
            ReplyButton("withdraw:confirm", "Confirmar"),
            ReplyButton("withdraw:continue", "Continuar"),
        ),
    )

    first, second = cloud_api.json_bodies("POST", MESSAGES)[-2:]
    assert first["type"] == "interactive"
    assert second["type"] == "text"
    assert second["text"]["body"] == "Quer cancelar?\n\n1. Confirmar\n2. Continuar"
    assert (sent.status, sent.as_text, sent.provider_message_id) == (
        OutboundStatus.SENT,
        True,
        "wamid.TEXT1",
    )


def failed(provider_id: str, timestamp: str) -> dict:
    return {
        "id": provider_id,
        "status": "failed",
        "timestamp": timestamp,
        "recipient_id": PHONE,
        "errors": [{"code": 131051, "title": "Unsupported message type"}],
    }


def test_a_failed_status_for_an_interactive_resends_it_as_text_once(
    cloud_api, signed_post, asked_to_confirm
):
    provider_id = asked_to_confirm.provider_message_id

    signed_post(whatsapp_webhook(statuses=[failed(provider_id, "1767225800")]))
    signed_post(whatsapp_webhook(statuses=[failed(provider_id, "1767225801")]))  # reported again

    resent = OutboundMessage.objects.get(idempotency_key="confirm-withdrawal:wamid.MAYBE:as-text")
    texts = [
        body
        for body in cloud_api.json_bodies("POST", MESSAGES)
        if body["type"] == "text" and body["text"]["body"].startswith("Quer cancelar")
    ]
    assert resent.as_text and len(texts) == 1
    assert texts[0]["text"]["body"].endswith("\n\n1. Confirmar\n2. Continuar")


def test_a_number_typed_after_the_text_fallback_answers_it(
    customer, cloud_api, signed_post, asked_to_confirm
):
    signed_post(
        whatsapp_webhook(statuses=[failed(asked_to_confirm.provider_message_id, "1767225800")])
    )

    run = customer(says("wamid.TYPED", "2"))

    assert run.status == RunStatus.WAITING
    assert OutboundMessage.objects.get(idempotency_key="option:wamid.TYPED").body == CONTINUE_TEXT


# --- what the reviewer reads ---


def test_the_conversation_shows_our_options_and_the_title_the_customer_chose(
    customer, asked_to_confirm
):
    customer(tap("wamid.TAP1", "withdraw:continue", "Continuar", question=asked_to_confirm))

    lines = conversation_for(Company.objects.get())

    question = next(line for line in lines if line.text == asked_to_confirm.body)
    chosen = next(line for line in lines if line.inbound and line.kind == "interactive")
    assert question.options == ["Confirmar", "Continuar"]
    assert chosen.text == "Continuar"
