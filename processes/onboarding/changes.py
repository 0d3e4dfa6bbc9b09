"""A customer's edits and deletions of messages already sent: an edited text is read again, an
edited caption re-classifies its document, a deleted document no longer counts.

The message changed stays as it was received (the conversation shows what changed); the run
hears of a changed document as one more ``documents_received``, so its next validation counts
what the company has now. Nothing here writes to the customer but what a text would.
"""

from django.db.models import Q
from django.utils.translation import gettext as _

from approvals.holds import register_approval_hold
from durable import clock, selectors
from durable.errors import RunNotFound
from processes.onboarding.cnpj import cnpj_digits, cnpj_find
from processes.onboarding.findings import finding, kind_name
from processes.onboarding.models import Company, Document, DocumentKind
from processes.onboarding.relabel import (
    DOCUMENT_CHECK,
    actor,
    cases_told,
    change_record,
    document_relabel,
    label,
    run_told,
)
from processes.onboarding.services import (
    DOCUMENT_TYPES,
    company_for_sender,
    customer_text_read,
    legal_name_in,
)
from processes.onboarding.steps import validate_documents_by_rules
from processes.onboarding.validation import guess_kind
from processes.whatsapp.models import CHANGE_TYPES, InboundMessage, InboundStatus
from processes.whatsapp.selectors import changed_message_id, edit_text, text_body
from processes.whatsapp.services import inbound_process

EDIT, REVOKE = CHANGE_TYPES


# What an edit or a deletion that came before its original waits for.
WAITS = "applied when the original arrives (an operator sees it meanwhile)"


def changes_waiting_for(wamid: str):
    """Edits and deletions kept because they named ``wamid`` before it arrived."""
    return InboundMessage.objects.filter(
        status=InboundStatus.UNMATCHED, message_type__in=CHANGE_TYPES
    ).filter(
        Q(payload__message__edit__original_message_id=wamid)
        | Q(payload__message__revoke__original_message_id=wamid)
    )


def changes_waiting_replay(original: InboundMessage) -> int:
    """Route again, in the order they were sent, the edits and deletions that named the
    ``original`` before it arrived (WhatsApp may deliver a change first): called once its
    routing is saved, in the same transaction (``routing.register_after_routed``), so they
    find it with its company and document, and a crash loses neither. How many."""
    if original.message_type in CHANGE_TYPES:
        return 0
    waiting = list(
        changes_waiting_for(original.wamid).order_by("sent_at", "pk").values_list("pk", flat=True)
    )
    for pk in waiting:
        InboundMessage.objects.filter(pk=pk, status=InboundStatus.UNMATCHED).update(
            status=InboundStatus.RECEIVED
        )
        inbound_process(pk)
    return len(waiting)


def original_id_of(message: InboundMessage) -> str:
    """The id of the message an edit or a deletion names ("" when it names none we could store)."""
    original = changed_message_id(message)
    return original if len(original) <= 128 else ""


def onboarding_route_change(message: InboundMessage) -> tuple[str, str, Company | None] | None:
    """Router for ``edit`` and ``revoke`` messages (None for any other type): an edit or a
    deletion never starts an application, and applies only to a message of the same
    sender's company. One naming a message we never received (or not yet: WhatsApp may
    deliver it first) is kept for an operator."""
    if message.message_type not in CHANGE_TYPES:
        return None
    what = "an edit" if message.message_type == EDIT else "a deletion"
    if not message.sender_wa_id and not message.sender_user_id:
        return InboundStatus.UNMATCHED, "the message names no sender (no wa_id, no user id)", None
    company = company_for_sender(wa_id=message.sender_wa_id, user_id=message.sender_user_id)
    original_id = original_id_of(message)
    if not original_id:
        return (
            InboundStatus.UNMATCHED,
            f"{what} naming no original message: kept for an operator",
            company,
        )
    original = InboundMessage.objects.filter(wamid=original_id).first()
    if original is None or original.status == InboundStatus.RECEIVED:
        return (
            InboundStatus.UNMATCHED,
            f"{what} of message {original_id}, which we have not received (or not "
            f"routed) yet: {WAITS}",
            company,
        )
    if company is None or original.company_id != company.pk:
        return (
            InboundStatus.UNMATCHED,
            f"{what} of message {original_id}, which is not this sender's: kept for an operator",
            company,
        )
    if original.message_type in DOCUMENT_TYPES:
        document = (
            Document.objects.select_for_update()
            .filter(company=company, message_id=original_id)
            .first()
        )
        if document is None:
            return (
                InboundStatus.UNMATCHED,
                f"{what} of {original.message_type} {original_id}, but no document "
                "of the company came from it: kept for an operator",
                company,
            )
        if document.withdrawn_at is not None:
            return (
                InboundStatus.KEPT,
                f"{what} of {original_id}, a document already deleted: nothing counts",
                company,
            )
        if message.message_type == REVOKE:
            return document_withdraw(document, message)
        return document_caption_edit(document, original, message)
    if message.message_type == REVOKE:
        return (
            InboundStatus.KEPT,
            f"the customer deleted their {original.message_type} message {original_id}: "
            "it stays in the conversation, what it gave stays recorded",
            company,
        )
    if original.message_type == "text":
        return text_edit(company, original, message)
    return (
        InboundStatus.KEPT,
        f"an edit of a {original.message_type} message {original_id}: kept as is",
        company,
    )


def text_edit(
    company: Company, original: InboundMessage, message: InboundMessage
) -> tuple[str, str, Company]:
    """An edited text is read again as the customer's text (a CNPJ, a legal name), as a new
    text would be, but never as a withdrawal or a status request. A CNPJ that would replace a
    valid one already recorded is not taken: an operator decides. A legal name the original
    gave is corrected by its edit (the open case is re-checked)."""
    text = edit_text(message)
    cnpj = cnpj_find(text)
    if cnpj and company.cnpj and cnpj_digits(cnpj) != cnpj_digits(company.cnpj):
        return (
            InboundStatus.UNMATCHED,
            f"an edit of text {original.wamid} gives CNPJ {cnpj}, but the company has "
            f"{company.cnpj}: not swapped, kept for an operator (change it in the admin if right)",
            company,
        )
    run = _current_run(company)
    if run is None:
        return (
            InboundStatus.KEPT,
            f"an edit of text {original.wamid}: no onboarding to read it",
            company,
        )
    gave = legal_name_in(text_body(original), answering=True)
    note = customer_text_read(
        company,
        text,
        message_id=message.wamid,
        run=run,
        actor=actor(message),
        correcting=gave if gave and gave == company.legal_name else "",
    )
    return InboundStatus.KEPT, f"an edit of text {original.wamid}: read again, {note}", company


def document_caption_edit(
    document: Document, original: InboundMessage, message: InboundMessage
) -> tuple[str, str, Company]:
    """The caption names the document: a new caption that names a kind re-classifies it (one
    that names none, "(frente)", keeps the kind it has, however it got it). Edits apply in the
    order the customer made them: an older one arriving late changes nothing."""
    caption = edit_text(message)[:500]
    last = max((change.get("sent_at") or "" for change in document.changes), default="")
    if message.sent_at and last and message.sent_at.isoformat() < last:
        return (
            InboundStatus.KEPT,
            f"an edit of {original.wamid} older than the last change applied: nothing changed",
            document.company,
        )
    document.caption = caption
    named = guess_kind(message_type="document", caption=caption)
    kind = document.kind if named == DocumentKind.UNKNOWN else named
    relabelled, note = document_relabel(
        document, kind, message=message, change="caption", caption=caption
    )
    status = InboundStatus.PROCESSED if relabelled else InboundStatus.KEPT
    return status, f"the caption of {original.wamid} was edited: {note}", document.company


def document_withdraw(document: Document, message: InboundMessage) -> tuple[str, str, Company]:
    """The customer deleted the message that carried a document: it stays on file, marked,
    and no longer counts; an open case gets a finding and the run validates again, so it asks
    for the document again. After the application ended, an operator is told."""
    document.withdrawn_at = clock.now()
    change_record(document, message, change="deleted")
    document.save(update_fields=["withdrawn_at", "changes"])
    note = (
        f"the customer deleted {document.message_id}: "
        f"{document.kind} {document.pk} no longer counts"
    )
    note += cases_told(
        document,
        finding(
            DOCUMENT_CHECK, "document_withdrawn", label=label(document), kind=str(document.kind)
        ),
        message,
    )
    heard, told = run_told(document, message)
    if not heard:  # nothing will ask for it again: someone must know
        return (
            InboundStatus.UNMATCHED,
            note + told + ": the application has ended, for an operator",
            document.company,
        )
    return InboundStatus.PROCESSED, note + told, document.company


def _current_run(company: Company):
    try:
        return selectors.run_get(company.run_id)
    except RunNotFound:
        return None


def documents_changed_incomplete(case) -> list[str]:
    """Hold: the customer deleted or re-labelled a document after the case opened, and the
    documents that count no longer include every required kind. The case goes back for more
    documents (the run then asks for what is missing); it is never approved without them."""
    company = Company.objects.filter(customer_id=case.subject_id).first()
    if company is None or "cnpj" not in (case.summary or {}):
        return []
    if not any(document.changes for document in company.documents.all()):
        return []
    missing = validate_documents_by_rules(company.customer_id).missing
    if not missing:
        return []
    return [
        _(
            "the customer deleted or re-labelled a document on WhatsApp, and the "
            "documents that count no longer include: %(kinds)s; ask for more documents"
        )
        % {"kinds": ", ".join(kind_name(kind) for kind in missing)}
    ]


register_approval_hold("onboarding", documents_changed_incomplete)
