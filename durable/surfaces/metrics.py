"""Prometheus metrics of the engine, computed from the database at scrape time.

Celery workers are separate processes (often on other machines), so in-process counters
would only ever see the web process. The database already holds every fact (runs,
journal attempts, signals, advances), so a collector reads a few aggregate queries per
scrape. Only the sweep's duration is not in a row: the sweep stores it in a cache that
web and workers share (the ``durable`` cache alias, falling back to ``default``).
"""

import hmac
import logging

from django.db.models import Count, Min, Sum
from django.http import HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from durable import clock, conf
from durable.models import ACTIVE_STATUSES, EntryKind, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.runtime.sweep import last_sweep

log = logging.getLogger(__name__)


class DurableCollector:
    """Reads the engine's state from the database whenever Prometheus scrapes."""

    def collect(self):
        runs = GaugeMetricFamily(
            "durable_runs", "Runs by workflow and status.", labels=["workflow", "status"]
        )
        counts = {
            (row["workflow_name"], row["status"]): row["n"]
            for row in WorkflowRun.objects.order_by()
            .values("workflow_name", "status")
            .annotate(n=Count("id"))
        }
        workflows = sorted({workflow for workflow, _ in counts})
        for workflow in workflows:
            for (
                status
            ) in RunStatus.values:  # zeros too, so a status that empties reads 0, not absent
                runs.add_metric([workflow, status], counts.get((workflow, status), 0))
        yield runs

        blocked = sum(n for (_, status), n in counts.items() if status == RunStatus.BLOCKED)
        yield GaugeMetricFamily(
            "durable_runs_blocked",
            "Runs blocked by a replay divergence (they need a code fix or an operator).",
            value=blocked,
        )

        steps = CounterMetricFamily(
            "durable_steps_executed", "Step executions (every attempt).", labels=["workflow"]
        )
        retries = CounterMetricFamily(
            "durable_step_retries", "Step executions after the first attempt.", labels=["workflow"]
        )
        rows = (
            JournalEntry.objects.filter(kind=EntryKind.STEP)
            .order_by()
            .values("run__workflow_name")
            .annotate(attempts=Sum("attempt"), entries=Count("id"))
        )
        for row in rows:
            attempts = row["attempts"] or 0
            steps.add_metric([row["run__workflow_name"]], attempts)
            retries.add_metric([row["run__workflow_name"]], max(attempts - row["entries"], 0))
        yield steps
        yield retries

        advances = CounterMetricFamily(
            "durable_advances",
            "Advances (replays of a run's body from its journal).",
            labels=["workflow"],
        )
        for row in (
            WorkflowRun.objects.order_by().values("workflow_name").annotate(total=Sum("advances"))
        ):
            advances.add_metric([row["workflow_name"]], row["total"] or 0)
        yield advances

        signals = CounterMetricFamily(
            "durable_signals_received",
            "Signals recorded (a deduplicated redelivery counts once).",
            labels=["workflow"],
        )
        for row in Signal.objects.order_by().values("run__workflow_name").annotate(n=Count("id")):
            signals.add_metric([row["run__workflow_name"]], row["n"])
        yield signals
        yield GaugeMetricFamily(
            "durable_signals_pending",
            "Signals not yet consumed by their run.",
            value=Signal.objects.filter(consumed_position__isnull=True).count(),
        )

        now = clock.now()
        oldest_due = WorkflowRun.objects.filter(
            wake_at__lte=now, status__in=ACTIVE_STATUSES
        ).aggregate(oldest=Min("wake_at"))["oldest"]
        lag = (now - oldest_due).total_seconds() if oldest_due else 0.0
        yield GaugeMetricFamily(
            "durable_sweep_lag_seconds",
            "Age of the oldest wake_at that is due and not yet dispatched (0 when none is due).",
            value=max(lag, 0.0),
        )

        sweep = last_sweep()
        if sweep:
            yield GaugeMetricFamily(
                "durable_sweep_last_duration_seconds",
                "How long the last sweep took.",
                value=sweep["duration"],
            )
            yield GaugeMetricFamily(
                "durable_sweep_last_dispatched",
                "Runs the last sweep dispatched.",
                value=sweep["dispatched"],
            )
            yield GaugeMetricFamily(
                "durable_sweep_last_timestamp_seconds",
                "Unix time of the last sweep.",
                value=sweep["at"],
            )
            if sweep.get("gap") is not None:
                yield GaugeMetricFamily(
                    "durable_sweep_last_gap_seconds",
                    "Seconds between the last sweep and the one before it.",
                    value=sweep["gap"],
                )
            yield CounterMetricFamily(
                "durable_sweep_late",
                "Sweeps that ran more than twice the "
                "interval after the one before (their queue or worker was "
                "behind), since the cache was last emptied.",
                value=sweep.get("late", 0),
            )


_app_collectors: list = []


def register_collector(collector) -> None:
    """Add an app's collector to /metrics (approvals registers its figures); idempotent by class,
    so an AppConfig.ready() that runs twice registers once. The engine imports no app."""
    if not any(type(existing) is type(collector) for existing in _app_collectors):
        _app_collectors.append(collector)


def render() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DurableCollector())
    for collector in _app_collectors:
        registry.register(collector)
    return generate_latest(registry)


def _bearer_token_ok(request) -> bool:
    expected = conf.metrics_token()
    header = request.headers.get("Authorization", "")
    if not expected or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), expected.encode())


def metrics_view(request):
    """GET /metrics: for a staff session, or ``Authorization: Bearer <DURABLE_METRICS_TOKEN>``."""
    user = getattr(request, "user", None)
    if not (_bearer_token_ok(request) or (user is not None and user.is_active and user.is_staff)):
        if user is not None and user.is_authenticated:
            return HttpResponse("staff only\n", status=403, content_type="text/plain")
        response = HttpResponse("authentication required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    return HttpResponse(render(), content_type=CONTENT_TYPE_LATEST)
