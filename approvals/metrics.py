"""The supervisor dashboard's figures as Prometheus metrics, registered on durable's /metrics.

No person's name unless the deployment asks for it: whoever scrapes /metrics (any staff
user, Prometheus, everyone who reads its dashboards) is not the supervisor.
"""

from django.conf import settings
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from approvals import figures
from durable import clock


class ApprovalsCollector:
    """Reads approvals' state at scrape time, like durable's own collector."""

    def collect(self):
        now = clock.now()
        backlog = GaugeMetricFamily(
            "approvals_backlog", "Open cases by candidate group and age.", labels=["group", "age"]
        )
        past_sla = GaugeMetricFamily(
            "approvals_past_sla",
            "Open cases older than APPROVALS_SLA_HOURS, by candidate group.",
            labels=["group"],
        )
        for row in figures.backlog(now):
            for (_label, key, _bound), count in zip(figures.AGE_BUCKETS, row.counts):
                backlog.add_metric([row.group, key], count)
            past_sla.add_metric([row.group], row.past_sla)
        yield backlog
        yield past_sla
        yield GaugeMetricFamily(
            "approvals_claims_stale",
            "Claims held longer than APPROVALS_STALE_CLAIM_HOURS.",
            value=figures.stale_claims(now),
        )
        yield decisions_by_outcome(
            named=getattr(settings, "APPROVALS_METRICS_REVIEWER_NAMES", False)
        )
        latency = GaugeMetricFamily(
            "approvals_time_to_decision_seconds",
            "Time from opening to decision of the cases decided in an ISO week (Monday's date).",
            labels=["week", "quantile"],
        )
        for week in figures.weekly_time_to_decision(now):
            for quantile, value in (("0.5", week.p50), ("0.9", week.p90)):
                if value is not None:
                    latency.add_metric([week.start.isoformat(), quantile], value)
        yield latency


def decisions_by_outcome(*, named: bool) -> CounterMetricFamily:
    """Votes by outcome; by reviewer too only when ``named`` (APPROVALS_METRICS_REVIEWER_NAMES).

    The same metric either way, so ``sum by (outcome)`` reads both; the per-reviewer view
    stays on the dashboard, behind the supervisor's sign-in.
    """
    decisions = CounterMetricFamily(
        "approvals_decisions",
        "Reviewers' votes by outcome" + (" and reviewer." if named else "."),
        labels=["reviewer", "outcome"] if named else ["outcome"],
    )
    totals: dict[str, int] = {}
    for tally in figures.decisions_per_reviewer(superseded_apart=False):
        for outcome, count in tally.by_outcome.items():
            if named:
                decisions.add_metric([tally.reviewer, outcome], count)
            totals[outcome] = totals.get(outcome, 0) + count
    if not named:
        for outcome, count in totals.items():
            decisions.add_metric([outcome], count)
    return decisions
