"""What a worker that died holding a run leaves behind, for the crash-loop tests."""

from durable import clock
from durable.models import RunStatus, WorkflowRun


def as_if_its_worker_died(run, *, takeovers: int, at: int) -> None:
    """The run is left RUNNING under an expired lease, after ``takeovers`` earlier takeovers
    at position ``at``."""
    WorkflowRun.objects.filter(pk=run.id).update(
        status=RunStatus.RUNNING,
        lease_expires_at=clock.now(),
        recoveries=takeovers,
        recovery_position=at,
    )
