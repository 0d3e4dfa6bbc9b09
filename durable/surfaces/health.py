"""Health of what the engine needs: the database, the broker, and a sweep that keeps running.

Read by ``manage.py durable health`` (for systemd, a load balancer or a cron probe). Each
check answers on its own: a database outage must not hide a broker outage, or the reverse.
Apps add their own checks with ``register_health_check`` (the engine imports no app).
"""

import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from durable import clock
from durable.models import ACTIVE_STATUSES, WorkflowRun
from durable.runtime.sweep import last_sweep


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def sweep_max_age_seconds() -> float:
    """How old the last sweep may be: many ticks, never less than half a minute."""
    return max(30.0, 10 * float(getattr(settings, "DURABLE_SWEEP_INTERVAL_SECONDS", 1)))


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as error:
        return Check("database", False, f"unreachable: {type(error).__name__}: {error}".strip())
    if pending:
        return Check(
            "database", False, f"{len(pending)} migration(s) not applied (manage.py migrate)"
        )
    return Check("database", True, f"{connection.vendor}, migrations applied")


def check_broker(url: str | None = None, *, timeout: float = 5.0) -> Check:
    from celery import current_app

    try:
        with current_app.connection_for_write(url) as broker:
            broker.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0.5, timeout=timeout
            )
            transport = broker.transport_cls
    except Exception as error:
        return Check("broker", False, f"unreachable: {type(error).__name__}: {error}".strip())
    return Check("broker", True, f"connected ({transport})")


def check_sweep(*, max_age: float | None = None) -> Check:
    max_age = sweep_max_age_seconds() if max_age is None else max_age
    last = last_sweep()
    if not last or "at" not in last:
        return Check("sweep", False, "no sweep recorded: is beat running, and a worker consuming?")
    age = time.time() - last["at"]
    if age > max_age:
        return Check("sweep", False, f"the last sweep ran {age:.0f} s ago (limit {max_age:.0f} s)")
    return Check(
        "sweep", True, f"last sweep {age:.1f} s ago, {last.get('dispatched', 0)} dispatched"
    )


def check_overdue(*, max_overdue: float = 120.0) -> Check:
    """Runs whose time came long ago: the sweep dispatches them but no worker advances them."""
    try:
        overdue = WorkflowRun.objects.filter(
            status__in=ACTIVE_STATUSES, wake_at__lt=clock.now() - timedelta(seconds=max_overdue)
        ).count()
    except Exception as error:
        return Check("overdue runs", False, f"cannot count: {type(error).__name__}")
    if overdue:
        return Check(
            "overdue runs", False, f"{overdue} run(s) due more than {max_overdue:.0f} s ago"
        )
    return Check("overdue runs", True, f"none due more than {max_overdue:.0f} s ago")


_app_checks: list = []


def register_health_check(check) -> None:
    """Add an app's check to ``durable health``: a callable returning a Check or a list of
    them. Idempotent, so an AppConfig.ready() that runs twice registers once."""
    if check not in _app_checks:
        _app_checks.append(check)


def _app_results(check) -> list[Check]:
    try:
        result = check()
    except Exception as error:  # one app's broken check must not hide the others
        return [
            Check(
                getattr(check, "__name__", "app check"),
                False,
                f"cannot check: {type(error).__name__}: {error}".strip(),
            )
        ]
    return list(result) if isinstance(result, (list, tuple)) else [result]


def checks(*, max_overdue: float = 120.0) -> list[Check]:
    results = [
        check_database(),
        check_broker(),
        check_sweep(),
        check_overdue(max_overdue=max_overdue),
    ]
    for check in _app_checks:
        results.extend(_app_results(check))
    return results
