"""The evidence pack of a decided case: the case and its decisions, what its process registered
as evidence (documents, findings, conversation), the run's journal up to the decision with the
code it ran on, and the case's audit chain, each member listed with its SHA-256 in manifest.json.

Reads only: approvals.services.approval_evidence_take builds the pack and records the download.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from approvals.errors import EvidenceNotReady, NotDecided
from approvals.evidence.encoding import json_bytes, sha256, zip_bytes
from approvals.evidence.verify import (
    AUDIT,
    CASE,
    DECISION_STEPS,
    FORMAT,
    JOURNAL,
    MANIFEST,
    PACK,
    SUBJECT,
    Verification,
    decision_of,
)
from approvals.models import (
    WITH_DECISION_STATUSES,
    ApprovalAudit,
    ApprovalRequest,
    ApprovalStatus,
    CaseAction,
)
from durable import clock
from durable.chain import GENESIS, row_body
from durable.selectors import run_code, run_journal, run_or_archived, step_results


@dataclass(frozen=True)
class EvidenceFile:
    """A file a process keeps as evidence, with the SHA-256 it recorded when the file came in."""

    name: str  # its path in the pack, e.g. "documents/12-contrato.pdf"
    content: bytes
    recorded_sha256: str = ""  # "" when nothing was recorded: then only the manifest vouches for it


@dataclass
class SubjectEvidence:
    """What a process adds to a pack: JSON records (``subject/<name>.json``) and files."""

    records: dict = field(default_factory=dict)
    files: list[EvidenceFile] = field(default_factory=list)


EvidenceProvider = Callable[[ApprovalRequest], SubjectEvidence]

_providers: dict[str, list[EvidenceProvider]] = {}


def register_evidence(workflow_name: str, provider: EvidenceProvider) -> EvidenceProvider:
    """Add ``provider(case)``'s evidence to the pack of every case ``workflow_name`` opens
    (idempotent). A provider that raises makes no pack at all: evidence is never silently
    partial."""
    providers = _providers.setdefault(workflow_name, [])
    if provider not in providers:
        providers.append(provider)
    return provider


def unregister_evidence(workflow_name: str, provider: EvidenceProvider) -> None:
    providers = _providers.get(workflow_name, [])
    if provider in providers:
        providers.remove(provider)


@dataclass(frozen=True)
class EvidencePack:
    case_id: int
    content: bytes
    manifest_sha256: str
    head: str
    audit_rows: int

    @property
    def filename(self) -> str:
        return f"case-{self.case_id}-evidence.zip"


def evidence_pack(case: ApprovalRequest, *, taken_by: str, via: str) -> EvidencePack:
    """The pack of ``case`` as it stands now. NotDecided for a case nobody decided; EvidenceNotReady
    while its run has not taken the decision yet (the journal would not lead to it)."""
    if case.status not in WITH_DECISION_STATUSES:
        raise NotDecided(
            _("Case #%(id)s is %(status)s: an evidence pack is made of a decided case only.")
            % {"id": case.pk, "status": case.get_status_display()}
        )
    journal = journal_record(case)
    audit = audit_record(case)
    subject = subject_evidence(case)
    members = [
        (CASE, json_bytes(case_record(case))),
        (AUDIT, json_bytes(audit)),
        (JOURNAL, json_bytes(journal)),
    ]
    members += [
        (f"{SUBJECT}{name}.json", json_bytes(value))
        for name, value in sorted(subject.records.items())
    ]
    members += [(file.name, file.content) for file in subject.files]
    about = {
        "format": FORMAT,
        "case": case.pk,
        "workflow": case.workflow_name,
        "head": audit["head"],
        "generated_at": clock.now(),
        "generated_by": taken_by,
        "via": via,
        "files": [
            {"name": file.name, "recorded_sha256": file.recorded_sha256} for file in subject.files
        ],
    }
    members.insert(0, (PACK, json_bytes(about)))
    _refuse_unsafe_names([MANIFEST, *(name for name, _content in members)])
    manifest = json_bytes(
        {
            "format": FORMAT,
            "files": [
                {"name": name, "sha256": sha256(content), "size": len(content)}
                for name, content in members
            ],
        }
    )
    return EvidencePack(
        case_id=case.pk,
        content=zip_bytes([(MANIFEST, manifest), *members]),
        manifest_sha256=sha256(manifest),
        head=audit["head"],
        audit_rows=len(audit["rows"]),
    )


def case_record(case: ApprovalRequest) -> dict:
    return {
        "id": case.pk,
        "title": case.title,
        "workflow": case.workflow_name,
        "run": case.run_id,
        "signal": case.signal_name,
        "subject": case.subject,
        "status": case.status,
        "outcome": case.outcome,
        "risk": case.risk,
        "required_approvals": case.required_approvals,
        "summary": case.summary,
        "candidate_groups": sorted(case.candidate_groups.values_list("name", flat=True)),
        "created_at": case.created_at,
        "due_at": case.due_at,
        "closed_at": case.closed_at,
        "closed_by": case.closed_by,
        "decisions": [
            {
                "reviewer": vote.reviewer.get_username(),
                "outcome": vote.outcome,
                "reason": vote.reason,
                "customer_message": vote.customer_message,
                "at": vote.created_at,
            }
            for vote in case.decisions.select_related("reviewer").order_by("created_at", "id")
        ],
    }


def audit_record(case: ApprovalRequest) -> dict:
    """The case's chain, each row with the values its hash covers exactly as the digest read
    them (durable.chain.row_body), so a verifier recomputes every link from the JSON alone."""
    fields = ApprovalAudit.chained_fields
    rows = []
    for row in case.audit.order_by("chain_seq", "pk"):
        seq, parent, *values = json.loads(
            row_body(row, parent=ApprovalAudit.chain_parent, fields=fields)
        )
        rows.append(
            {
                "id": row.pk,
                "chain_seq": seq,
                "case": parent,
                "prev_hash": row.prev_hash,
                "row_hash": row.row_hash,
                **dict(zip(fields, values)),
            }
        )
    return {
        "chained_fields": list(fields),
        "genesis": GENESIS,
        "rows": rows,
        "head": rows[-1]["row_hash"] if rows else GENESIS,
    }


def journal_record(case: ApprovalRequest) -> dict:
    """The run's journal up to the step that took this case's decision, and the code it ran on.

    A superseded case's run may have ended before taking it: then the whole journal, and no
    decision position."""
    taken = [
        step.position
        for step in step_results(case.run_id, DECISION_STEPS)
        if decision_of(step.name, step.result).get("request_id") == case.pk
    ]
    position = taken[0] if taken else None
    if position is None and case.status != ApprovalStatus.SUPERSEDED:
        raise EvidenceNotReady(
            _(
                "Case #%(id)s is decided, but its process has not taken the decision yet: "
                "try again in a moment."
            )
            % {"id": case.pk}
        )
    entries = run_journal(case.run_id)
    kept = [entry for entry in entries if position is None or entry.position <= position]
    code = run_code(case.run_id)
    return {
        "run": case.run_id,
        "run_status": run_or_archived(case.run_id).status,
        "workflow_name": code.workflow_name,
        "workflow_version": code.workflow_version,
        "code": {"definition": code.definition, "patches": code.patches},
        "decision_position": position,
        "entries_after_decision": len(entries) - len(kept),
        "entries": [
            {
                "position": entry.position,
                "kind": entry.kind,
                "name": entry.name,
                "status": entry.status,
                "attempt": entry.attempt,
                "result": entry.result,
                "error": entry.error,
                "created_at": entry.created_at,
                "updated_at": entry.updated_at,
            }
            for entry in kept
        ],
    }


def subject_evidence(case: ApprovalRequest) -> SubjectEvidence:
    merged = SubjectEvidence()
    for provider in _providers.get(case.workflow_name, []):
        found = provider(case)
        clash = merged.records.keys() & found.records.keys()
        if clash:
            raise ValueError(
                f"two evidence providers of {case.workflow_name!r} "
                f"name the record(s) {sorted(clash)}"
            )
        merged.records.update(found.records)
        merged.files += found.files
    return merged


def _refuse_unsafe_names(names: list[str]) -> None:
    seen = set()
    for name in names:
        parts = name.split("/")
        if (
            name in seen
            or name.startswith("/")
            or "\\" in name
            or any(part in ("", ".", "..") for part in parts)
        ):
            raise ValueError(f"evidence member name {name!r} is not a unique relative path")
        seen.add(name)


def database_problems(verified: Verification) -> list[str]:
    """What the database says of a pack that verified offline: a pack rebuilt whole by a forger
    (every hash recomputed) verifies offline, but its manifest was never recorded as taken, and
    its audit rows are not the case's."""
    case = ApprovalRequest.objects.filter(pk=verified.case_id).first()
    if case is None:
        return [f"case #{verified.case_id} is not in this database"]
    live = dict(case.audit.values_list("chain_seq", "row_hash"))
    problems = [
        f"audit row {seq} is not the case's row {seq} in the database"
        for seq, row_hash in verified.audit_links
        if live.get(seq) != row_hash
    ]
    taken = case.audit.filter(
        action=CaseAction.EVIDENCE_DOWNLOADED,
        detail__manifest_sha256=verified.manifest_sha256,
        prev_hash=verified.head,
    )
    if not taken.exists():
        problems.append(
            f"no download of a pack with manifest {verified.manifest_sha256} "
            f"after head {verified.head} is recorded in the case's audit trail"
        )
    return problems
