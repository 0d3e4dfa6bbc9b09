"""Celery entry points, thin: parse the id, call the engine."""
from celery import shared_task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

from durable import archive, conf, executor, timers


@shared_task(name="durable.advance", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance(run_id: str, queue: str | None = None) -> str:
    """``queue``: the queue this message was sent to (none: the default queue)."""
    return executor.advance(run_id, queue=queue or conf.default_queue())


@shared_task(name="durable.sweep", ignore_result=True)
def sweep() -> int:
    return len(timers.sweep_due())


@shared_task(name="durable.retention", ignore_result=True)
def retention() -> int:
    """One bounded archive pass of DURABLE_RETENTION; nothing when retention is off."""
    report = archive.retention_pass()
    return report.runs if report is not None else 0


ENGINE_TASKS = frozenset({"durable.advance", "durable.sweep", "durable.retention"})


@task_prerun.connect
@task_postrun.connect
def _close_broken_connections(sender=None, **kwargs):
    """Drop a connection that failed or outlived CONN_MAX_AGE, so the next advance opens a
    fresh one. Only around the engine's own tasks: other apps' tasks keep Celery's rules."""
    if getattr(sender, "name", None) in ENGINE_TASKS:
        close_old_connections()
