"""The onboarding sections of a compliance case page: the company, its documents, what the
validator found in each round, and the WhatsApp conversation.

Registered for the workflow name "onboarding" when processes/workflows.py is imported
(the engine imports it at startup), so every onboarding case shows them.
"""

from dataclasses import dataclass, field

from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from approvals.duties import register_case_subject
from approvals.holds import register_approval_hold
from approvals.panels import (
    Section,
    register_case_panel,
    register_findings_reader,
    register_summary,
    register_timeline_labels,
    register_title,
    register_workflow_label,
)
from durable.selectors import step_results
from processes.onboarding import decision_messages  # noqa: F401  (registers the customer messages)
from processes.onboarding.findings import finding_shown, kind_name
from processes.onboarding.models import Company, Document, DocumentFetch
from processes.onboarding.workflow import LOW_RISK_TEXT
from processes.whatsapp.selectors import conversation_for

PREVIEWABLE_TYPES = {"application/pdf", "image/jpeg", "image/png"}
VALIDATION_STEPS = ("validate_documents", "validate_documents_by_rules")


@dataclass
class DocumentRow:
    document: Document
    preview_url: str
    download_url: str
    is_image: bool
    relabelled_from: list[str] = field(
        default_factory=list
    )  # the kinds a caption edit changed, by name


def case_company(case) -> Company:
    """The company a case is about: its subject (``company:<customer id>``)."""
    return Company.objects.get(customer_id=case.subject_id)


def document_rows(case, company: Company) -> list[DocumentRow]:
    rows = []
    for document in company.documents.order_by("created_at", "pk"):
        args = [case.pk, document.pk]
        stored = bool(document.file)
        rows.append(
            DocumentRow(
                document=document,
                preview_url=(
                    reverse("processes:onboarding-document-preview", args=args)
                    if stored and document.mime_type in PREVIEWABLE_TYPES
                    else ""
                ),
                download_url=reverse("processes:onboarding-document-download", args=args)
                if stored
                else "",
                is_image=document.mime_type in ("image/jpeg", "image/png"),
                relabelled_from=[
                    kind_name(change.get("from", ""))
                    for change in document.changes
                    if change.get("change") == "caption" and change.get("from") != change.get("to")
                ],
            )
        )
    return rows


def validation_rounds(case) -> list[dict]:
    """What the validator recorded each time it ran, from the run's journal, in the reader's
    language: the missing kinds by name, the problems from their codes (as recorded when a
    round predates them)."""
    rounds = []
    for n, step in enumerate(step_results(case.run_id, VALIDATION_STEPS), start=1):
        result = step.result or {}
        notes = result.get("notes") or []
        rounds.append(
            {
                "round": n,
                "at": step.at,
                **result,
                "missing": [kind_name(kind) for kind in result.get("missing") or []],
                "problems": [finding_shown(note)["result"] for note in notes]
                or result.get("problems")
                or [],
            }
        )
    return rounds


def onboarding_panels(case) -> list[Section]:
    company = case_company(case)
    return [
        Section(
            _("Company"),
            "processes/onboarding/panel_company.html",
            {"company": company},
            key="company",
        ),
        Section(
            _("Documents"),
            "processes/onboarding/panel_documents.html",
            {"rows": document_rows(case, company)},
            key="documents",
        ),
        Section(
            _("Validator, round by round"),
            "processes/onboarding/panel_validation.html",
            {"rounds": validation_rounds(case)},
            key="validation",
        ),
        Section(
            _("WhatsApp conversation"),
            "processes/onboarding/panel_conversation.html",
            {"lines": conversation_for(company)},
            key="conversation",
        ),
    ]


def documents_not_viewable(case) -> list[str]:
    """A counted (stored) document the reviewer cannot open holds the approval: nobody
    approves an account on a file they could not see."""
    reasons = []
    for document in case_company(case).documents.filter(
        fetch_status=DocumentFetch.STORED, withdrawn_at__isnull=True
    ):
        label = document.file_name or document.get_kind_display()
        if not document.file:
            reasons.append(_("%(file)s cannot be viewed: no file is stored") % {"file": label})
            continue
        try:
            found = document.file.storage.exists(document.file.name)
        except Exception:  # a name outside MEDIA_ROOT, storage unreachable: not viewable either
            found = False
        if not found:
            reasons.append(
                _("%(file)s cannot be viewed: the stored file is missing") % {"file": label}
            )
    return reasons


def finding_for_reviewer(item: dict) -> dict | None:
    """A finding in the reviewer's language; the risk reasons are folded into the summary."""
    return None if item.get("check") == "risk" and item.get("code") else finding_shown(item)


def risk_shown(case) -> str:
    """The case's risk and why, in the reader's language (recorded text for older cases)."""
    summary = case.summary or {}
    reasons = [
        item
        for item in summary.get("findings") or []
        if isinstance(item, dict) and item.get("check") == "risk" and item.get("code")
    ]
    if reasons:
        why = "; ".join(finding_shown(item)["result"] for item in reasons)
    elif summary.get("risk") == LOW_RISK_TEXT:
        why = _("valid CNPJ, no validator problems")
    else:
        return str(summary.get("risk") or case.get_risk_display())
    return f"{case.get_risk_display()}: {why}"


def title_shown(case) -> str:
    """The case's title in the reader's language, from what its summary recorded."""
    summary = case.summary or {}
    if "cnpj" not in summary:
        return case.title
    name = summary.get("company") or case.subject_id
    cnpj = summary["cnpj"]
    title = (
        _("%(name)s — CNPJ not given") % {"name": name}
        if cnpj in ("", "not given")
        else _("%(name)s — CNPJ %(cnpj)s") % {"name": name, "cnpj": cnpj}
    )
    level = int(summary.get("escalation_level") or 0)
    return title + (_(" (escalated, level %(level)s)") % {"level": level} if level else "")


def summary_rows(case) -> list[tuple[str, object]]:
    """The case's summary as a reviewer reads it: risk, round and escalation. The company,
    its CNPJ, WhatsApp and documents are the panels' (one block each, not two)."""
    summary = case.summary or {}
    follows = summary.get("follows_case")
    return [
        (_("Risk"), risk_shown(case)),
        (_("Review round"), summary.get("review_round")),
        (
            _("Follows case"),
            _("#%(case)s, sent back: %(reason)s")
            % {"case": follows, "reason": summary.get("sent_back_because") or "—"}
            if follows
            else "",
        ),
        (_("Escalation level"), summary.get("escalation_level") or ""),
    ]


# What reviewers read in the timeline instead of the journal's names.
TIMELINE_LABELS = {
    "greet": gettext_lazy("Customer greeted"),
    "documents_received": gettext_lazy("Documents received"),
    "cnpj_received": gettext_lazy("CNPJ received"),
    "store_document_media": gettext_lazy("Document downloaded"),
    "document_fetch_failed": gettext_lazy("Document download failed"),
    "validate_documents": gettext_lazy("Documents validated"),
    "validate_documents_by_rules": gettext_lazy("Documents validated by the rules"),
    "ask_for_documents": gettext_lazy("Customer asked for documents"),
    "has_valid_cnpj": gettext_lazy("CNPJ checked"),
    "ask_for_cnpj": gettext_lazy("Customer asked for the CNPJ"),
    "cnpj_registry_lookup": gettext_lazy("CNPJ registry consulted"),
    "ask_for_legal_name": gettext_lazy("Customer asked for the legal name"),
    "remind_documents": gettext_lazy("Customer reminded of the documents"),
    "set_status": gettext_lazy("Company status changed"),
    "notify": gettext_lazy("Customer notified"),
    "describe_for_review": gettext_lazy("Case prepared for review"),
    "request_more_documents": gettext_lazy("More documents requested"),
    "escalate_review": gettext_lazy("Review escalated"),
    "create_account": gettext_lazy("Account opened"),
    "withdraw": gettext_lazy("Customer withdrew"),
}

register_case_panel("onboarding", onboarding_panels)
register_timeline_labels("onboarding", TIMELINE_LABELS)
register_findings_reader("onboarding", finding_for_reviewer)
register_summary("onboarding", summary_rows)
register_title("onboarding", title_shown)
register_workflow_label("onboarding", gettext_lazy("Business account opening"))


def case_rows(case) -> list:
    """The company a case is about and its documents (the evidence): whoever added or changed
    any of them in the admin may not decide the case (docs/approvals.md)."""
    company = Company.objects.filter(customer_id=case.subject_id).first()
    return [] if company is None else [company, *company.documents.all()]


register_case_subject("onboarding", case_rows)
register_approval_hold("onboarding", documents_not_viewable)
from processes.onboarding import recheck  # noqa: E402,F401  (a CNPJ change re-checks open cases)
