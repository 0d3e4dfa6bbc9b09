"""Keeps cases in step with their runs: a cancelled process leaves no case open in the queue,
and no approval or rejection on record that it never acted on."""
from django.dispatch import receiver

from approvals import services
from approvals.models import CLOSED_STATUSES, ApprovalRequest, ApprovalStatus
from durable.hooks import run_cancelled


@receiver(run_cancelled, dispatch_uid="approvals.cancel_cases_of_cancelled_run")
def cancel_cases_of_cancelled_run(sender, run_id: str, reason: str, actor: str, **kwargs):
    why = f"the process was cancelled: {reason}".strip(": ")
    open_cases = ApprovalRequest.objects.filter(run_id=run_id).exclude(status__in=CLOSED_STATUSES)
    for case_id in open_cases.values_list("pk", flat=True):
        services.approval_cancel(case_id, actor=actor, reason=why)
    # An approval or a rejection ends the run when the run reads it, so a run cancelled
    # with one on record never acted on it: the cancel won the race.
    decided = ApprovalRequest.objects.filter(run_id=run_id, status__in=[ApprovalStatus.APPROVED,
                                                                          ApprovalStatus.REJECTED])
    for case_id in decided.values_list("pk", flat=True):
        services.approval_supersede(case_id, actor=actor, reason=why)
