"""Celery entry points, thin: parse the id, call the engine; and the sender of their
messages (``DURABLE_DISPATCHER = "celery"``)."""

import logging

from celery import shared_task
from celery.signals import (
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
)
from django.conf import settings
from django.db import close_old_connections

from durable import conf
from durable.features import archive, audit_heads, schedules
from durable.runtime import executor, tracing
from durable.runtime.priorities import broker_priority
from durable.runtime.publisher import publisher
from durable.runtime.store.live import on_live_connection
from durable.runtime.sweep import sweep_due

log = logging.getLogger(__name__)


@shared_task(name="durable.advance", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance(run_id: str, queue: str | None = None, advances: int | None = None) -> str:
    """``queue``: the queue this message was sent to (none: the default queue); ``advances``:
    the run's count of advances when the sweep sent it (a copy that arrives late is dropped)."""
    return executor.advance(run_id, queue=queue or conf.default_queue(), advances=advances)


@shared_task(name="durable.sweep", ignore_result=True)
def sweep() -> int:
    return len(tick())


def tick() -> list[str]:
    """One tick of the sweep's worker: the runs that are due are dispatched, then the
    schedules that are due start their occurrences' runs (one indexed query when none is)."""
    run_ids = sweep_due()
    on_live_connection(schedules.fire_due)
    return run_ids


@shared_task(name="durable.retention", ignore_result=True)
def retention() -> int:
    """One bounded archive pass of DURABLE_RETENTION; nothing when retention is off."""
    report = archive.retention_pass()
    return report.runs if report is not None else 0


@shared_task(name="durable.audit_heads", ignore_result=True)
def audit_heads_export() -> int:
    """Append every audit chain's head to DURABLE_AUDIT_HEADS_SINK (outside the database)."""
    record = audit_heads.export_heads()
    return sum(len(heads) for heads in record["tables"].values())


def send_advance(
    run_id: str,
    *,
    delay: float = 0.0,
    queue: str | None = None,
    advances: int | None = None,
    priority: int | None = None,
) -> None:
    """The message names its queue, so the worker knows where it runs (see ``advance``);
    the takeover lane's messages name none: there the run advances as on the default queue.
    ``priority`` goes as the broker reads it (``priorities.broker_priority``)."""
    kwargs = {"queue": queue} if queue and queue != conf.takeover_queue() else {}
    if advances is not None:
        kwargs["advances"] = advances
    route = {"queue": queue} if queue else {}
    if priority is not None:
        message_priority = broker_priority(priority, settings.CELERY_BROKER_URL)
        if message_priority is not None:
            route["priority"] = message_priority
    try:
        advance.apply_async((run_id,), kwargs, countdown=delay or None, retry=False, **route)
    except Exception:
        log.warning(
            "run %s: could not send the advance message; the sweep will pick it up",
            run_id,
            exc_info=True,
        )


send_advance.takeover_lane = True
send_advance.priorities = True
send_advance.background = True  # a web process's callers wait for their commit only


@worker_init.connect
@worker_process_init.connect
def _send_in_line(**kwargs):
    """A worker sends its advances in line: before the task that sent them is acknowledged,
    and from a pool process that may end without running ``atexit`` (publisher.py)."""
    publisher.in_line = True


ENGINE_TASKS = frozenset(
    {"durable.advance", "durable.sweep", "durable.retention", "durable.audit_heads"}
)


@task_prerun.connect
@task_postrun.connect
def _close_broken_connections(sender=None, **kwargs):
    """Drop a connection that failed or outlived CONN_MAX_AGE, so the next advance opens a
    fresh one. Only around the engine's own tasks: other apps' tasks keep Celery's rules."""
    if getattr(sender, "name", None) in ENGINE_TASKS:
        close_old_connections()


# The trace context of whoever sends a task (a signal, a webhook) travels in its message's
# headers, for every task and not only the engine's: an app's task that signals a run is
# one trace with the advance it causes. Nothing is written when there is no trace.
_traced: dict[str, object] = {}


@before_task_publish.connect
def _carry_trace(headers=None, **kwargs):
    if headers is not None:
        tracing.inject(headers)


@task_prerun.connect
def _enter_trace(task_id=None, task=None, **kwargs):
    token = tracing.attach_from(task.request) if task is not None else None
    if token is not None:
        _traced[task_id] = token


@task_postrun.connect
def _leave_trace(task_id=None, **kwargs):
    tracing.detach(_traced.pop(task_id, None))
