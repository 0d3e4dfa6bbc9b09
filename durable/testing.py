"""In-process driving of runs for tests and scripts: no broker, no worker, a fake clock."""

from contextlib import contextmanager

from durable import conf
from durable.clock import fake_clock
from durable.models import WorkflowRun
from durable.runtime import executor, registry

__all__ = [
    "dispatch_advances",
    "dispatch_priorities",
    "dispatch_queues",
    "dispatched",
    "drive",
    "fake_clock",
    "override_workflow",
    "record_dispatch",
]

# What was dispatched with DURABLE_DISPATCHER = "none" (this module's record_dispatch), in
# order, and each run's last delay and queue: tests read them to know what would have woken.
dispatched: list[str] = []
dispatch_delays: dict[str, float] = {}
dispatch_queues: dict[str, str] = {}
dispatch_advances: dict[str, int | None] = {}
dispatch_priorities: dict[str, int | None] = {}


def record_dispatch(
    run_id: str,
    *,
    delay: float = 0.0,
    queue: str | None = None,
    advances: int | None = None,
    priority: int | None = None,
) -> None:
    """The dispatcher for tests: records the message instead of sending it."""
    dispatched.append(run_id)
    dispatch_delays[run_id] = delay
    dispatch_queues[run_id] = queue or conf.default_queue()
    dispatch_advances[run_id] = advances
    dispatch_priorities[run_id] = priority


record_dispatch.takeover_lane = True  # as send_advance: a takeover is recorded on its lane
record_dispatch.priorities = True


def drive(run_id: str, *, owner: str = "driver", queue: str | None = None) -> WorkflowRun:
    """Advance the run in this process until it waits or ends, and return it fresh.

    Without ``queue`` every step runs here, whatever queue it asks for; with one, the
    advance behaves as a worker on that queue (it hands the run on at a step of another).
    """
    outcome = executor.advance(run_id, owner=owner, queue=queue)
    if outcome == executor.Outcome.RELEASED:
        executor.advance(run_id, owner=owner, queue=queue)
    return WorkflowRun.objects.get(pk=run_id)


@contextmanager
def override_workflow(fn, *, name: str, version: int = 1):
    """Swap the code registered for ``name``/``version`` (a deploy, in a test)."""
    previous = registry._definitions.get(name, {}).get(version)
    definition = registry.register(
        registry.WorkflowDefinition(name=name, version=version, fn=fn), replace=True
    )
    try:
        yield definition
    finally:
        if previous is None:
            registry.unregister(name, version)
        else:
            registry.register(previous, replace=True)
