"""The supervisor dashboard's figures as Prometheus metrics, registered on durable's /metrics."""
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from approvals import figures
from durable import clock


class ApprovalsCollector:
    """Reads approvals' state at scrape time, like durable's own collector."""

    def collect(self):
        now = clock.now()
        backlog = GaugeMetricFamily("approvals_backlog", "Open cases by candidate group and age.",
                                    labels=["group", "age"])
        past_sla = GaugeMetricFamily("approvals_past_sla", "Open cases older than APPROVALS_SLA_HOURS, "
                                     "by candidate group.", labels=["group"])
        for row in figures.backlog(now):
            for (_label, key, _bound), count in zip(figures.AGE_BUCKETS, row.counts):
                backlog.add_metric([row.group, key], count)
            past_sla.add_metric([row.group], row.past_sla)
        yield backlog
        yield past_sla
        yield GaugeMetricFamily("approvals_claims_stale", "Claims held longer than "
                                "APPROVALS_STALE_CLAIM_HOURS.", value=figures.stale_claims(now))
        decisions = CounterMetricFamily("approvals_decisions", "Reviewers' votes by outcome.",
                                        labels=["reviewer", "outcome"])
        for tally in figures.decisions_per_reviewer(superseded_apart=False):
            for outcome, count in tally.by_outcome.items():
                decisions.add_metric([tally.reviewer, outcome], count)
        yield decisions
        latency = GaugeMetricFamily("approvals_time_to_decision_seconds", "Time from opening to decision "
                                    "of the cases decided in an ISO week (Monday's date).",
                                    labels=["week", "quantile"])
        for week in figures.weekly_time_to_decision(now):
            for quantile, value in (("0.5", week.p50), ("0.9", week.p90)):
                if value is not None:
                    latency.add_metric([week.start.isoformat(), quantile], value)
        yield latency
