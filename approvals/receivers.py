"""Keeps cases in step with their runs: a cancelled process leaves no case open in the queue,
and no approval or rejection on record that it never acted on."""

from django.dispatch import receiver

from approvals import services
from approvals.models import CLOSED_STATUSES, ApprovalRequest, ApprovalStatus
from approvals.workflow import decisions_taken
from durable.hooks import run_cancelled


@receiver(run_cancelled, dispatch_uid="approvals.cancel_cases_of_cancelled_run")
def cancel_cases_of_cancelled_run(sender, run_id: str, reason: str, actor: str, **kwargs):
    why = f"the process was cancelled: {reason}".strip(": ")
    open_cases = ApprovalRequest.objects.filter(run_id=run_id).exclude(status__in=CLOSED_STATUSES)
    for case_id in open_cases.values_list("pk", flat=True):
        services.approval_cancel(case_id, actor=actor, reason=why)
    # An approval or a rejection the run never took: the cancel won the race, and nothing was
    # done with the decision. One it took may have had effects (an account opened before an
    # operator's hard cancel): it stays as decided.
    decided = set(
        ApprovalRequest.objects.filter(
            run_id=run_id, status__in=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED]
        ).values_list("pk", flat=True)
    )
    for case_id in sorted(decided - decisions_taken(run_id)) if decided else []:
        services.approval_supersede(case_id, actor=actor, reason=why)
