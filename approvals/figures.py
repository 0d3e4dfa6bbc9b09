"""The supervisor dashboard's figures, read from the database: one source for the page and /metrics.

Reads only. Percentiles are the nearest rank: PostgreSQL's percentile_disc there, the same
rule in Python on SQLite, so both give the same answer.
"""

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, Q
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
from durable.quantiles import nearest_ranks

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


def backlog(now: datetime | None = None) -> list[BacklogRow]:
    """Open cases by candidate group and age (a case routed to two groups counts in both).
    Counted by the database, one row per group: read into Python, 10,000 open cases took the
    dashboard 300 ms (benchmarks/pages.py)."""
    now = now or clock.now()
    ages, upper = {}, None  # bucket n: created after now - its bound, at or before the last's
    for index, (_label, _key, bound) in enumerate(AGE_BUCKETS):
        within = Q() if bound is None else Q(created_at__gt=now - timedelta(hours=bound))
        ages[f"age_{index}"] = Count("pk", filter=within & (upper or Q()))
        upper = Q(created_at__lte=now - timedelta(hours=bound)) if bound is not None else None
    found = (
        ApprovalRequest.objects.filter(status__in=OPEN_STATUSES)
        .order_by()
        .values("candidate_groups__name")
        .annotate(**ages, past=Count("pk", filter=Q(created_at__lte=now - sla_age())))
    )
    rows = [
        BacklogRow(
            found_row["candidate_groups__name"] or ANY_GROUP,
            [found_row[f"age_{index}"] for index in range(len(AGE_BUCKETS))],
            found_row["past"],
        )
        for found_row in found
    ]
    return sorted(rows, key=lambda row: row.group)


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
    (/metrics: a counter never moves a vote from one label to another). The votes are counted
    from an index of (reviewer, outcome) alone, the few on superseded cases apart: with each
    vote joined to its case, 200,000 votes took 190 ms (benchmarks/pages.py)."""
    columns = [*Outcome.values, *([SUPERSEDED] if superseded_apart else [])]
    votes = ApprovalDecision.objects.order_by().values("reviewer_id", "outcome")
    counted = [
        (row["reviewer_id"], row["outcome"], row["n"]) for row in votes.annotate(n=Count("pk"))
    ]
    if superseded_apart:
        superseded = votes.filter(request__status=SUPERSEDED).annotate(n=Count("pk"))
        for row in superseded:
            counted += [
                (row["reviewer_id"], row["outcome"], -row["n"]),
                (row["reviewer_id"], SUPERSEDED, row["n"]),
            ]
    names = dict(
        get_user_model()
        .objects.filter(pk__in={reviewer for reviewer, _outcome, _n in counted})
        .values_list("pk", "username")
    )
    tallies: dict[str, ReviewerTally] = {}
    for reviewer, column, n in counted:
        tally = tallies.setdefault(
            names[reviewer], ReviewerTally(names[reviewer], dict.fromkeys(columns, 0))
        )
        tally.by_outcome[column] = tally.by_outcome.get(column, 0) + n
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
    found = _weekly_in_sql(since) if connection.vendor == "postgresql" else _weekly_in_python(since)
    return [
        found.get(first + timedelta(weeks=n), Week(first + timedelta(weeks=n), 0, None, None))
        for n in range(weeks)
    ]


def _weekly_in_python(since: datetime) -> dict[date, Week]:
    decided = ApprovalRequest.objects.filter(status__in=DECIDED_STATUSES, closed_at__gte=since)
    durations: dict[date, list[float]] = {}
    for created_at, closed_at in decided.values_list("created_at", "closed_at"):
        closed = closed_at.astimezone(UTC)
        durations.setdefault(closed.date() - timedelta(days=closed.weekday()), []).append(
            (closed_at - created_at).total_seconds()
        )
    return {
        start: Week(start, len(values), *nearest_ranks(values, 0.5, 0.9))
        for start, values in durations.items()
    }


def _weekly_in_sql(since: datetime) -> dict[date, Week]:
    """One sort per week for both percentiles, from an index that holds every column read
    (approvals_closed_durations), in memory rather than on disk: 200,000 decisions in 86 ms
    instead of 285 (benchmarks/pages.py)."""
    duration = "closed_at - created_at"
    statuses = ", ".join(["%s"] * len(DECIDED_STATUSES))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '32MB'")
        cursor.execute(
            f"SELECT date_trunc('week', closed_at AT TIME ZONE 'UTC')::date, count(*), "
            f"percentile_disc(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY {duration}) "
            f"FROM {ApprovalRequest._meta.db_table} "
            f"WHERE status IN ({statuses}) AND closed_at >= %s GROUP BY 1",
            [*DECIDED_STATUSES, since],
        )
        return {
            start: Week(start, count, p50.total_seconds(), p90.total_seconds())
            for start, count, (p50, p90) in cursor.fetchall()
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
