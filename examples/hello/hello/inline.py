"""A dispatcher that advances a run at once, in this process: no broker, no worker.

``DURABLE_DISPATCHER`` names it; the engine calls it once the transaction that started or
signalled the run has committed. A timer (``delay`` > 0) is left to the sweep, which this
example does not run: the workflow's timeout is far longer than the example.
"""
from durable.testing import drive


def advance_now(run_id: str, *, delay: float = 0.0, queue: str | None = None) -> None:
    if delay:
        return
    drive(run_id)
