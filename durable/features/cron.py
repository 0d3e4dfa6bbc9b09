"""Cron occurrences in a time zone, and the run ids and inputs rendered from them. Pure: no
database.

Expressions are the five fields of Debian cron (minute hour day-of-month month day-of-week),
read by cronsim, which also follows Debian cron across daylight-saving changes: a job at a
time that does not exist that day runs when the clock jumps, one at a time that happens
twice runs once. Every value here is computed from the expression and a moment, so two
sweeps (or a sweep and a test) always agree on which occurrences exist.
"""

import string
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from durable.errors import DurableError

# What an id template (and a string in a schedule's args or kwargs) may name, each read from
# the occurrence in the schedule's time zone.
PLACEHOLDERS = {
    "date": "the occurrence's date, 2026-05-05",
    "day_before": (
        "the day before the occurrence's date, 2026-05-04 (a daily job that closes yesterday)"
    ),
    "time": "the occurrence's time to the minute, 00:30",
    "datetime": (
        "date, time and UTC offset, 2026-05-05T00:30-03:00 (unique even when a clock goes back)"
    ),
    "schedule": "the schedule's name",
}
# How many upcoming occurrences the id template check renders: enough to see a sub-daily
# cron give two occurrences one id, cheap enough for a form.
_ID_CHECK_OCCURRENCES = 60


class ScheduleInvalid(DurableError):
    """A schedule's cron expression, time zone, id template or input cannot work."""


@dataclass(frozen=True)
class Occurrence:
    """One moment a schedule is due, as stored (UTC) and as its zone says it (local)."""

    at: datetime
    local: datetime

    def values(self, schedule_name: str) -> dict[str, str]:
        local = self.local
        return {
            "date": local.date().isoformat(),
            "day_before": (local.date() - timedelta(days=1)).isoformat(),
            "time": local.strftime("%H:%M"),
            "datetime": local.isoformat(timespec="minutes"),
            "schedule": schedule_name,
        }


def zone(name: str) -> ZoneInfo:
    try:
        if not name or name != name.strip():
            raise ValueError
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ScheduleInvalid(
            f"time zone {name!r} is not an IANA time zone name (e.g. 'UTC', 'America/Sao_Paulo')"
        ) from None


def check_expression(expression: str) -> str:
    """The expression, stripped, or ScheduleInvalid naming what is wrong with it."""
    expression = " ".join((expression or "").split())
    if len(expression.split()) != 5:
        raise ScheduleInvalid(
            f"cron expression {expression!r} must have five fields: minute hour "
            "day-of-month month day-of-week (e.g. '30 0 * * *', daily at 00:30)"
        )
    try:
        CronSim(expression, datetime(2026, 1, 1, tzinfo=UTC))
    except CronSimError as error:
        raise ScheduleInvalid(f"cron expression {expression!r} is not valid: {error}") from None
    return expression


def explain(expression: str) -> str:
    """'At 00:30 every day': for the admin and the CLI."""
    try:
        return CronSim(expression, datetime(2026, 1, 1, tzinfo=UTC)).explain()
    except (CronSimError, ValueError, KeyError):
        return ""


def after(expression: str, tz_name: str, moment: datetime) -> Occurrence:
    """The first occurrence strictly after ``moment``."""
    tz = zone(tz_name)
    local = next(CronSim(expression, moment.astimezone(tz)))
    return Occurrence(at=local.astimezone(UTC), local=local)


def latest(expression: str, tz_name: str, moment: datetime) -> Occurrence:
    """The last occurrence at or before ``moment``."""
    tz = zone(tz_name)
    # Occurrences fall on whole minutes; searching back from the next whole second finds
    # one exactly at ``moment`` too.
    start = moment.replace(microsecond=0) + timedelta(seconds=1)
    local = next(CronSim(expression, start.astimezone(tz), reverse=True))
    return Occurrence(at=local.astimezone(UTC), local=local)


def between(
    expression: str, tz_name: str, first: datetime, until: datetime, *, limit: int
) -> list[Occurrence]:
    """Occurrences from ``first`` (itself one, included) to ``until`` (included), at most
    ``limit``."""
    tz = zone(tz_name)
    found = []
    iterator = CronSim(expression, (first - timedelta(seconds=1)).astimezone(tz))
    while len(found) < limit:
        local = next(iterator)
        at = local.astimezone(UTC)
        if at > until:
            break
        found.append(Occurrence(at=at, local=local))
    return found


def _fields(template: str, *, what: str) -> set[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise ScheduleInvalid(
            f"{what} {template!r} is not a template: {error} (write a literal "
            "brace as {{ or }})"
        ) from None
    names = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            raise ScheduleInvalid(
                f"{what} {template!r} names {{{name}}}; the placeholders are "
                + ", ".join(f"{{{known}}}" for known in PLACEHOLDERS)
            )
        names.add(name)
    return names


def render(template: str, occurrence: Occurrence, schedule_name: str) -> str:
    return template.format_map(occurrence.values(schedule_name))


def render_input(
    args: list, kwargs: dict, occurrence: Occurrence, schedule_name: str
) -> tuple[list, dict]:
    """The input of an occurrence's run: each top-level string rendered like the id."""
    values = occurrence.values(schedule_name)

    def one(value):
        return value.format_map(values) if isinstance(value, str) else value

    return [one(value) for value in args], {key: one(value) for key, value in kwargs.items()}


def check_templates(
    id_template: str,
    args: list,
    kwargs: dict,
    *,
    expression: str,
    tz_name: str,
    schedule_name: str,
    now: datetime,
) -> None:
    """Refuse an id template that cannot tell the upcoming occurrences apart (the run id is the
    occurrence: two occurrences with one id would fire once), and input templates that name
    unknown placeholders."""
    if not _fields(id_template, what="id template") - {"schedule"}:
        raise ScheduleInvalid(
            f"id template {id_template!r} names no occurrence placeholder: every "
            "occurrence would get the same run id and only the first would run "
            "(use {date}, {time} or {datetime}, e.g. 'reconcile:{date}')"
        )
    for value in [*args, *kwargs.values()]:
        if isinstance(value, str):
            _fields(value, what="input string")
    seen: dict[str, Occurrence] = {}
    moment = now
    for _ in range(_ID_CHECK_OCCURRENCES):
        occurrence = after(expression, tz_name, moment)
        run_id = render(id_template, occurrence, schedule_name)
        if run_id in seen:
            raise ScheduleInvalid(
                f"id template {id_template!r} gives two occurrences the same run id {run_id!r} "
                f"({seen[run_id].local.isoformat(timespec='minutes')} and "
                f"{occurrence.local.isoformat(timespec='minutes')}): only the first would run; "
                "add {time} or use {datetime} for a cron that fires more than once a day"
            )
        seen[run_id] = occurrence
        moment = occurrence.at
