"""The supervisor dashboard's figures, read from the database: one source for the page and /metrics.

Reads only. Percentiles are the nearest rank: PostgreSQL's percentile_disc there, the same
rule in Python on SQLite, so both give the same answer.
"""

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import Case, CharField, Count, F, Value, When
from django.utils.formats import date_format, get_format
from django.utils.translation import gettext_lazy as _

from approvals.models import (
    DECIDED_STATUSES,
    OPEN_STATUSES,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalStatus,
    Outcome,
)
from approvals.selectors import sla_age, stale_claim_age
from durable import clock
from durable.quantiles import nearest_rank

# (label for the page, Prometheus label, upper bound of the age in hours; None: no bound)
AGE_BUCKETS = [
    (_("under 4 h"), "lt_4h", 4),
    (_("4 to 24 h"), "4h_24h", 24),
    (_("1 to 3 days"), "1d_3d", 72),
    (_("over 3 days"), "gt_3d", None),
]
ANY_GROUP = "(any reviewer)"
WEEKS = 8


@dataclass
class BacklogRow:
    group: str
    counts: list[int]  # one per AGE_BUCKETS entry
    past_sla: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass
class Week:
    start: date
    decided: int
    p50: float | None  # seconds from opening to decision
    p90: float | None

    @property
    def p50_hours(self) -> float | None:
        return None if self.p50 is None else round(self.p50 / 3600, 1)

    @property
    def p90_hours(self) -> float | None:
        return None if self.p90 is None else round(self.p90 / 3600, 1)


@dataclass
class ReviewerTally:
    reviewer: str
    by_outcome: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_outcome.values())


def _bucket(age: timedelta) -> int:
    hours = age.total_seconds() / 3600
    for index, (_label, _key, bound) in enumerate(AGE_BUCKETS):
        if bound is None or hours < bound:
            return index
    return len(AGE_BUCKETS) - 1


def _groups_of(case_ids) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    rows = ApprovalRequest.candidate_groups.through.objects.filter(approvalrequest_id__in=case_ids)
    for case_id, name in rows.values_list("approvalrequest_id", "group__name"):
        groups.setdefault(case_id, []).append(name)
    return groups


def backlog(now: datetime | None = None) -> list[BacklogRow]:
    """Open cases by candidate group and age (a case routed to two groups counts in both)."""
    now = now or clock.now()
    cases = list(
        ApprovalRequest.objects.filter(status__in=OPEN_STATUSES).values_list("pk", "created_at")
    )
    groups = _groups_of([pk for pk, _created in cases])
    rows: dict[str, BacklogRow] = {}
    for pk, created_at in cases:
        for group in groups.get(pk) or [ANY_GROUP]:
            row = rows.setdefault(group, BacklogRow(group, [0] * len(AGE_BUCKETS)))
            row.counts[_bucket(now - created_at)] += 1
            if now - created_at >= sla_age():
                row.past_sla += 1
    return [rows[name] for name in sorted(rows)]


def past_sla(now: datetime | None = None):
    """Open cases older than APPROVALS_SLA_HOURS, oldest first."""
    now = now or clock.now()
    return list(
        ApprovalRequest.objects.filter(status__in=OPEN_STATUSES, created_at__lte=now - sla_age())
        .select_related("assignee")
        .order_by("created_at", "id")
    )


def stale_claims(now: datetime | None = None) -> int:
    now = now or clock.now()
    return ApprovalRequest.objects.filter(
        status="claimed", claimed_at__lte=now - stale_claim_age()
    ).count()


# The tally's column for votes on cases whose process ended before acting on them: counted
# apart, so an approval that opened nothing is not an approval on the dashboard.
SUPERSEDED = ApprovalStatus.SUPERSEDED.value


def decisions_per_reviewer(*, superseded_apart: bool = True) -> list[ReviewerTally]:
    """Every vote recorded, by reviewer and outcome (a first of two approvals counts); the
    votes on superseded cases in a column of their own unless ``superseded_apart`` is off
    (/metrics: a counter never moves a vote from one label to another)."""
    tallies: dict[str, ReviewerTally] = {}
    column = F("outcome")
    if superseded_apart:
        column = Case(
            When(request__status=SUPERSEDED, then=Value(SUPERSEDED)),
            default=F("outcome"),
            output_field=CharField(),
        )
    rows = (
        ApprovalDecision.objects.order_by()
        .annotate(column=column)
        .values("reviewer__username", "column")
        .annotate(n=Count("id"))
    )
    for row in rows:
        tally = tallies.setdefault(
            row["reviewer__username"],
            ReviewerTally(
                row["reviewer__username"],
                dict.fromkeys([*Outcome.values, *([SUPERSEDED] if superseded_apart else [])], 0),
            ),
        )
        tally.by_outcome[row["column"]] = row["n"]
    return sorted(tallies.values(), key=lambda tally: (-tally.total, tally.reviewer))


def weekly_time_to_decision(now: datetime | None = None, weeks: int = WEEKS) -> list[Week]:
    """Time from opening to decision, p50 and p90, per ISO week (Monday, UTC) of the decision,
    for the last ``weeks`` weeks, oldest first; a week with no decision has no percentiles.
    On PostgreSQL the database computes them (percentile_disc is the nearest rank): read into
    Python, 200,000 decisions took the dashboard 4.7 s (benchmarks/pages.py)."""
    now = now or clock.now()
    this_monday = now.date() - timedelta(days=now.weekday())
    first = this_monday - timedelta(weeks=weeks - 1)
    since = datetime.combine(first, time.min, tzinfo=UTC)
    decided = ApprovalRequest.objects.filter(status__in=DECIDED_STATUSES, closed_at__gte=since)
    found = (
        _weekly_in_sql(decided) if connection.vendor == "postgresql" else _weekly_in_python(decided)
    )
    return [
        found.get(first + timedelta(weeks=n), Week(first + timedelta(weeks=n), 0, None, None))
        for n in range(weeks)
    ]


def _weekly_in_python(decided) -> dict[date, Week]:
    durations: dict[date, list[float]] = {}
    for created_at, closed_at in decided.values_list("created_at", "closed_at"):
        closed = closed_at.astimezone(UTC)
        durations.setdefault(closed.date() - timedelta(days=closed.weekday()), []).append(
            (closed_at - created_at).total_seconds()
        )
    return {
        start: Week(start, len(values), nearest_rank(values, 0.5), nearest_rank(values, 0.9))
        for start, values in durations.items()
    }


def _weekly_in_sql(decided) -> dict[date, Week]:
    seconds = "EXTRACT(EPOCH FROM (closed_at - created_at))"
    query, params = decided.order_by().values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT date_trunc('week', closed_at AT TIME ZONE 'UTC')::date, count(*), "
            f"percentile_disc(0.5) WITHIN GROUP (ORDER BY {seconds}), "
            f"percentile_disc(0.9) WITHIN GROUP (ORDER BY {seconds}) "
            f"FROM {ApprovalRequest._meta.db_table} WHERE id IN ({query}) GROUP BY 1",
            params,
        )
        return {
            start: Week(start, count, float(p50), float(p90))
            for start, count, p50, p90 in cursor.fetchall()
        }


def day_and_month(day: date) -> str:
    """A day as the reader writes it, without the year (19/10 in pt-BR, 10/19 in English): the
    chart's labels agree with the dates of the table beneath it."""
    pattern = re.sub(
        r"[^A-Za-z]*[Yy][^A-Za-z]*$|^[Yy][^A-Za-z]*", "", get_format("SHORT_DATE_FORMAT")
    )
    return date_format(day, pattern)


def chart(weeks: list[Week], *, width: int = 640, height: int = 220) -> dict:
    """Bar geometry for the server-rendered SVG: p50 and p90 (hours) side by side per week."""
    left, bottom, top = 48, 28, 12
    plot_height = height - bottom - top
    peak = max([w.p90 or 0 for w in weeks] + [w.p50 or 0 for w in weeks] + [3600]) / 3600
    slot = (width - left) / max(len(weeks), 1)
    bar = max(slot / 3, 2)
    bars = []
    for index, week in enumerate(weeks):
        for offset, (kind, value) in enumerate((("p50", week.p50), ("p90", week.p90))):
            hours = (value or 0) / 3600
            bar_height = plot_height * hours / peak
            bars.append(
                {
                    "kind": kind,
                    "x": round(left + index * slot + slot / 6 + offset * bar, 1),
                    "y": round(top + plot_height - bar_height, 1),
                    "width": round(bar, 1),
                    "height": round(bar_height, 1),
                    "hours": round(hours, 1),
                    "week": week.start,
                }
            )
    labels = [
        {"x": round(left + index * slot + slot / 2, 1), "text": day_and_month(week.start)}
        for index, week in enumerate(weeks)
    ]
    ticks = [
        {"y": round(top + plot_height - plot_height * n / 4, 1), "text": f"{peak * n / 4:.0f} h"}
        for n in range(5)
    ]
    return {
        "width": width,
        "height": height,
        "bars": bars,
        "labels": labels,
        "ticks": ticks,
        "axis_x": left,
        "axis_y": top + plot_height,
        "label_y": height - 8,
    }
