"""The effects of onboarding, each run as a journaled step of the workflow.

Steps that only write our database are called with ``atomic=True`` (exactly once);
steps that send messages are keyed, so a step that runs twice sends once.
"""

import logging
from dataclasses import dataclass, field

from django.db.models import OuterRef, Q, Subquery

from durable import clock
from processes.onboarding.cnpj import cnpj_digits, cnpj_format, cnpj_valid
from processes.onboarding.media import media_download
from processes.onboarding.models import (
    Account,
    Company,
    CompanyStatus,
    Document,
    DocumentFetch,
    DocumentKind,
)
from processes.onboarding.options import missing_list
from processes.onboarding.validation import (
    DocumentFacts,
    ValidationResult,
    checker_from_settings,
    rules_checker,
)
from processes.whatsapp.backends import INTERACTIVE_BODY_MAX
from processes.whatsapp.services import message_send

log = logging.getLogger(__name__)

KIND_NAMES_PT = {
    DocumentKind.ARTICLES: "contrato social",
    DocumentKind.ADDRESS: "comprovante de endereço",
    DocumentKind.SELFIE: "selfie do responsável",
}


def _company(customer_id: str) -> Company:
    return Company.objects.get(customer_id=customer_id)


def _names(kinds: list[str]) -> str:
    return ", ".join(KIND_NAMES_PT.get(kind, kind) for kind in kinds)


def greet(customer_id: str, idempotency_key: str) -> str:
    """The first reply: what to send. A customer whose first message already gave a valid
    CNPJ is not asked for it again (the message that started the run is routed before it runs)."""
    company = _company(customer_id)
    documents = f"{_names([str(k) for k in KIND_NAMES_PT])}. Escreva na legenda qual documento é."
    if cnpj_valid(company.cnpj):
        body = (
            f"Olá! Recebemos o CNPJ {cnpj_format(company.cnpj)}. "
            f"Para abrir a sua conta PJ, envie por aqui: {documents}"
        )
    else:
        body = (
            "Olá! Para abrir a sua conta PJ, escreva o "
            f"CNPJ da empresa e envie por aqui: {documents}"
        )
    return message_send(
        company=company, body=body, idempotency_key=idempotency_key, purpose="greeting"
    ).idempotency_key


def store_document_media(document_id: int) -> dict:
    """Download the document's bytes and record the outcome on it (``fetch_status``). A
    document the customer deleted on WhatsApp is not fetched: it no longer counts."""
    document = Document.objects.get(pk=document_id)
    if document.withdrawn_at is not None:
        return {
            "document_id": document_id,
            "stored": False,
            "size": document.size,
            "fetch_status": document.fetch_status,
            "withdrawn": True,
        }
    stored = media_download(document)
    return {
        "document_id": document_id,
        "stored": stored,
        "size": document.size,
        "fetch_status": document.fetch_status,
    }


def document_fetch_failed(document_id: int, error: str) -> str:
    """The download kept failing (its retries are spent): recorded (atomic), so the checker
    asks the customer to send the document again instead of counting it."""
    Document.objects.filter(pk=document_id).exclude(fetch_status=DocumentFetch.STORED).update(
        fetch_status=DocumentFetch.FAILED, fetch_note=error[:300]
    )
    return DocumentFetch.FAILED


def _facts(customer_id: str) -> list[DocumentFacts]:
    """The documents that count: every one the company sent, but those it deleted on WhatsApp."""
    return [
        DocumentFacts(
            kind=doc.kind,
            mime_type=doc.mime_type,
            file_name=doc.file_name,
            caption=doc.caption,
            size=doc.size,
            fetch_status=doc.fetch_status,
        )
        for doc in Document.objects.filter(
            company__customer_id=customer_id, withdrawn_at__isnull=True
        )
    ]


def validate_documents(customer_id: str) -> ValidationResult:
    """Check every document the company sent so far with the configured checker."""
    return checker_from_settings().check(_facts(customer_id))


def validate_documents_by_rules(customer_id: str) -> ValidationResult:
    """The fallback when the configured checker (a model) could not answer."""
    return rules_checker().check(_facts(customer_id))


FORMAT_NAMES = {
    "application/pdf": "PDF",
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/webp": "WEBP",
    "image/heic": "HEIC",
}


def _document_pt(note: dict) -> str:
    label, kind = note.get("params", {}).get("label", ""), note.get("kind", "")
    if label and label != kind:
        return f"o arquivo {label}"
    return (
        f"o documento enviado como {KIND_NAMES_PT[kind]}"
        if kind in KIND_NAMES_PT
        else "um documento sem legenda"
    )


def problem_pt(note: dict) -> str:
    """A validator's problem as the customer reads it: in Portuguese, saying what to send.
    A problem recorded without a code (a model's, or a result journaled before codes) is
    said as recorded."""
    code, params, document = note.get("code"), note.get("params") or {}, _document_pt(note)
    kind_format = FORMAT_NAMES.get(
        params.get("mime_type", ""), params.get("mime_type") or "formato desconhecido"
    )
    texts = {
        "document_too_large": (
            f"{document} passa de {params.get('limit', '')}: envie um arquivo menor"
        ),
        "document_pending": f"{document} ainda está sendo baixado",
        "document_failed": f"não conseguimos baixar {document}: envie de novo",
        "document_refused": f"{document} não é PDF, JPEG nem PNG",
        "document_kind_unknown": (
            f"não sabemos qual documento é {document}: escreva na legenda se é o contrato "
            "social, o comprovante de endereço ou a selfie"
        ),
        "document_type_refused": (
            f"{document} é um {kind_format}, mas para a selfie precisamos de uma foto (JPEG ou PNG)"
            if note.get("kind") == DocumentKind.SELFIE
            else f"{document} ({kind_format}) não é aceito: envie PDF, JPEG ou PNG"
        ),
    }
    return texts.get(code) or str(note.get("result", ""))


def ask_for_documents(
    customer_id: str, missing: list[str], problems: list, idempotency_key: str
) -> str:
    """Say what is still missing and what was wrong, in Portuguese. ``problems``: the
    validator's coded notes (a problem a later document solved is not repeated), or the
    English texts of a result journaled before them."""
    body = f"Ainda falta: {_names(missing)}." if missing else "Precisamos de um documento de novo."
    said = [
        problem_pt(p) if isinstance(p, dict) else str(p)
        for p in problems
        if not (isinstance(p, dict) and p.get("solved"))
    ]
    if said:
        body += " Problemas: " + "; ".join(said) + "."
    # More than one missing: a list to choose from (its reply says how to send that one). A
    # body too long for an interactive message goes as text alone.
    choices = missing_list(missing) if len(body) <= INTERACTIVE_BODY_MAX else None
    return message_send(
        company=_company(customer_id),
        body=body,
        list_=choices,
        idempotency_key=idempotency_key,
        purpose="documents_request",
        parameters={"missing": _names(missing) or "um documento de novo"},
    ).idempotency_key


def has_valid_cnpj(customer_id: str) -> bool:
    """Whether the company has a CNPJ with valid check digits (journaled: replays agree)."""
    return cnpj_valid(_company(customer_id).cnpj)


def ask_for_cnpj(customer_id: str, idempotency_key: str) -> str:
    """The one question for a missing CNPJ (keyed once per run)."""
    body = (
        "Recebemos os documentos. Falta o CNPJ da empresa: escreva-o aqui "
        "(por exemplo 11.222.333/0001-81)."
    )
    return message_send(
        company=_company(customer_id),
        body=body,
        idempotency_key=idempotency_key,
        purpose="documents_request",
        parameters={"missing": "CNPJ da empresa"},
    ).idempotency_key


LEGAL_NAME_QUESTION = (
    "Para concluir a análise, escreva aqui a razão social da empresa, como está no "
    "contrato social (por exemplo: Floricultura Jardim Ltda)."
)


def ask_for_legal_name(customer_id: str, idempotency_key: str) -> str:
    """Ask the legal name the registry could not give (keyed once per run). The company is
    marked as asked first, so the customer's next text is read as the answer."""
    Company.objects.filter(customer_id=customer_id, legal_name_asked_at__isnull=True).update(
        legal_name_asked_at=clock.now()
    )
    return message_send(
        company=_company(customer_id),
        body=LEGAL_NAME_QUESTION,
        idempotency_key=idempotency_key,
        purpose="documents_request",
        parameters={"missing": "razão social da empresa"},
    ).idempotency_key


def remind_documents(customer_id: str, idempotency_key: str) -> str:
    body = (
        "Lembrete: ainda precisamos dos documentos para abrir a sua conta PJ. "
        "Sem eles, o pedido será encerrado em 3 dias."
    )
    return message_send(
        company=_company(customer_id),
        body=body,
        idempotency_key=idempotency_key,
        purpose="document_reminder",
    ).idempotency_key


def set_status(customer_id: str, status: str, reason: str = "") -> str:
    """Record where the company stands (atomic: commits with the journal entry)."""
    Company.objects.filter(customer_id=customer_id).update(
        status=status, status_reason=reason[:200], updated_at=clock.now()
    )
    return status


# The last part of a decision notice's key (the workflow writes ``<run id>:<it>``); the notice's
# purpose is read from it, so the journaled arguments stay as they were.
APPROVED_NOTICE, REJECTED_NOTICE = "welcome", "rejected"
NOTICE_PURPOSES = {APPROVED_NOTICE: "decision_approved", REJECTED_NOTICE: "decision_rejected"}


def notify(customer_id: str, body: str, idempotency_key: str) -> str:
    """A notice (approved, rejected, under review, closed, goodbye); outside the window the
    decisions go out as their own templates, the rest as the generic one."""
    company = _company(customer_id)
    purpose = NOTICE_PURPOSES.get(idempotency_key.rsplit(":", 1)[-1], "")
    account = Account.objects.filter(company=company).values_list("number", flat=True).first()
    return message_send(
        company=company,
        body=body,
        idempotency_key=idempotency_key,
        purpose=purpose,
        parameters={"account": account} if account else None,
    ).idempotency_key


@dataclass
class ReviewFacts:
    """What compliance needs to see about the company, read once per review round."""

    customer_id: str
    name: str
    cnpj: str
    cnpj_valid: bool
    whatsapp: str
    documents: list[str] = field(default_factory=list)
    # Other companies that gave the same CNPJ, each with its status and latest case (empty in
    # runs recorded before the check: they replay as they were).
    same_cnpj: list[str] = field(default_factory=list)
    # The legal name the customer wrote when asked for it (empty in runs recorded before).
    legal_name: str = ""


def describe_for_review(customer_id: str) -> ReviewFacts:
    """The company and the documents it sent so far (not those it deleted on WhatsApp), for
    the compliance case (journaled)."""
    company = _company(customer_id)
    documents = [
        f"{doc.get_kind_display()}: {doc.file_name or doc.media_id} "
        f"({doc.mime_type or 'unknown type'})"
        for doc in company.documents.filter(withdrawn_at__isnull=True).order_by("created_at", "pk")
    ]
    whatsapp = " / ".join(part for part in (company.wa_id, company.user_id) if part)
    return ReviewFacts(
        customer_id=customer_id,
        name=company.name,
        cnpj=company.cnpj,
        cnpj_valid=cnpj_valid(company.cnpj),
        whatsapp=whatsapp,
        documents=documents,
        same_cnpj=companies_with_the_same_cnpj(company),
        legal_name=company.legal_name,
    )


def cnpj_registry_lookup(customer_id: str) -> dict:
    """What the CNPJ registry says of the company's CNPJ (journaled: replays agree); {} when
    the company has no valid CNPJ. An unreachable registry is an answer too (``error``)."""
    from processes.onboarding.registry import registry

    company = _company(customer_id)
    if not cnpj_valid(company.cnpj):
        return {}
    return registry().lookup(cnpj_digits(company.cnpj)).as_summary()


def companies_with_the_same_cnpj(company: Company) -> list[str]:
    """Every other company that gave this valid CNPJ (approved, in review, withdrawn...), named
    with its customer id, status and latest compliance case, for the reviewer."""
    from approvals.models import ApprovalRequest

    if not cnpj_valid(company.cnpj):
        return []
    digits = cnpj_digits(company.cnpj)
    latest_case = (
        ApprovalRequest.objects.filter(subject_type="company", subject_id=OuterRef("customer_id"))
        .order_by("-pk")
        .values("pk")[:1]
    )
    others = (
        Company.objects.filter(Q(cnpj=digits) | Q(cnpj=cnpj_format(digits)))
        .exclude(pk=company.pk)
        .annotate(case=Subquery(latest_case))
        .order_by("pk")
    )
    return [
        f"{other.name or other.customer_id} (customer {other.customer_id}, {other.status}"
        + (f", case #{other.case})" if other.case else ")")
        for other in others
    ]


def request_more_documents(customer_id: str, request: str, idempotency_key: str) -> str:
    """Send the customer what the reviewer asked them for (the decision's message to the
    customer; the reason itself in decisions older than that message)."""
    body = (
        f"A nossa equipe de análise precisa de mais documentos. {request.strip().rstrip('.')}. "
        "Responda por aqui, por favor."
    )
    return message_send(
        company=_company(customer_id),
        body=body,
        idempotency_key=idempotency_key,
        purpose="decision_more_documents",
        parameters={"request": request.strip().rstrip(".")},
    ).idempotency_key


def escalate_review(customer_id: str, level: int) -> int:
    """The compliance decision is late: raise the case's escalation level (atomic)."""
    company = _company(customer_id)
    company.escalations = max(company.escalations, level)
    company.save(update_fields=["escalations", "updated_at"])
    log.warning("onboarding %s: compliance decision late, escalation level %s", customer_id, level)
    return company.escalations


def create_account(customer_id: str, approved_by: str, idempotency_key: str) -> str:
    """Open the account, once: unique per company and per key, and run atomically."""
    company = _company(customer_id)
    account, _ = Account.objects.get_or_create(
        company=company,
        defaults={
            "number": f"PJ-{company.pk:08d}",
            "idempotency_key": idempotency_key,
            "approved_by": approved_by[:150],
        },
    )
    Company.objects.filter(pk=company.pk).update(
        status=CompanyStatus.APPROVED, updated_at=clock.now()
    )
    return account.number
