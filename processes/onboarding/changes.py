"""A customer's edits and deletions of messages already sent: an edited text is read again, an
edited caption re-classifies its document, a deleted document no longer counts.

The message changed stays as it was received (the conversation shows what changed); the run
hears of a changed document as one more ``documents_received``, so its next validation counts
what the company has now. Nothing here writes to the customer but what a text would.
"""
from django.utils.translation import gettext as _

from approvals import services as approvals
from approvals.holds import register_approval_hold
from approvals.selectors import approvals_open_of_run
from durable import clock, selectors, services
from durable.errors import RunFinished, RunNotFound
from processes.onboarding.cnpj import cnpj_digits, cnpj_find
from processes.onboarding.findings import finding, kind_name
from processes.onboarding.models import Company, Document
from processes.onboarding.services import company_for_sender, customer_text_read
from processes.onboarding.steps import validate_documents_by_rules
from processes.onboarding.validation import guess_kind
from processes.onboarding.workflow import DOCUMENTS_SIGNAL
from processes.whatsapp.models import InboundMessage, InboundStatus
from processes.whatsapp.selectors import changed_message_id, edit_text

EDIT, REVOKE = "edit", "revoke"
CHANGE_TYPES = {EDIT, REVOKE}
DOCUMENT_TYPES = {"document", "image"}
DOCUMENT_CHECK = "document changed"


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
        return InboundStatus.UNMATCHED, f"{what} naming no original message: kept for an operator", company
    original = InboundMessage.objects.filter(wamid=original_id).first()
    if original is None:
        return (InboundStatus.UNMATCHED, f"{what} of message {original_id}, which we have not received: "
                "kept for an operator (applied by nobody)", company)
    if company is None or original.company_id != company.pk:
        return (InboundStatus.UNMATCHED, f"{what} of message {original_id}, which is not this sender's: "
                "kept for an operator", company)
    if original.message_type in DOCUMENT_TYPES:
        document = Document.objects.select_for_update().filter(company=company, message_id=original_id).first()
        if document is None:
            return (InboundStatus.UNMATCHED, f"{what} of {original.message_type} {original_id}, but no document "
                    "of the company came from it: kept for an operator", company)
        if document.withdrawn_at is not None:
            return InboundStatus.KEPT, f"{what} of {original_id}, a document already deleted: nothing counts", company
        if message.message_type == REVOKE:
            return document_withdraw(document, message)
        return document_caption_edit(document, original, message)
    if message.message_type == REVOKE:
        return (InboundStatus.KEPT, f"the customer deleted their {original.message_type} message {original_id}: "
                "it stays in the conversation, what it gave stays recorded", company)
    if original.message_type == "text":
        return text_edit(company, original, message)
    return InboundStatus.KEPT, f"an edit of a {original.message_type} message {original_id}: kept as is", company


def text_edit(company: Company, original: InboundMessage, message: InboundMessage) -> tuple[str, str, Company]:
    """An edited text is read again as the customer's text (a CNPJ, a legal name), as a new
    text would be, but never as a withdrawal or a status request. A CNPJ that would replace a
    valid one already recorded is not taken: an operator decides."""
    text = edit_text(message)
    cnpj = cnpj_find(text)
    if cnpj and company.cnpj and cnpj_digits(cnpj) != cnpj_digits(company.cnpj):
        return (InboundStatus.UNMATCHED, f"an edit of text {original.wamid} gives CNPJ {cnpj}, but the company "
                f"has {company.cnpj}: not swapped, kept for an operator (change it in the admin if right)", company)
    run = _current_run(company)
    if run is None:
        return InboundStatus.KEPT, f"an edit of text {original.wamid}: no onboarding to read it", company
    note = customer_text_read(company, text, message_id=message.wamid, run=run, actor=_actor(message))
    return InboundStatus.KEPT, f"an edit of text {original.wamid}: read again, {note}", company


def document_caption_edit(document: Document, original: InboundMessage,
                          message: InboundMessage) -> tuple[str, str, Company]:
    """The caption names the document: the new one re-classifies it (recorded in its
    ``changes``); when the kind changes, the reviewer of an open case is told and the run
    validates again."""
    caption = edit_text(message)[:500]
    before = document.kind
    after = guess_kind(message_type=original.message_type, file_name=document.file_name, caption=caption)
    document.caption = caption
    document.changes = [*document.changes, {"change": "caption", "at": clock.now().isoformat(),
                                            "message_id": message.wamid, "caption": caption,
                                            "from": str(before), "to": str(after)}]
    document.kind = after
    document.save(update_fields=["caption", "changes", "kind"])
    if after == before:
        return InboundStatus.KEPT, f"the caption of {original.wamid} was edited: still {after}", document.company
    note = f"the caption of {original.wamid} was edited: {before} -> {after}"
    note += _cases_told(document, finding(DOCUMENT_CHECK, "document_relabelled", label=_label(document),
                                          kind=str(after), was=str(before)), message)
    return InboundStatus.PROCESSED, note + _run_told(document, message), document.company


def document_withdraw(document: Document, message: InboundMessage) -> tuple[str, str, Company]:
    """The customer deleted the message that carried a document: it stays on file, marked,
    and no longer counts; an open case gets a finding and the run validates again, so it asks
    for the document again."""
    now = clock.now()
    document.withdrawn_at = now
    document.changes = [*document.changes, {"change": "deleted", "at": now.isoformat(), "message_id": message.wamid}]
    document.save(update_fields=["withdrawn_at", "changes"])
    note = f"the customer deleted {document.message_id}: {document.kind} {document.pk} no longer counts"
    note += _cases_told(document, finding(DOCUMENT_CHECK, "document_withdrawn", label=_label(document),
                                          kind=str(document.kind)), message)
    return InboundStatus.PROCESSED, note + _run_told(document, message), document.company


def _actor(message: InboundMessage) -> str:
    return f"whatsapp:{message.sender_wa_id or message.sender_user_id}"


def _label(document: Document) -> str:
    return document.file_name or document.media_id


def _cases_told(document: Document, what: dict, message: InboundMessage) -> str:
    cases = list(approvals_open_of_run(document.company.run_id))
    for case in cases:
        approvals.approval_finding_add(case.pk, actor=_actor(message), finding=what,
                                       reason=f"WhatsApp message {message.wamid}")
    return ", a finding on case " + ", ".join(f"#{case.pk}" for case in cases) if cases else ""


def _run_told(document: Document, message: InboundMessage) -> str:
    """The run hears of the changed document as one more ``documents_received`` (keyed by the
    change's own message id), so it validates again at its next batch: a run waiting for
    documents answers at once; one in review takes it when the case comes back."""
    run_id = document.company.run_id
    try:
        services.signal_send(run_id, DOCUMENTS_SIGNAL, {"message_id": message.wamid, "document_id": document.pk,
                                                        "kind": document.kind},
                             dedupe_key=message.wamid, actor=_actor(message), audit={"message_id": message.wamid})
    except (RunFinished, RunNotFound) as exc:
        return f" (onboarding {run_id} has ended: {exc})"
    return f", documents_received -> {run_id}"


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
    return [_("the customer deleted or re-labelled a document on WhatsApp, and the documents that count no "
              "longer include: %(kinds)s; ask for more documents") % {
        "kinds": ", ".join(kind_name(kind) for kind in missing)}]


register_approval_hold("onboarding", documents_changed_incomplete)
