"""A document's kind changed after it arrived (an edited caption, the customer's choice from
"Qual documento é este?"): one path, so each change is recorded on the document, the reviewer
of an open case is told and the run validates again, whichever way it came."""

from approvals import services as approvals
from approvals.selectors import approvals_open_of_run
from durable import clock, services
from durable.errors import RunFinished, RunNotFound
from processes.onboarding.findings import finding
from processes.onboarding.models import Document
from processes.onboarding.workflow import DOCUMENTS_SIGNAL
from processes.whatsapp.models import InboundMessage

DOCUMENT_CHECK = "document changed"


def change_record(document: Document, message: InboundMessage, **change) -> None:
    """Add what changed the document, and the customer's message that did, to its ``changes``
    (saved by the caller with the rest of the change)."""
    document.changes = [
        *document.changes,
        {
            **change,
            "at": clock.now().isoformat(),
            "message_id": message.wamid,
            "sent_at": message.sent_at.isoformat() if message.sent_at else None,
        },
    ]


def document_relabel(
    document: Document, kind: str, *, message: InboundMessage, **change
) -> tuple[bool, str]:
    """Set the document's kind (and its caption, as the caller left it), recording ``change``
    (what changed it) in its ``changes``; when the kind is new, a finding on each open case and
    one more ``documents_received``. (Whether the kind is new, a note.)"""
    before = document.kind
    document.kind = kind
    change_record(document, message, **change, **{"from": str(before), "to": str(kind)})
    document.save(update_fields=["kind", "caption", "changes"])
    if kind == before:
        return False, f"still {kind}"
    note = f"{before} -> {kind}" + cases_told(
        document,
        finding(
            DOCUMENT_CHECK,
            "document_relabelled",
            label=label(document),
            kind=str(kind),
            was=str(before),
        ),
        message,
    )
    return True, note + run_told(document, message)[1]


def actor(message: InboundMessage) -> str:
    return f"whatsapp:{message.sender_wa_id or message.sender_user_id}"


def label(document: Document) -> str:
    return document.file_name or document.media_id


def cases_told(document: Document, what: dict, message: InboundMessage) -> str:
    cases = list(approvals_open_of_run(document.company.run_id))
    for case in cases:
        approvals.approval_finding_add(
            case.pk, actor=actor(message), finding=what, reason=message.wamid
        )  # an id: the finding says what happened
    return ", a finding on case " + ", ".join(f"#{case.pk}" for case in cases) if cases else ""


def run_told(document: Document, message: InboundMessage) -> tuple[bool, str]:
    """The run hears of the changed document as one more ``documents_received`` (keyed by the
    change's own message id), so it validates again at its next batch: a run waiting for
    documents answers at once; one in review takes it when the case comes back. (Whether a
    run heard it, a note.)"""
    run_id = document.company.run_id
    try:
        services.signal_send(
            run_id,
            DOCUMENTS_SIGNAL,
            {"message_id": message.wamid, "document_id": document.pk, "kind": document.kind},
            dedupe_key=message.wamid,
            actor=actor(message),
            audit={"message_id": message.wamid},
        )
    except (RunFinished, RunNotFound) as exc:
        return False, f" (onboarding {run_id} has ended: {exc})"
    return True, f", documents_received -> {run_id}"
