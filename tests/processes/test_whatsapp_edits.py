"""A customer's edits and deletions of messages already sent, through the signed webhook: an
edited text is read again, an edited caption re-classifies its document, a deleted document
no longer counts and is asked for again."""

import pytest
from django.db import transaction

from approvals.errors import ApprovalHeld
from approvals.models import ApprovalRequest
from approvals.services import approval_decide
from durable.models import Signal
from durable.testing import drive
from processes.onboarding.models import Company, Document, DocumentKind
from processes.whatsapp.models import InboundMessage, InboundStatus, OutboundMessage
from processes.whatsapp.selectors import inbound_needing_attention
from processes.whatsapp.services import inbound_process, webhook_receive
from tests.processes.conftest import (
    ADDRESS,
    CNPJ,
    CONTRACT,
    HELLO,
    NEW_CONTRACT,
    PHONE,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)
from tests.processes.test_onboarding import decide, open_case

pytestmark = pytest.mark.django_db

OTHER_VALID_CNPJ = "11.444.777/0001-61"
HELLO_BAD_CNPJ = whatsapp_message(
    "wamid.HELLO-BAD", wa_id=PHONE, text="Oi, quero abrir uma conta PJ. CNPJ 11.222.333/0001-00"
)  # bad check digits
PHOTO = document("wamid.PHOTO", "", type="image", wa_id=PHONE, media_id="media-photo")


def edit(
    wamid: str, original: dict, *, text: str | None = None, caption: str | None = None
) -> dict:
    """An ``edit`` as the Cloud API delivers it: the message as edited, naming the original."""
    if text is not None:
        edited = {"type": "text", "text": {"body": text}}
    else:
        kind = original["type"]
        edited = {
            "type": kind,
            kind: {
                "caption": caption,
                "mime_type": original[kind]["mime_type"],
                "sha256": original[kind]["sha256"],
                "id": original[kind]["id"],
            },
        }
    return {
        "from": PHONE,
        "id": wamid,
        "timestamp": "1767225700",
        "type": "edit",
        "edit": {"original_message_id": original["id"], "message": edited},
    }


def revoke(wamid: str, original_id: str) -> dict:
    return {
        "from": PHONE,
        "id": wamid,
        "timestamp": "1767225700",
        "type": "revoke",
        "revoke": {"original_message_id": original_id},
    }


def last_ask() -> str:
    return (
        OutboundMessage.objects.filter(idempotency_key__contains=":ask:").latest("created_at").body
    )


def company() -> Company:
    return Company.objects.get(wa_id=PHONE)


def test_an_edited_cnpj_replaces_an_invalid_one_and_the_case_opens_with_it(customer):
    customer(HELLO_BAD_CNPJ)
    customer(CONTRACT, ADDRESS, SELFIE)  # complete: the run asks for the CNPJ and waits
    assert company().cnpj == ""

    run = customer(edit("wamid.EDIT-CNPJ", HELLO_BAD_CNPJ, text=f"CNPJ {CNPJ}"))

    assert company().cnpj == CNPJ
    case = open_case(run.id)
    assert case.summary["cnpj"] == CNPJ and case.risk == "low"
    assert InboundMessage.objects.get(wamid="wamid.EDIT-CNPJ").status == InboundStatus.KEPT


def test_an_edit_that_would_swap_a_recorded_cnpj_is_kept_for_an_operator(customer):
    customer(HELLO)

    customer(edit("wamid.EDIT-CNPJ", HELLO, text=f"CNPJ {OTHER_VALID_CNPJ}"))

    assert company().cnpj == CNPJ
    kept = InboundMessage.objects.get(wamid="wamid.EDIT-CNPJ")
    assert (
        kept.status == InboundStatus.UNMATCHED
        and "not swapped" in kept.note
        and OTHER_VALID_CNPJ in kept.note
    )
    assert kept in inbound_needing_attention()


def test_an_edited_text_shows_in_the_conversation_under_the_original(
    in_review, customer, client, ana
):
    case = open_case(in_review.id)

    customer(edit("wamid.EDIT-HELLO", HELLO, text="Oi de novo, a empresa é a Padaria Boa Massa"))

    client.force_login(ana)
    page = client.get(f"/approvals/{case.pk}/").content.decode()
    assert HELLO["text"]["body"] in page and "Oi de novo, a empresa é a Padaria Boa Massa" in page
    assert 'data-testid="edited"' in page


def test_an_edited_caption_turns_a_selfie_into_a_proof_of_address_and_the_run_stops_asking_for_it(
    customer,
):
    customer(HELLO)
    customer(CONTRACT, PHOTO)  # no caption: an image is a selfie
    assert last_ask() == "Ainda falta: comprovante de endereço."

    customer(edit("wamid.EDIT-PHOTO", PHOTO, caption="comprovante de endereço"))

    photo = Document.objects.get(message_id=PHOTO["id"])
    assert photo.kind == DocumentKind.ADDRESS and photo.changes[-1]["from"] == DocumentKind.SELFIE
    assert last_ask() == "Ainda falta: selfie do responsável."
    run = customer(SELFIE)
    assert open_case(run.id).summary["cnpj"] == CNPJ


def test_a_redelivered_edit_changes_the_document_once(customer, signed_post):
    customer(HELLO)
    customer(CONTRACT, PHOTO)
    edited = edit("wamid.EDIT-PHOTO", PHOTO, caption="comprovante de endereço")

    signed_post(whatsapp_webhook(edited))
    signed_post(whatsapp_webhook(edited))

    assert len(Document.objects.get(message_id=PHOTO["id"]).changes) == 1
    assert Signal.objects.filter(dedupe_key="wamid.EDIT-PHOTO").count() == 1
    assert InboundMessage.objects.filter(message_type="edit").count() == 1


def test_a_document_deleted_inside_the_batching_window_does_not_count_and_is_asked_for(
    customer, signed_post
):
    customer(HELLO)
    signed_post(whatsapp_webhook(CONTRACT, ADDRESS, SELFIE))
    drive(company().run_id)  # the batch is open: the quiet period has not passed

    customer(revoke("wamid.REVOKE-ADDRESS", ADDRESS["id"]))

    assert Document.objects.get(message_id=ADDRESS["id"]).withdrawn_at is not None
    assert last_ask() == "Ainda falta: comprovante de endereço."
    assert not ApprovalRequest.objects.exists()


def test_a_document_deleted_during_the_review_is_a_finding_holds_the_case_and_is_asked_for_again(
    in_review, customer, client, ana
):
    case = open_case(in_review.id)

    customer(revoke("wamid.REVOKE-ADDRESS", ADDRESS["id"]))

    after = ApprovalRequest.objects.get(pk=case.pk)
    assert after.summary["findings"][-1]["code"] == "document_withdrawn"
    client.force_login(ana)
    page = client.get(f"/approvals/{case.pk}/").content.decode()
    assert "the customer deleted luz.pdf (Proof of address) on WhatsApp" in page
    with pytest.raises(ApprovalHeld):
        approval_decide(case.pk, actor=ana, outcome="approve")
    decide(ana, in_review.id, "more_documents", reason="Envie de novo o comprovante de endereço")
    customer(NEW_CONTRACT)
    assert last_ask() == "Ainda falta: comprovante de endereço."


def test_a_deleted_text_stays_in_the_conversation_marked_as_deleted(
    in_review, customer, client, ana
):
    case = open_case(in_review.id)

    customer(revoke("wamid.REVOKE-HELLO", HELLO["id"]))

    kept = InboundMessage.objects.get(wamid="wamid.REVOKE-HELLO")
    assert kept.status == InboundStatus.KEPT and "stays in the conversation" in kept.note
    assert company().cnpj == CNPJ
    client.force_login(ana)
    page = client.get(f"/approvals/{case.pk}/").content.decode()
    assert HELLO["text"]["body"] in page and 'data-testid="deleted"' in page


def test_a_deletion_of_a_message_we_never_received_is_kept_for_an_operator(customer):
    customer(HELLO)

    customer(revoke("wamid.REVOKE-GHOST", "wamid.NEVER-SEEN"))

    kept = InboundMessage.objects.get(wamid="wamid.REVOKE-GHOST")
    assert kept.status == InboundStatus.UNMATCHED and "wamid.NEVER-SEEN" in kept.note
    assert kept in inbound_needing_attention()
    assert not Document.objects.filter(withdrawn_at__isnull=False).exists()


def test_an_edit_arriving_before_its_original_starts_nothing_and_applies_once_the_original_arrives(
    signed_post, customer
):
    signed_post(whatsapp_webhook(edit("wamid.EDIT-EARLY", HELLO_BAD_CNPJ, text=f"CNPJ {CNPJ}")))
    early = InboundMessage.objects.get()
    assert early.status == InboundStatus.UNMATCHED and HELLO_BAD_CNPJ["id"] in early.note
    assert not Company.objects.exists()

    customer(HELLO_BAD_CNPJ)

    assert company().cnpj == CNPJ
    assert InboundMessage.objects.get(wamid="wamid.EDIT-EARLY").status == InboundStatus.KEPT


def test_a_deletion_arriving_before_its_document_withdraws_it_once_it_arrives(
    customer, signed_post
):
    customer(HELLO)
    signed_post(whatsapp_webhook(revoke("wamid.REVOKE-EARLY", CONTRACT["id"])))

    customer(CONTRACT, ADDRESS, SELFIE)

    assert Document.objects.get(message_id=CONTRACT["id"]).withdrawn_at is not None
    assert last_ask() == "Ainda falta: contrato social."
    assert not ApprovalRequest.objects.exists()


def test_an_edit_of_the_legal_name_answer_corrects_it_and_re_checks_the_case(customer):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    answer = whatsapp_message("wamid.NAME", wa_id=PHONE, text="Floricultura Jardm Ltda")
    customer(answer)
    assert company().legal_name == "Floricultura Jardm Ltda"

    customer(edit("wamid.EDIT-NAME", answer, text="Floricultura Jardim Ltda"))

    assert company().legal_name == "Floricultura Jardim Ltda"
    assert open_case(run.id).summary["legal_name_given"] == "Floricultura Jardim Ltda"


def test_an_edit_of_another_text_does_not_replace_the_legal_name(customer):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        customer(message)
    customer(whatsapp_message("wamid.NAME", wa_id=PHONE, text="Floricultura Jardim Ltda"))

    customer(edit("wamid.EDIT-HELLO", HELLO, text="Oi, é a Padaria do Zé"))

    assert company().legal_name == "Floricultura Jardim Ltda"


def test_a_caption_edit_that_names_no_document_keeps_the_kind_the_file_has(customer):
    customer(HELLO)
    customer(CONTRACT, ADDRESS)  # the address by its caption

    customer(edit("wamid.EDIT-ADDRESS", ADDRESS, caption="(frente)"))

    address = Document.objects.get(message_id=ADDRESS["id"])
    assert (address.kind, address.caption) == (DocumentKind.ADDRESS, "(frente)")


def test_an_older_caption_edit_arriving_after_a_newer_one_changes_nothing(customer):
    customer(HELLO)
    customer(CONTRACT, PHOTO)
    newer = {
        **edit("wamid.EDIT-2", PHOTO, caption="comprovante de endereço"),
        "timestamp": "1767225800",
    }
    older = {**edit("wamid.EDIT-1", PHOTO, caption="contrato social"), "timestamp": "1767225750"}

    customer(newer)
    customer(older)

    assert Document.objects.get(message_id=PHOTO["id"]).kind == DocumentKind.ADDRESS
    assert "older than the last change" in InboundMessage.objects.get(wamid="wamid.EDIT-1").note


def test_a_document_deleted_after_the_application_ended_is_for_an_operator(customer, ana):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    decide(ana, run.id, "reject", reason="Documentos ilegíveis")

    customer(revoke("wamid.REVOKE-LATE", CONTRACT["id"]))

    late = InboundMessage.objects.get(wamid="wamid.REVOKE-LATE")
    assert late.status == InboundStatus.UNMATCHED and "ended" in late.note
    assert late in inbound_needing_attention()


def test_an_early_edit_is_applied_in_the_transaction_that_routes_its_original(signed_post):
    """Not after its commit: a worker killed between the two would leave the edit unapplied."""
    signed_post(whatsapp_webhook(edit("wamid.EDIT-EARLY", HELLO_BAD_CNPJ, text=f"CNPJ {CNPJ}")))

    with transaction.atomic():
        for message_id in webhook_receive(whatsapp_webhook(HELLO_BAD_CNPJ)).new_message_ids:
            inbound_process(message_id)
        applied_before_commit = (
            company().cnpj,
            InboundMessage.objects.get(wamid="wamid.EDIT-EARLY").status,
        )

    assert applied_before_commit == (CNPJ, InboundStatus.KEPT)
