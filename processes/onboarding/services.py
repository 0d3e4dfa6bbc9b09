"""Writes of onboarding outside the workflow: find or create the sender's company, start
its run, and turn a document message into a ``documents_received`` signal."""

import logging
import re

from django.db import IntegrityError, transaction
from django.db.models import Q

from durable import selectors, services
from durable.errors import RunFinished, RunNotFound
from processes.billing.models import Invoice
from processes.onboarding import admission, identity, options
from processes.onboarding.cnpj import CANDIDATE as CNPJ_CANDIDATE
from processes.onboarding.cnpj import cnpj_find
from processes.onboarding.models import Company, CompanyStatus, Document, DocumentKind
from processes.onboarding.recheck import company_cases_recheck
from processes.onboarding.relabel import document_relabel
from processes.onboarding.status import STATUS_WORDS, status_answer
from processes.onboarding.steps import KIND_NAMES_PT
from processes.onboarding.validation import guess_kind
from processes.onboarding.workflow import CNPJ_SIGNAL, DOCUMENTS_SIGNAL
from processes.whatsapp.models import InboundMessage, InboundStatus
from processes.whatsapp.replies import OptionReply, option_ids, option_reply, option_typed, plain
from processes.whatsapp.selectors import text_body
from processes.whatsapp.services import message_send, question_answer

log = logging.getLogger(__name__)

DOCUMENT_TYPES = {"document", "image"}
# A text that is one of these words alone (case, accents and end punctuation ignored) withdraws.
WITHDRAWAL_WORDS = {"cancelar", "cancel", "desistir"}
# In a longer sentence these ask for a confirmation (WITHDRAWAL_CONFIRM_TEXT, with the
# buttons options.WITHDRAWAL_BUTTONS), never withdraw.
MAYBE_WITHDRAWAL_WORDS = {"desisto", "cancela", "cancelo", "cancelem", "cancele", "desistir"}
WITHDRAWAL_CONFIRM_TEXT = (
    "Quer cancelar o seu pedido de conta PJ? Escolha Confirmar para cancelar ou "
    "Continuar para seguir com o pedido."
)
CONTINUE_TEXT = "Certo, o seu pedido de conta PJ continua. Pode seguir enviando os documentos."
# What we read. Any other type (audio, video, sticker, location, contacts, flows, orders,
# "unsupported", types WhatsApp adds later) is answered once per application with what we
# can read, except these, which expect no answer: the customer opened the chat (the run's
# greeting answers that), a reaction to one of our messages. A button or list reply (an
# ``interactive`` or ``button`` message choosing an option) is read: ``option_route``.
READABLE_TYPES = {"text", *DOCUMENT_TYPES}
WELCOME_TYPE = "request_welcome"
QUIET_TYPES = {WELCOME_TYPE, "reaction"}
# A notice from WhatsApp itself (a number or identity changed), not the customer's words:
# it starts nothing and is answered by nobody (processes/onboarding/identity.py reads it).
NOTICE_TYPE = "system"
UNREADABLE_TEXT = (
    "Recebemos a sua mensagem, mas por aqui só conseguimos ler textos, documentos em PDF e fotos "
    "(JPEG ou PNG). Escreva ou envie o documento, por favor."
)
# A text that says it gives the legal name; and texts that are never one.
LEGAL_NAME_PREFIX = re.compile(
    r"^\s*(a\s+)?(raz[aã]o social|nome da empresa)(\s+[ée])?\s*[:\-]?\s*", re.IGNORECASE
)
NOT_A_NAME = {
    "oi",
    "ola",
    "ok",
    "okay",
    "obrigado",
    "obrigada",
    "sim",
    "nao",
    "bom dia",
    "boa tarde",
    "boa noite",
    "tudo bem",
    "valeu",
    "beleza",
    "certo",
    "entendi",
    "aguardo",
    "status",
    "ajuda",
}
# An application that ended in one of these starts again when the customer writes (the
# goodbye says so); an approved or rejected one does not.
RESTARTABLE = {CompanyStatus.WITHDRAWN, CompanyStatus.CLOSED}


def is_withdrawal(text: str) -> bool:
    return plain(text) in WITHDRAWAL_WORDS


def may_mean_withdrawal(text: str) -> bool:
    """A sentence with a withdrawal word in it ("desisto, cancelar") but not the word alone, and
    no "não": the customer is asked to confirm, never withdrawn on a guess."""
    words = set(re.findall(r"[a-z]+", plain(text)))
    return (
        bool(words & (WITHDRAWAL_WORDS | MAYBE_WITHDRAWAL_WORDS))
        and not words & {"nao", "not", "don"}
        and not is_withdrawal(text)
    )


def is_status_request(text: str) -> bool:
    return plain(text) in STATUS_WORDS


def onboarding_status_reply(company: Company, *, message_id: str) -> str:
    """Answer "status" with what the customer's run says (its ``progress`` query); the reply
    is sent once the message's routing commits, keyed by the message, so a redelivery is
    answered once. A note."""
    reply, note = status_answer(company.run_id)
    transaction.on_commit(
        lambda: message_send(idempotency_key=f"status:{message_id}", body=reply, company=company),
        robust=True,
    )
    return note


def unreadable_reply(company: Company | None, *, wa_id: str, user_id: str) -> str:
    """Tell the sender of a type we cannot read, once per application (once per number for one
    with no application), what we can read; sent once the routing commits, keyed so neither a
    redelivery nor a second sticker repeats it. A note."""
    key = (
        f"unreadable:{company.run_id}" if company is not None else f"unreadable:{wa_id or user_id}"
    )
    transaction.on_commit(
        lambda: message_send(
            idempotency_key=key,
            body=UNREADABLE_TEXT,
            company=company,
            to_wa_id=wa_id,
            to_user_id=user_id,
        ),
        robust=True,
    )
    return "; the sender is told what we can read (once)"


def onboarding_withdraw(company: Company, *, message_id: str) -> str:
    """The customer withdrew: cancel their run gracefully, so the workflow says goodbye once
    and the engine cancels any open case (approvals' run_cancelled receiver). A note."""
    try:
        services.run_cancel(
            company.run_id,
            reason="customer withdrew",
            actor="customer",
            graceful=True,
            audit={
                "message_id": message_id,
                "wa_id": company.wa_id or "",
                "user_id": company.user_id or "",
            },
        )
    except RunNotFound:
        return "withdrawal: no onboarding to cancel"
    except RunFinished as exc:
        return f"withdrawal: nothing to cancel ({exc})"
    return f"withdrawal: {company.run_id} cancelled gracefully"


def option_route(message: InboundMessage, reply: OptionReply, company: Company) -> tuple[str, str]:
    """Act on the option a customer chose (a tap, or the option's number typed); (status, note).

    The id must be one the question offered, the question still open, and what the id names
    this company's: otherwise nothing changes and the note says why. The question is marked
    answered as the option acts, so a second tap acts no more.
    """
    how = "typed answer" if reply.typed else "option"
    said = f"{how} {reply.id[:80]!r}"
    if reply.needs_question and reply.question is None:
        return (
            InboundStatus.KEPT,
            f"{said}: answers no question of ours to this customer; nothing changed",
        )
    if reply.question is not None and reply.id not in option_ids(reply.question):
        return InboundStatus.KEPT, f"{said}: not an option the question offered; nothing changed"
    kind_choice = options.kind_option(reply.id)
    missing = options.missing_option(reply.id)
    document = None
    if kind_choice is not None:
        document = Document.objects.filter(pk=kind_choice[0], company=company).first()
        if document is None:
            return InboundStatus.KEPT, f"{said}: names no document of this company; nothing changed"
    elif reply.id not in (options.WITHDRAW_CONFIRM, options.WITHDRAW_CONTINUE) and missing is None:
        return InboundStatus.KEPT, f"{said}: not an option onboarding offers; nothing changed"
    if reply.question is not None and _asked_before_this_application(reply.question, company):
        return (
            InboundStatus.KEPT,
            f"{said}: its question was for an earlier application; nothing changed",
        )
    if reply.question is not None and not question_answer(reply.question):
        return InboundStatus.KEPT, f"{said}: its question was already answered; nothing changed"
    if reply.id == options.WITHDRAW_CONFIRM:
        return InboundStatus.PROCESSED, f"{said}: " + onboarding_withdraw(
            company, message_id=message.wamid
        )
    if reply.id == options.WITHDRAW_CONTINUE:
        _answer(company, message, CONTINUE_TEXT)
        return InboundStatus.PROCESSED, f"{said}: the customer goes on; nothing cancelled"
    if missing is not None:
        _answer(
            company,
            message,
            f"Envie por aqui: {KIND_NAMES_PT[missing]}. Escreva na legenda qual documento é.",
        )
        return InboundStatus.PROCESSED, f"{said}: the customer is told to send the {missing}"
    return InboundStatus.PROCESSED, f"{said}: " + document_kind_choose(
        document, kind_choice[1], message=message
    )


def _asked_before_this_application(question, company: Company) -> bool:
    """A question sent before the company's current run began belongs to an application
    that ended: answering it now must not cancel or change the new one."""
    try:
        return question.created_at < selectors.run_get(company.run_id).created_at
    except RunNotFound:
        return False


def _answer(company: Company, message: InboundMessage, body: str) -> None:
    """A short answer to a chosen option, once per reply (keyed by the reply's message id)."""
    transaction.on_commit(
        lambda: message_send(idempotency_key=f"option:{message.wamid}", body=body, company=company),
        robust=True,
    )


def document_kind_choose(document: Document, kind: str, *, message: InboundMessage) -> str:
    """The customer said which document a file is: its kind is set the way an edited caption
    sets it (recorded on the document, the reviewer of an open case told, the run given the
    document again so it validates it as that kind). Not for a document the customer deleted,
    nor once the application has ended. A note."""
    company = document.company
    if document.withdrawn_at is not None:
        return f"document {document.pk} was deleted by the customer; nothing changed"
    try:
        if selectors.run_get(company.run_id).is_finished:
            return f"onboarding {company.run_id} has ended; document {document.pk} not changed"
    except RunNotFound:
        return f"no onboarding for document {document.pk}; nothing changed"
    _, note = document_relabel(document, kind, message=message, change="chosen")
    _answer(company, message, f"Certo: registramos o arquivo como {KIND_NAMES_PT[kind]}.")
    return f"document {document.pk}: {note}"


def document_kind_ask(document: Document, company: Company, *, file_name: str = "") -> None:
    """A file the classifier could not tell: the customer is asked which document it is (a
    list of the required kinds), once per document, once the routing commits."""
    body, choices = options.kind_question(document, file_name=file_name)
    transaction.on_commit(
        lambda: message_send(
            idempotency_key=f"document-kind:{document.pk}",
            body=body,
            list_=choices,
            company=company,
        ),
        robust=True,
    )


def company_for_sender(
    *, wa_id: str = "", user_id: str = "", profile_name: str = "", create: bool = False
) -> Company | None:
    """The company behind a WhatsApp identity (phone or business-scoped user id).

    A sender seen once by phone and once by user id is one company: the identity it
    lacked is filled in. With ``create``, an unknown sender becomes a new company.
    """
    query = Q()
    if wa_id:
        query |= Q(wa_id=wa_id)
    if user_id:
        # A message sent before a user id change and delivered after it still joins the
        # company (user ids are never given to someone else; a former number may be).
        query |= Q(user_id=user_id) | Q(former_user_id=user_id)
    if not query:
        return None
    company = Company.objects.select_for_update().filter(query).order_by("pk").first()
    if company is not None:
        changed = []
        if wa_id and not company.wa_id and not Company.objects.filter(wa_id=wa_id).exists():
            company.wa_id = wa_id
            changed.append("wa_id")
        if user_id and not company.user_id and not Company.objects.filter(user_id=user_id).exists():
            company.user_id = user_id
            changed.append("user_id")
        if changed:
            company.save(update_fields=[*changed, "updated_at"])
        return company
    if not create:
        return None
    try:
        with transaction.atomic():
            return Company.objects.create(
                wa_id=wa_id or None, user_id=user_id or None, name=profile_name[:200]
            )
    except IntegrityError:
        return Company.objects.filter(query).order_by("pk").first()


def company_application_restart(company: Company) -> bool:
    """The customer writes again after withdrawing (or after the application closed for want
    of documents): a new application, with a run of its own (``Company.run_id`` moves on),
    once the last run has finished (its goodbye sent). The documents already on file stay
    and count. Called with the company's row locked (``company_for_sender``), so two
    messages at once start one application. True if it started one."""
    if company.status not in RESTARTABLE:
        return False
    try:
        if not selectors.run_get(company.run_id).is_finished:
            return False
    except RunNotFound:
        pass  # archived, so finished long ago
    company.application += 1
    company.status, company.status_reason, company.escalations = CompanyStatus.COLLECTING, "", 0
    company.save(
        update_fields=["application", "status", "status_reason", "escalations", "updated_at"]
    )
    log.info(
        "company %s: application %d starts (%s)",
        company.customer_id,
        company.application,
        company.run_id,
    )
    return True


def documents_on_file_send(company: Company, run_id: str) -> int:
    """Hand a new application's run the documents the company already sent, as if sent
    now (one ``documents_received`` each, keyed by run and document): it validates them in
    its first batch, and asks only for what is still missing. Returns how many."""
    documents = list(company.documents.filter(withdrawn_at__isnull=True).order_by("pk"))
    for document in documents:
        services.signal_send(
            run_id,
            DOCUMENTS_SIGNAL,
            {"message_id": document.message_id, "document_id": document.pk, "kind": document.kind},
            dedupe_key=f"on-file:{document.pk}",
            actor="onboarding:new-application",
        )
    return len(documents)


def company_cnpj_from_text(company: Company, text: str) -> str:
    """Record the first valid CNPJ the customer writes (the greeting asks for it).

    Only a company without one takes it: a later message cannot silently swap the CNPJ a
    reviewer may already be looking at (an operator changes it in the admin).
    """
    cnpj = cnpj_find(str(text or ""))
    if not cnpj or company.cnpj:
        return ""
    company.cnpj = cnpj
    company.save(update_fields=["cnpj", "updated_at"])
    return cnpj


def legal_name_in(text: str, *, answering: bool) -> str:
    """The legal name a text gives: one it says it gives ("razão social: ..."), or, when it
    ``answering`` our question, the text itself; "" for none. A greeting, a thanks or a question
    is not a name, and a CNPJ in the same text is not part of it."""
    name = " ".join(CNPJ_CANDIDATE.sub(" ", str(text or "")).split())
    said = LEGAL_NAME_PREFIX.match(name)
    if said:
        name = name[said.end() :]
    elif not answering or "cnpj" in name.casefold() or CNPJ_CANDIDATE.search(str(text or "")):
        return ""  # not an answer, or a text about the CNPJ
    name = name.strip(" .,:;-")
    if (
        sum(ch.isalpha() for ch in name) < 3
        or len(name) > 200
        or name.endswith("?")
        or plain(name) in NOT_A_NAME
    ):
        return ""
    return name


def company_legal_name_from_text(
    company: Company, text: str, *, message_id: str, correcting: str = ""
) -> str:
    """Record the legal name the customer writes: the first text after being asked for it, or
    any text that says so ("razão social: ..."), which also corrects an earlier answer (the
    open case is then re-checked, so approvals given on the old name no longer count); an edit
    of the answer (``correcting``: the name it gave, still the company's) corrects it too. The
    customer hears what was recorded, once per message."""
    answering = company.legal_name_asked_at is not None and (
        not company.legal_name or (correcting and company.legal_name == correcting)
    )
    name = legal_name_in(text, answering=bool(answering))
    if not name or name == company.legal_name:
        return ""
    company.legal_name = name
    company.save(update_fields=["legal_name", "updated_at"])
    transaction.on_commit(
        lambda: message_send(
            idempotency_key=f"legal-name:{message_id}",
            company=company,
            body=f"Obrigado! Registramos a razão social: {name}.",
        ),
        robust=True,
    )
    return name


def customer_text_read(
    company: Company, text: str, *, message_id: str, run, actor: str, correcting: str = ""
) -> str:
    """Record what a customer's text gives: the first valid CNPJ (the run hears it as
    ``cnpj_received``, keyed by the message) and the legal name; a case open now is re-checked
    at once, not only at the next review round. ``run`` is the company's current run. A note."""
    cnpj = company_cnpj_from_text(company, text)
    note = f"CNPJ {cnpj} recorded" if cnpj else "no workflow waits for text"
    if legal_name := company_legal_name_from_text(
        company, text, message_id=message_id, correcting=correcting
    ):
        note = (f"{note}, " if cnpj else "") + f"legal name {legal_name!r} recorded"
        if company_cases_recheck(
            company, actor=actor, reason="the customer wrote the legal name during the review"
        ):
            note += ", open case re-checked"
    if cnpj:
        if company_cases_recheck(
            company, actor=actor, reason="the customer wrote the CNPJ during the review"
        ):
            note += ", open case re-checked"
        try:  # the run re-reads the company: a case not yet open becomes low risk
            services.signal_send(
                run.id,
                CNPJ_SIGNAL,
                {"cnpj": cnpj},
                dedupe_key=message_id,
                actor=actor,
                audit={"message_id": message_id},
            )
        except RunFinished:
            note += f" (onboarding {run.id} is {run.status})"
    return note


def onboarding_start(company: Company, *, actor: str, audit: dict | None = None):
    """Start the company's onboarding run; idempotent on its id ``onboarding:<customer id>``."""
    return services.run_start(
        "onboarding", company.customer_id, id=company.run_id, actor=actor, audit=audit
    )


def _unread_answer(message: InboundMessage, company: Company) -> tuple[str, str]:
    """(status, note) for a message we do not read from a customer with an application: told
    once what we can read, unless the message expects no answer. A sticker does not restart a
    finished application; the goodbye asks the customer to write."""
    if message.message_type == WELCOME_TYPE:
        return (
            InboundStatus.KEPT,
            "the chat was opened again: the greeting was sent when the application began",
        )
    if message.message_type == "reaction":
        return InboundStatus.KEPT, "a reaction: nothing to answer"
    note = f"{message.message_type!r} messages are not read"
    return InboundStatus.UNSUPPORTED, note + unreadable_reply(
        company, wa_id=message.sender_wa_id, user_id=message.sender_user_id
    )


def onboarding_route_message(message: InboundMessage) -> tuple[str, str, Company | None]:
    """Decide what a stored message means; returns (status, note, company).

    A first message from an unknown sender, whatever its type, starts its onboarding (the
    run greets) and, if it carries a document, signals it in the same transaction
    (signal-with-start). A document becomes ``documents_received`` with the message id as
    dedupe key, so a redelivery is one signal.
    """
    wa_id, user_id = message.sender_wa_id, message.sender_user_id
    profile = (message.payload.get("contact") or {}).get("profile") or {}
    if not wa_id and not user_id:
        return InboundStatus.UNMATCHED, "the message names no sender (no wa_id, no user id)", None
    known = company_for_sender(wa_id=wa_id, user_id=user_id)
    if message.message_type == NOTICE_TYPE:
        return identity.notice_route(message, known)
    chosen = option_reply(message, company=known)
    if chosen is not None and known is not None:
        return (*option_route(message, chosen, known), known)
    if message.message_type == "text" and is_withdrawal(text_body(message)):
        if known is None:
            return InboundStatus.KEPT, "withdrawal from an unknown sender: nothing to cancel", None
        return InboundStatus.KEPT, onboarding_withdraw(known, message_id=message.wamid), known
    if (
        message.message_type == "text"
        and is_status_request(text_body(message))
        and known is not None
    ):
        return (
            InboundStatus.PROCESSED,
            onboarding_status_reply(known, message_id=message.wamid),
            known,
        )
    if message.message_type not in READABLE_TYPES and known is not None:
        return (*_unread_answer(message, known), known)
    if (
        message.message_type == "text"
        and known is not None
        and (typed := option_typed(message, text_body(message), company=known))
    ):
        return (*option_route(message, typed, known), known)
    if (
        message.message_type == "text"
        and known is not None
        and may_mean_withdrawal(text_body(message))
    ):
        transaction.on_commit(
            lambda: message_send(
                idempotency_key=f"confirm-withdrawal:{message.wamid}",
                body=WITHDRAWAL_CONFIRM_TEXT,
                buttons=options.WITHDRAWAL_BUTTONS,
                company=known,
            ),
            robust=True,
        )
        return (
            InboundStatus.KEPT,
            "a sentence that may mean a withdrawal: the customer is asked to confirm",
            known,
        )
    if known is None and wa_id and Invoice.objects.filter(wa_id=wa_id).exists():
        note = "a billing customer with no onboarding; kept for an operator"
        if message.message_type not in READABLE_TYPES | QUIET_TYPES and chosen is None:
            note += unreadable_reply(None, wa_id=wa_id, user_id=user_id)
        return InboundStatus.UNMATCHED, note, None
    refusal = (
        admission.new_sender_refusal()
        if known is None
        else admission.new_application_refusal(known)
        if known.status in RESTARTABLE
        else ""
    )
    if refusal:
        return InboundStatus.RECEIVED, refusal, known
    company = known or company_for_sender(
        wa_id=wa_id, user_id=user_id, profile_name=str(profile.get("name") or ""), create=True
    )
    restarted = company_application_restart(company)
    run = onboarding_start(
        company, actor=f"whatsapp:{wa_id or user_id}", audit={"message_id": message.wamid}
    )
    if restarted:
        documents_on_file_send(company, run.id)
    if message.message_type not in READABLE_TYPES:
        status = (
            InboundStatus.KEPT
            if message.message_type in QUIET_TYPES or chosen
            else InboundStatus.UNSUPPORTED
        )
        return (
            status,
            f"{message.message_type!r}, a first message: {run.id} started, its greeting answers",
            company,
        )
    if message.message_type == "text":
        note = customer_text_read(
            company,
            text_body(message),
            message_id=message.wamid,
            run=run,
            actor=f"whatsapp:{wa_id or user_id}",
        )
        return InboundStatus.KEPT, f"text message: stored, {note}", company
    body = message.payload["message"].get(message.message_type)
    body = body if isinstance(body, dict) else {}  # a document of the wrong shape is still kept
    document, created = Document.objects.get_or_create(
        company=company,
        media_id=str(body.get("id") or message.wamid),
        defaults={
            "kind": guess_kind(
                message_type=message.message_type,
                file_name=str(body.get("filename") or ""),
                caption=str(body.get("caption") or ""),
            ),
            "mime_type": str(body.get("mime_type") or "")[:100],
            "sha256": str(body.get("sha256") or "")[:128],
            "file_name": str(body.get("filename") or "")[:255],
            "caption": str(body.get("caption") or "")[:500],
            "message_id": message.wamid,
        },
    )
    try:
        services.signal_send(
            run.id,
            "documents_received",
            {"message_id": message.wamid, "document_id": document.pk, "kind": document.kind},
            dedupe_key=message.wamid,
            actor=f"whatsapp:{wa_id or user_id}",
            audit={"message_id": message.wamid},
        )
    except RunFinished:
        return (
            InboundStatus.UNMATCHED,
            f"document kept, but onboarding {run.id} is {run.status}: nothing waits for it",
            company,
        )
    if created and document.kind == DocumentKind.UNKNOWN:
        document_kind_ask(document, company, file_name=body.get("filename"))
        return (
            InboundStatus.PROCESSED,
            f"documents_received -> {run.id}; kind unknown: the customer is asked",
            company,
        )
    return InboundStatus.PROCESSED, f"documents_received -> {run.id}", company
