"""What an onboarding case's evidence pack holds besides the case: the company, every document
it sent (the stored bytes, checked against the SHA-256 recorded when each came in), the CNPJ
registry's answers and the validator's rounds up to the decision, and the WhatsApp conversation.

Registered for the workflow name "onboarding" when processes/workflows.py is imported.
"""

import os
from dataclasses import asdict

from django.core.exceptions import SuspiciousFileOperation
from django.utils.text import get_valid_filename

from approvals.evidence.encoding import sha256
from approvals.evidence.pack import EvidenceFile, SubjectEvidence, register_evidence
from durable.selectors import step_results
from processes.onboarding.models import Company, Document
from processes.onboarding.panels import VALIDATION_STEPS, case_company
from processes.onboarding.steps import cnpj_registry_lookup
from processes.whatsapp.selectors import conversation_for


def onboarding_evidence(case) -> SubjectEvidence:
    company = case_company(case)
    documents, files = [], []
    for document in company.documents.order_by("created_at", "pk"):
        record, file = document_evidence(document)
        documents.append(record)
        if file is not None:
            files.append(file)
    return SubjectEvidence(
        records={
            "company": company_record(company),
            "documents": documents,
            "registry": steps_until_decided(case, [cnpj_registry_lookup.__name__]),
            "validation": steps_until_decided(case, VALIDATION_STEPS),
            "conversation": [asdict(line) for line in conversation_for(company)],
        },
        files=files,
    )


def company_record(company: Company) -> dict:
    return {
        "customer_id": company.customer_id,
        "name": company.name,
        "cnpj": company.cnpj,
        "wa_id": company.wa_id,
        "user_id": company.user_id,
        "status": company.status,
        "status_reason": company.status_reason,
        "application": company.application,
        "created_at": company.created_at,
    }


def document_evidence(document: Document) -> tuple[dict, EvidenceFile | None]:
    """The document's record and, when its bytes can be read, its file. The record says whether
    the bytes still hash to the SHA-256 recorded when they were downloaded."""
    content, note = stored_bytes(document)
    name = pack_name(document) if content is not None else None
    digest = sha256(content) if content is not None else None
    record = {
        "id": document.pk,
        "kind": document.kind,
        "file_name": document.file_name,
        "mime_type": document.mime_type,
        "caption": document.caption,
        "size": document.size,
        "fetch_status": document.fetch_status,
        "fetch_note": document.fetch_note,
        "message_id": document.message_id,
        "received_at": document.created_at,
        "recorded_sha256": document.sha256,
        "file": name,
        "file_sha256": digest,
        "file_matches_record": None if digest is None else digest == document.sha256,
        "note": note,
    }
    file = None if content is None else EvidenceFile(name, content, recorded_sha256=document.sha256)
    return record, file


def stored_bytes(document: Document) -> tuple[bytes | None, str]:
    """The stored file's bytes, or None and why not."""
    if not document.file:
        return None, "no file is stored"
    try:
        with document.file.storage.open(document.file.name, "rb") as handle:
            return handle.read(), ""
    except FileNotFoundError:
        return None, "the stored file is missing"
    except (OSError, SuspiciousFileOperation) as exc:
        return None, f"the stored file cannot be read ({exc.__class__.__name__})"


def pack_name(document: Document) -> str:
    """documents/<id>-<the customer's file name>, without directories or unsafe characters."""
    base = os.path.basename((document.file_name or document.file.name or "").replace("\\", "/"))
    try:
        name = get_valid_filename(base)
    except SuspiciousFileOperation:
        name = document.kind
    return f"documents/{document.pk}-{name[:120]}"


def steps_until_decided(case, names) -> list[dict]:
    """What the run's steps ``names`` recorded, round by round, up to the case's decision."""
    return [
        {"round": n, "position": step.position, "at": step.at, "result": step.result}
        for n, step in enumerate(step_results(case.run_id, names), start=1)
        if case.closed_at is None or step.at <= case.closed_at
    ]


register_evidence("onboarding", onboarding_evidence)
