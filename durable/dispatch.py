"""Sending "advance run X" once the caller's transaction commits.

The message is only a hint: a lost one delays the run until the sweep finds its
``wake_at`` due, it never loses the run.
"""
import logging

from django.db import transaction

from durable import conf

log = logging.getLogger(__name__)

# Run ids dispatched while DURABLE_DISPATCHER = "none" (tests read this to know what woke).
recorded: list[str] = []


def dispatch(run_id: str) -> None:
    mode = conf.dispatcher()
    if mode == "none":
        transaction.on_commit(lambda: recorded.append(run_id))
    elif mode == "celery":
        transaction.on_commit(lambda: send_advance(run_id), robust=True)
    else:
        raise ValueError(f"unknown DURABLE_DISPATCHER {mode!r} (expected 'celery' or 'none')")


def send_advance(run_id: str) -> None:
    from durable.tasks import advance

    try:
        advance.apply_async((run_id,), retry=False)
    except Exception:
        log.warning("run %s: could not send the advance message; the sweep will pick it up",
                    run_id, exc_info=True)
