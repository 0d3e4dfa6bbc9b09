"""Reads on approval requests for the reviewer UI, the admin and tests."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from approvals.errors import ApprovalNotFound
from approvals.models import (
    CLOSED_STATUSES,
    OPEN_STATUSES,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalStatus,
    Outcome,
    Risk,
)
from durable import clock
from durable.selectors import run_journal


def _with_counts(cases: QuerySet) -> QuerySet:
    """Each case with its number of approvals, counted for the page's cases only: a join and
    GROUP BY would count the votes of every closed case before the page is cut (1.4 s an
    archive page with 200,000 decided cases, benchmarks/pages.py)."""
    # Not the run: it may have moved to durable's archive (panels ask durable for it).
    approvals = (
        ApprovalDecision.objects.filter(request=OuterRef("pk"), outcome=Outcome.APPROVE)
        .order_by()
        .values("request")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return cases.select_related("assignee").annotate(approvals=Coalesce(Subquery(approvals), 0))


def _search(cases: QuerySet, query: str) -> QuerySet:
    query = (query or "").strip()
    if not query:
        return cases
    match = (
        Q(title__icontains=query)
        | Q(subject_id__icontains=query)
        | Q(run__id__icontains=query)
        | Q(closed_by__icontains=query)
        | Q(workflow_name__icontains=query)
    )
    if query.lstrip("#").isdigit():
        match |= Q(pk=int(query.lstrip("#")))
    return cases.filter(match)


SORTS = {
    "deadline": ("due_at", "id"),
    "risk": ("risk_rank", "due_at", "id"),  # high first
    "age": ("created_at", "id"),  # oldest first
}


def _routes():
    return ApprovalRequest.candidate_groups.through.objects.filter(
        approvalrequest_id=OuterRef("pk")
    )


def routed_to(cases: QuerySet, user) -> QuerySet:
    """Only the cases routed to one of ``user``'s groups, or to nobody in particular."""
    return cases.filter(~Exists(_routes()) | Exists(_routes().filter(group__in=user.groups.all())))


def _sorted(cases: QuerySet, sort: str) -> QuerySet:
    cases = cases.annotate(
        risk_rank=Case(
            When(risk=Risk.HIGH, then=Value(0)),
            When(risk=Risk.MEDIUM, then=Value(1)),
            default=Value(2),
            output_field=IntegerField(),
        )
    )
    return cases.order_by(*SORTS.get(sort, SORTS["deadline"]))


def approvals_open_for(
    user,
    *,
    risk: str = "",
    workflow_name: str = "",
    status: str = "",
    overdue: bool = False,
    query: str = "",
    assignee: str = "",
    group: str = "",
    sort: str = "deadline",
    following_up: bool = False,
    every_group: bool = False,
) -> QuerySet:
    """Open cases this reviewer can act on, soonest deadline first (or ``sort``: risk, age).

    Only cases routed to the reviewer's groups (``every_group``: all, for a supervisor). Cases the
    reviewer already approved (waiting for a second pair of eyes) are left out: they cannot act on
    them again. A case with a follow-up date ahead is hidden unless ``following_up`` asks for those
    only. ``assignee`` is "me", "none" or a username; ``group`` a candidate group's name.
    """
    now = clock.now()
    cases = ApprovalRequest.objects.filter(status__in=OPEN_STATUSES).exclude(
        decisions__reviewer=user
    )
    if not every_group:
        cases = routed_to(cases, user)
    if following_up:
        cases = cases.filter(follow_up_at__gt=now)
    else:
        cases = cases.filter(Q(follow_up_at__isnull=True) | Q(follow_up_at__lte=now))
    if assignee == "me":
        cases = cases.filter(assignee=user)
    elif assignee == "none":
        cases = cases.filter(assignee__isnull=True)
    elif assignee:
        cases = cases.filter(assignee__username=assignee)
    if group:
        cases = cases.filter(Exists(_routes().filter(group__name=group)))
    if risk:
        cases = cases.filter(risk=risk)
    if workflow_name:
        cases = cases.filter(workflow_name=workflow_name)
    if status in OPEN_STATUSES:
        cases = cases.filter(status=status)
    if overdue:
        cases = cases.filter(due_at__lte=now)
    return _sorted(_with_counts(_search(cases, query)), sort)


def approvals_mine(user) -> QuerySet:
    """Open cases this reviewer has claimed."""
    cases = ApprovalRequest.objects.filter(status=ApprovalStatus.CLAIMED, assignee=user)
    return _with_counts(cases).order_by("due_at", "id")


def approvals_archive(*, query: str = "", status: str = "", user=None) -> QuerySet:
    """Closed cases (decided, expired, cancelled), latest first; only those routed to ``user``'s
    groups when given (a supervisor's archive is everything)."""
    cases = ApprovalRequest.objects.filter(status__in=CLOSED_STATUSES)
    if user is not None:
        cases = routed_to(cases, user)
    if status in CLOSED_STATUSES:
        cases = cases.filter(status=status)
    return _with_counts(_search(cases, query)).order_by("-closed_at", "-id")


def approval_get(request_id) -> ApprovalRequest:
    case = _with_counts(ApprovalRequest.objects.filter(pk=request_id)).first()
    if case is None:
        raise ApprovalNotFound(f"no approval request #{request_id}")
    return case


def approval_next_for(user, *, after: int | None = None) -> ApprovalRequest | None:
    """The case a reviewer takes next: the first of their queue in its order (soonest
    deadline first), skipping ``after`` and cases a colleague holds."""
    cases = approvals_open_for(user).exclude(Q(status=ApprovalStatus.CLAIMED) & ~Q(assignee=user))
    if after is not None:
        cases = cases.exclude(pk=after)
    return cases.first()


def approval_timeline(case: ApprovalRequest) -> list:
    """The run's journal, oldest first: what the process did before and after this case."""
    return run_journal(case.run_id)


def approval_decisions(case: ApprovalRequest):
    return list(case.decisions.select_related("reviewer").order_by("created_at", "id"))


def approval_audit(case: ApprovalRequest):
    return list(case.audit.order_by("created_at", "id"))


def approval_workflow_names() -> list[str]:
    return list(
        ApprovalRequest.objects.filter(status__in=OPEN_STATUSES)
        .order_by("workflow_name")
        .values_list("workflow_name", flat=True)
        .distinct()
    )


def approval_group_names() -> list[str]:
    """Groups open cases are routed to, for the queue's filter."""
    through = ApprovalRequest.candidate_groups.through.objects
    return sorted(
        set(
            through.filter(approvalrequest__status__in=OPEN_STATUSES).values_list(
                "group__name", flat=True
            )
        )
    )


def approval_assignee_names() -> list[str]:
    return sorted(
        set(
            ApprovalRequest.objects.filter(status=ApprovalStatus.CLAIMED).values_list(
                "assignee__username", flat=True
            )
        )
    )


def stale_claim_age() -> timedelta:
    return timedelta(hours=getattr(settings, "APPROVALS_STALE_CLAIM_HOURS", 4))


def sla_age() -> timedelta:
    return timedelta(hours=getattr(settings, "APPROVALS_SLA_HOURS", 24))


def approvals_claimed() -> QuerySet:
    """Every claimed case, oldest claim first, for the supervisor (``stale`` marks those
    held longer than APPROVALS_STALE_CLAIM_HOURS)."""
    stale_before = clock.now() - stale_claim_age()
    cases = ApprovalRequest.objects.filter(status=ApprovalStatus.CLAIMED).annotate(
        stale=Case(When(claimed_at__lte=stale_before, then=Value(True)), default=Value(False))
    )
    return _with_counts(cases).order_by("claimed_at", "id")


def approval_is_stale(case: ApprovalRequest) -> bool:
    return bool(
        case.status == ApprovalStatus.CLAIMED
        and case.claimed_at
        and case.claimed_at <= clock.now() - stale_claim_age()
    )


def approval_eligible_reviewers(case: ApprovalRequest):
    """Who a supervisor may hand the case to: active reviewers routed to it who did not vote on
    it, and not the current holder."""
    from approvals.services import COMPLIANCE_GROUP

    users = get_user_model().objects.filter(is_active=True, groups__name=COMPLIANCE_GROUP)
    groups = list(case.candidate_groups.all())
    if groups:
        users = users.filter(pk__in=get_user_model().objects.filter(groups__in=groups).values("pk"))
    users = users.exclude(
        pk__in=ApprovalDecision.objects.filter(request=case).values("reviewer_id")
    )
    if case.assignee_id:
        users = users.exclude(pk=case.assignee_id)
    return list(users.distinct().order_by("username"))


def approvals_open_of_run(run_id: str) -> QuerySet:
    """The cases a run waits on right now (a CNPJ change re-checks them)."""
    return ApprovalRequest.objects.filter(run_id=run_id, status__in=OPEN_STATUSES).order_by("pk")


def reviewer_language(user) -> str | None:
    """The language this user chose for the UI, or None (the project's default applies)."""
    from approvals.models import ReviewerPreference

    return (
        ReviewerPreference.objects.filter(user_id=user.pk)
        .values_list("language", flat=True)
        .first()
    )
