"""``DURABLE_DISPATCHER = "inline"``: a run advances in the process whose commit dispatched it.

For a first project, a script, a one-process deployment: no broker, no worker. Every step
runs here whatever its queue; a timer (``delay``) is the sweep's, as with any dispatcher.
"""

from durable.runtime import executor


def advance_inline(run_id: str, *, delay: float = 0.0, queue: str | None = None) -> None:
    if delay:
        return
    if executor.advance(run_id, owner="inline") == executor.Outcome.RELEASED:
        executor.advance(
            run_id, owner="inline"
        )  # it used its replays for one advance: once more, as drive() does
