"""``request_approval``: what a workflow calls to put a case before compliance and wait.

Runs inside a workflow body, so no I/O here except through journaled steps.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from durable import clock, days, workflow
from durable.durations import as_timedelta

DEFAULT_SIGNAL = "compliance_decision"
# How long a reviewer has unless the process says otherwise (the brief's three days).
DEFAULT_TIMEOUT = days(3)
# A supervisor's deadline extension wakes the wait with the case's own signal (no decision
# on the row yet); runs patched for it re-read the due date before waiting again. Runs
# journaled before keep their fixed deadline (durable's patched()).
EXTENSIBLE_DEADLINES = "approval-deadline-extension"


@dataclass
class Decision:
    """A closed case as the workflow sees it (the payload of the decision signal)."""

    approved: bool
    outcome: str  # "approve", "reject" or "more_documents"
    by: list[str] = field(default_factory=list)
    reason: str = ""  # the compliance rationale: internal, never for the customer
    decided_at: datetime | None = None
    request_id: int | None = None
    customer_message: str = ""  # what to tell the customer with the outcome ("" in older journals)

    @property
    def wants_more_documents(self) -> bool:
        return self.outcome == "more_documents"


@dataclass
class Ticket:
    request_id: int
    due_at: datetime


@dataclass
class Expiry:
    expired: bool
    decision: Decision | None = None
    # Set when a supervisor moved the deadline after the wait timed out: wait again.
    due_at: datetime | None = None


def _subject(subject) -> tuple[str, str]:
    if subject is None:
        return "", ""
    if isinstance(subject, (tuple, list)):
        subject_type, subject_id = subject
        return str(subject_type), str(subject_id)
    text = str(subject)
    subject_type, sep, subject_id = text.partition(":")
    return (subject_type, subject_id) if sep else ("", text)


def open_approval_request(
    run_id: str,
    signal_name: str,
    title: str,
    summary: dict,
    subject_type: str,
    subject_id: str,
    risk: str,
    timeout_seconds: float,
    required_approvals: int | None,
    idempotency_key: str,
    candidate_groups: list[str] | None = None,
) -> Ticket:
    """Step: open the case in the transaction that journals the step (exactly once)."""
    from approvals import services

    case = services.approval_request_create(
        run_id=run_id,
        signal_name=signal_name,
        idempotency_key=idempotency_key,
        title=title,
        summary=summary,
        subject_type=subject_type,
        subject_id=subject_id,
        risk=risk,
        required_approvals=required_approvals,
        due_at=clock.now() + timedelta(seconds=timeout_seconds),
        candidate_groups=candidate_groups,
        actor=services.SYSTEM,
    )  # the process itself
    return Ticket(request_id=case.pk, due_at=case.due_at)


def read_decision(request_id: int) -> Decision | None:
    """Step: the decision as the case row records it, or None if the case is not decided."""
    from approvals import services
    from approvals.models import DECIDED_STATUSES, ApprovalRequest

    case = ApprovalRequest.objects.get(pk=request_id)
    if case.status not in DECIDED_STATUSES:
        return None
    payload = services.decision_payload(case)
    payload["decided_at"] = case.closed_at
    return Decision(**payload)


def decisions_taken(run_id: str) -> set[int]:
    """The cases whose decision the run has taken: read by ``read_decision``, or handed over by
    ``expire_approval_request`` (decided in the instant before the deadline)."""
    from durable.selectors import step_results

    taken = set()
    for step in step_results(run_id, [read_decision.__name__, expire_approval_request.__name__]):
        result = step.result if isinstance(step.result, dict) else {}
        decision = (
            result.get("decision") if step.name == expire_approval_request.__name__ else result
        )
        if isinstance(decision, dict) and decision.get("request_id") is not None:
            taken.add(decision["request_id"])
    return taken


def read_due_at(request_id: int) -> datetime:
    """Step: the case's deadline as the row records it (a supervisor may have moved it)."""
    from approvals.models import ApprovalRequest

    return ApprovalRequest.objects.get(pk=request_id).due_at


def expire_approval_request(request_id: int, extensible: bool = False) -> Expiry:
    """Step: the deadline passed. A decision that committed just before it still counts, and
    so does an extension (``extensible`` runs only: older ones cannot hear of it)."""
    from approvals import services
    from approvals.models import DECIDED_STATUSES, OPEN_STATUSES

    if extensible:
        case = services.approval_lock(
            request_id
        )  # the run, then the case: the order every writer takes
        if case.status in OPEN_STATUSES and case.due_at > clock.now():
            return Expiry(expired=False, due_at=case.due_at)
    case = services.approval_expire(request_id, actor="system (deadline)")
    if case.status in DECIDED_STATUSES:
        payload = services.decision_payload(case)
        payload["decided_at"] = case.closed_at
        return Expiry(expired=False, decision=Decision(**payload))
    return Expiry(expired=True)


def request_approval(
    *,
    title: str,
    summary: dict | None = None,
    subject=None,
    risk: str = "low",
    timeout=DEFAULT_TIMEOUT,
    signal_name: str = DEFAULT_SIGNAL,
    required_approvals: int | None = None,
    idempotency_key: str | None = None,
    candidate_groups: list[str] | None = None,
) -> Decision | None:
    """Open a case for compliance, wait for its decision until ``timeout``, and return it.

    ``None`` means nobody decided in time (the case is marked expired), so the caller can
    escalate. High risk needs two approvals by two different reviewers unless
    ``required_approvals`` says otherwise. ``subject`` names what the case is about:
    ``"company:42"`` or ``("company", "42")``. ``idempotency_key`` names the case (unique);
    by default it is the opening step's key, ``<run id>:<position>:open_approval_request``.
    ``candidate_groups`` names the groups whose reviewers may take the case (any reviewer
    when empty). A supervisor who extends the deadline moves this wait's timeout too.
    """
    timeout = as_timedelta(timeout)
    subject_type, subject_id = _subject(subject)
    groups = sorted(set(candidate_groups or []))
    ticket = workflow.step(
        open_approval_request,
        workflow.id,
        signal_name,
        title,
        summary or {},
        subject_type,
        subject_id,
        risk,
        timeout.total_seconds(),
        required_approvals,
        atomic=True,
        idempotency_key=idempotency_key,
        **({"candidate_groups": groups} if groups else {}),
    )
    signal = workflow.wait_for_signal(signal_name, timeout=timeout)
    while True:
        while signal is not None:
            # The case row decides, not the signal's payload: a signal sent by hand (an
            # operator's form, the API) cannot approve what no reviewer approved.
            decision = workflow.step(read_decision, ticket.request_id)
            if decision is not None:
                return decision
            due_at = ticket.due_at
            if workflow.patched(EXTENSIBLE_DEADLINES):  # the row's deadline, maybe extended
                due_at = workflow.step(read_due_at, ticket.request_id)
            remaining = max(due_at - workflow.now(), timedelta(0))
            signal = workflow.wait_for_signal(signal_name, timeout=remaining)
        extensible = workflow.patched(EXTENSIBLE_DEADLINES)
        expiry = workflow.step(
            expire_approval_request, ticket.request_id, *([True] if extensible else []), atomic=True
        )
        if expiry.due_at is None:
            break
        # Extended in the instant the wait timed out: wait for the new deadline.
        signal = workflow.wait_for_signal(
            signal_name, timeout=max(expiry.due_at - workflow.now(), timedelta(0))
        )
    if expiry.expired:
        return None
    # Decided in the instant before the deadline: its signal is waiting; consume it so a
    # later case with the same signal name does not read it.
    workflow.wait_for_signal(signal_name, timeout=timeout, type=Decision)
    return expiry.decision
