"""Prometheus metrics of the engine, computed from the database at scrape time.

Celery workers are separate processes (often on other machines), so in-process counters
would only ever see the web process. The database already holds every fact (runs,
journal attempts, signals, advances), so a collector reads a few aggregate queries per
scrape. Only the sweep's duration is not in a row: the sweep stores it in a cache that
web and workers share (the ``durable`` cache alias, falling back to ``default``).

Figures over recent activity (advance latency) read a bounded number of the newest rows by
primary key, never a time range over an unindexed column of a table that grows forever.
"""

import hmac
import logging
from datetime import timedelta

from django.db.models import Count, F, Min, OuterRef, Subquery, Sum
from django.http import HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from durable import clock, conf
from durable.models import (
    ACTIVE_STATUSES,
    ArchivedRun,
    EntryKind,
    EntryStatus,
    JournalEntry,
    RunStatus,
    Signal,
    WorkflowRun,
)
from durable.quantiles import nearest_ranks
from durable.runtime.sweep import last_sweep

log = logging.getLogger(__name__)

# Advance latency: the wakes of the last LATENCY_WINDOW, found among the newest
# LATENCY_ROWS signals and journal entries (a busier engine shows a shorter window).
LATENCY_WINDOW = timedelta(minutes=15)
LATENCY_ROWS = 5000
QUANTILES = (0.5, 0.95, 0.99)


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

        takeovers = CounterMetricFamily(
            "durable_lease_takeovers",
            "Leases taken over after they expired (the holder died or froze), archived runs "
            "included.",
            labels=["workflow"],
        )
        taken_over = lease_takeovers()
        for workflow in sorted(set(workflows) | set(taken_over)):
            takeovers.add_metric([workflow], taken_over.get(workflow, 0))
        yield takeovers

        latency = GaugeMetricFamily(
            "durable_advance_latency_seconds",
            "Delay from a run's wake (a signal it waits for arrives; a timer is due) to the "
            f"advance that takes it, over the last {LATENCY_WINDOW.seconds // 60} minutes.",
            labels=["cause", "quantile"],
        )
        now = clock.now()
        for cause, delays in (("signal", signal_delays(now)), ("timer", timer_delays(now))):
            for quantile, value in zip(QUANTILES, nearest_ranks(delays, *QUANTILES)):
                if value is not None:  # nothing woke in the window: no series
                    latency.add_metric([cause, str(quantile)], value)
        yield latency

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


def lease_takeovers() -> dict[str, int]:
    """Takeovers by workflow, hot and archived runs read in one statement: a run the archive
    moves between two reads would make the counter dip, which Prometheus takes for a reset."""
    hot = (
        WorkflowRun.objects.filter(takeovers__gt=0)
        .order_by()
        .values("workflow_name")
        .annotate(n=Sum("takeovers"))
    )
    archived = (
        ArchivedRun.objects.filter(takeovers__gt=0)
        .order_by()
        .values("workflow_name")
        .annotate(n=Sum("takeovers"))
    )
    totals: dict[str, int] = {}
    for row in hot.union(archived, all=True):
        totals[row["workflow_name"]] = totals.get(row["workflow_name"], 0) + row["n"]
    return totals


def signal_delays(now) -> list[float]:
    """Seconds from a signal's arrival to its consumption, for the signals of the window that
    found their run waiting for them. One that came before the run waited (buffered) is
    consumed when the body gets there, which says nothing about the engine."""
    waited_since = JournalEntry.objects.filter(
        run_id=OuterRef("run_id"), position=OuterRef("consumed_position"), kind=EntryKind.SIGNAL
    ).values("started_at")[:1]
    newest = (
        Signal.objects.order_by("-id")
        .annotate(waited_since=Subquery(waited_since))
        .values_list("created_at", "consumed_at", "waited_since")[:LATENCY_ROWS]
    )
    since = now - LATENCY_WINDOW
    return [
        (consumed - arrived).total_seconds()
        for arrived, consumed, waited in newest
        if consumed is not None and consumed >= since and waited is not None and waited <= arrived
    ]


def timer_delays(now) -> list[float]:
    """Seconds from a sleep's due time to the advance that passed it, for the sleeps that
    ended in the window. A sleep's entry was written when it began, maybe days ago; the
    entry after it is written by the advance that woke it, so the newest entries find it."""
    before = JournalEntry.objects.filter(
        run_id=OuterRef("run_id"),
        position=OuterRef("position") - 1,
        kind=EntryKind.SLEEP,
        status=EntryStatus.COMPLETED,
        wake_at__gt=F("created_at"),  # a zero sleep never waited
    )
    newest = (
        JournalEntry.objects.order_by("-id")
        .annotate(
            due=Subquery(before.values("wake_at")[:1]),
            woke=Subquery(before.values("updated_at")[:1]),
        )
        .values_list("due", "woke")[:LATENCY_ROWS]
    )
    since = now - LATENCY_WINDOW
    return [
        max((woke - due).total_seconds(), 0.0)
        for due, woke in newest
        if due is not None and woke >= since
    ]


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
