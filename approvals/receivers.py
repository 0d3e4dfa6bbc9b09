"""Keeps cases in step with their runs: a cancelled process leaves no case open in the queue."""
from django.dispatch import receiver

from approvals import services
from approvals.models import CLOSED_STATUSES, ApprovalRequest
from durable.hooks import run_cancelled


@receiver(run_cancelled, dispatch_uid="approvals.cancel_cases_of_cancelled_run")
def cancel_cases_of_cancelled_run(sender, run_id: str, reason: str, actor: str, **kwargs):
    open_cases = ApprovalRequest.objects.filter(run_id=run_id).exclude(status__in=CLOSED_STATUSES)
    for case_id in open_cases.values_list("pk", flat=True):
        services.approval_cancel(case_id, actor=actor, reason=f"the process was cancelled: {reason}".strip(": "))
