"""Sending "advance run X" once the caller's transaction commits.

The message is only a hint: a lost one delays the run until the sweep finds its
``wake_at`` due, it never loses the run.
"""
import logging

from django.db import transaction

from durable import conf

log = logging.getLogger(__name__)

# What was dispatched while DURABLE_DISPATCHER = "none" (tests read it to know what woke).
recorded: list[str] = []
delays: dict[str, float] = {}


def dispatch(run_id: str, *, delay: float = 0.0) -> None:
    """Send "advance run X" after commit; ``delay`` (under one sweep tick) for timers."""
    mode = conf.dispatcher()
    if mode == "none":
        def record():
            recorded.append(run_id)
            delays[run_id] = delay

        transaction.on_commit(record)
    elif mode == "celery":
        transaction.on_commit(lambda: send_advance(run_id, delay=delay), robust=True)
    else:
        raise ValueError(f"unknown DURABLE_DISPATCHER {mode!r} (expected 'celery' or 'none')")


def send_advance(run_id: str, *, delay: float = 0.0) -> None:
    from durable.tasks import advance

    try:
        advance.apply_async((run_id,), countdown=delay or None, retry=False)
    except Exception:
        log.warning("run %s: could not send the advance message; the sweep will pick it up",
                    run_id, exc_info=True)
