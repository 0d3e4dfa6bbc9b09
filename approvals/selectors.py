"""Reads on approval requests for the reviewer UI, the admin and tests."""
from django.db.models import Count, Q, QuerySet

from approvals.errors import ApprovalNotFound
from approvals.models import CLOSED_STATUSES, OPEN_STATUSES, ApprovalRequest, ApprovalStatus, Outcome
from durable import clock
from durable.selectors import run_journal


def _with_counts(cases: QuerySet) -> QuerySet:
    # Not the run: it may have moved to durable's archive (panels ask durable for it).
    return cases.select_related("assignee").annotate(
        approvals=Count("decisions", filter=Q(decisions__outcome=Outcome.APPROVE)))


def _search(cases: QuerySet, query: str) -> QuerySet:
    query = (query or "").strip()
    if not query:
        return cases
    match = (Q(title__icontains=query) | Q(subject_id__icontains=query) | Q(run__id__icontains=query)
             | Q(closed_by__icontains=query) | Q(workflow_name__icontains=query))
    if query.lstrip("#").isdigit():
        match |= Q(pk=int(query.lstrip("#")))
    return cases.filter(match)


def approvals_open_for(user, *, risk: str = "", workflow_name: str = "", status: str = "",
                       overdue: bool = False, query: str = "") -> QuerySet:
    """Open cases this reviewer can act on, soonest deadline first.

    Cases the reviewer already approved (waiting for a second pair of eyes) are left out:
    they cannot act on them again.
    """
    cases = ApprovalRequest.objects.filter(status__in=OPEN_STATUSES).exclude(decisions__reviewer=user)
    if risk:
        cases = cases.filter(risk=risk)
    if workflow_name:
        cases = cases.filter(workflow_name=workflow_name)
    if status in OPEN_STATUSES:
        cases = cases.filter(status=status)
    if overdue:
        cases = cases.filter(due_at__lte=clock.now())
    return _with_counts(_search(cases, query)).order_by("due_at", "id")


def approvals_mine(user) -> QuerySet:
    """Open cases this reviewer has claimed."""
    cases = ApprovalRequest.objects.filter(status=ApprovalStatus.CLAIMED, assignee=user)
    return _with_counts(cases).order_by("due_at", "id")


def approvals_archive(*, query: str = "", status: str = "") -> QuerySet:
    """Closed cases (decided, expired, cancelled), latest first."""
    cases = ApprovalRequest.objects.filter(status__in=CLOSED_STATUSES)
    if status in CLOSED_STATUSES:
        cases = cases.filter(status=status)
    return _with_counts(_search(cases, query)).order_by("-closed_at", "-id")


def approval_get(request_id) -> ApprovalRequest:
    case = _with_counts(ApprovalRequest.objects.filter(pk=request_id)).first()
    if case is None:
        raise ApprovalNotFound(f"no approval request #{request_id}")
    return case


def approval_timeline(case: ApprovalRequest) -> list:
    """The run's journal, oldest first: what the process did before and after this case."""
    return run_journal(case.run_id)


def approval_decisions(case: ApprovalRequest):
    return list(case.decisions.select_related("reviewer").order_by("created_at", "id"))


def approval_audit(case: ApprovalRequest):
    return list(case.audit.order_by("created_at", "id"))


def approval_workflow_names() -> list[str]:
    return list(ApprovalRequest.objects.filter(status__in=OPEN_STATUSES)
                .order_by("workflow_name").values_list("workflow_name", flat=True).distinct())
