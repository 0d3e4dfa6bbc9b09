"""Which run and which step this thread or task is in: two context variables, and nothing
that touches the database, so the logging filter can read them before the app registry is
ready and strict mode can ask them on every guarded call."""

import contextvars
from dataclasses import dataclass

running_context: contextvars.ContextVar["object | None"] = contextvars.ContextVar(
    "durable_replay_context", default=None
)
running_step: contextvars.ContextVar["StepInfo | None"] = contextvars.ContextVar(
    "durable_current_step", default=None
)


@dataclass(frozen=True)
class StepInfo:
    """What a running step may know about itself (its key is how receivers dedupe)."""

    run_id: str
    position: int
    name: str
    attempt: int
    idempotency_key: str


def current():
    """The replay context of the run this code is in (``durable.runtime.context.ReplayContext``), or
    None."""
    return running_context.get()


def current_step() -> StepInfo | None:
    return running_step.get()
