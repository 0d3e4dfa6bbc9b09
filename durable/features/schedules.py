"""Schedules: create, pause and resume them (audited), and fire their due occurrences from the
sweep.

The run id is the occurrence (the schedule's id template rendered for it), started through
``services.run_start``, which returns an existing run instead of starting a second: two
sweeps, or a sweep racing an operator's manual start, never run one occurrence twice. The
schedule's bookkeeping (``next_fire_at``, ``last_fired_at``) commits in the transaction
that starts the runs, under the schedule's row lock.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, connection, transaction

from durable import clock, selectors, services, validation
from durable.errors import DurableError, RunConflict
from durable.features import cron
from durable.features.cron import Occurrence, ScheduleInvalid
from durable.models.schedules import CatchUp, Schedule, ScheduleAction, ScheduleEvent
from durable.runtime import registry

log = logging.getLogger(__name__)

__all__ = [
    "ScheduleExists",
    "ScheduleInvalid",
    "ScheduleNotFound",
    "fire_due",
    "schedule_check",
    "schedule_create",
    "schedule_pause",
    "schedule_resume",
    "schedule_trigger",
    "schedule_update",
    "schedules_listed",
]


class ScheduleNotFound(DurableError):
    pass


class ScheduleExists(DurableError):
    """A schedule of that name exists already."""


def catch_up_batch() -> int:
    """At most this many missed occurrences of one schedule per sweep (``all``); the next
    sweep goes on where this one stopped, so a long outage never makes one huge transaction."""
    return int(getattr(settings, "DURABLE_SCHEDULE_CATCH_UP_BATCH", 100))


def misfire_grace_seconds() -> float:
    """How late an occurrence may fire and still count as on time, not missed (``skip``)."""
    return float(getattr(settings, "DURABLE_SCHEDULE_MISFIRE_GRACE_SECONDS", 60))


# --- writes ---


def schedule_check(
    *,
    name: str,
    workflow: str,
    cron_expression: str,
    timezone: str,
    id_template: str,
    args=None,
    kwargs=None,
    catch_up: str = CatchUp.ALL,
) -> dict:
    """The schedule's fields, cleaned, or ScheduleInvalid (WorkflowNotFound, PayloadError) naming
    what cannot work: a bad cron is refused when it is written, not found by a sweep at night."""
    try:
        validate_slug(name)
    except ValidationError:
        raise ScheduleInvalid(
            f"schedule name {name!r} must be a slug (letters, digits, - and _)"
        ) from None
    args = [] if args is None else args
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ScheduleInvalid("a schedule's args must be a JSON list and its kwargs a JSON object")
    if catch_up not in CatchUp.values:
        raise ScheduleInvalid(
            f"catch-up policy {catch_up!r} is not one of {', '.join(CatchUp.values)}"
        )
    definition = registry.resolve(workflow)
    expression = cron.check_expression(cron_expression)
    cron.zone(timezone)
    validation.check_json_value({"args": args, "kwargs": kwargs}, what="schedule input")
    now = clock.now()
    cron.check_templates(
        id_template,
        args,
        kwargs,
        expression=expression,
        tz_name=timezone,
        schedule_name=name,
        now=now,
    )
    upcoming = cron.after(expression, timezone, now)
    validation.check_run_input(definition.name, *cron.render_input(args, kwargs, upcoming, name))
    return {
        "name": name,
        "workflow_name": definition.name,
        "cron": expression,
        "timezone": timezone,
        "id_template": id_template,
        "args": args,
        "kwargs": kwargs,
        "catch_up": catch_up,
    }


def schedule_create(
    name: str,
    workflow: str,
    *,
    cron_expression: str,
    id_template: str,
    timezone: str = "UTC",
    args=None,
    kwargs=None,
    catch_up: str = CatchUp.ALL,
    paused: bool = False,
    actor: str,
    audit: dict | None = None,
) -> Schedule:
    """Create a schedule; its first occurrence is the first one after now (nothing before
    it is "missed")."""
    fields = schedule_check(
        name=name,
        workflow=workflow,
        cron_expression=cron_expression,
        timezone=timezone,
        id_template=id_template,
        args=args,
        kwargs=kwargs,
        catch_up=catch_up,
    )
    now = clock.now()
    next_fire_at = None if paused else cron.after(fields["cron"], timezone, now).at
    try:
        with transaction.atomic():
            schedule = Schedule.objects.create(
                **fields, paused=paused, next_fire_at=next_fire_at, created_at=now, updated_at=now
            )
            _audit(
                schedule,
                ScheduleAction.CREATE,
                actor,
                {**fields, "paused": paused, **(audit or {})},
                first=True,
            )
    except IntegrityError:
        raise ScheduleExists(f"a schedule named {name!r} exists already") from None
    return schedule


EDITABLE = ("workflow_name", "cron", "timezone", "id_template", "args", "kwargs", "catch_up")


def schedule_update(name: str, *, actor: str, audit: dict | None = None, **changes) -> Schedule:
    """Change what a schedule starts or when (``workflow_name``, ``cron``, ``timezone``,
    ``id_template``, ``args``, ``kwargs``, ``catch_up``), checked like a new one.

    A new cron or zone fires from its first occurrence after now; the trail records each
    field's old and new value.
    """
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ScheduleInvalid(
            f"schedule fields {sorted(unknown)} cannot be changed (only {', '.join(EDITABLE)})"
        )
    with transaction.atomic():
        schedule = _get_locked(name)
        current = {field: getattr(schedule, field) for field in EDITABLE}
        merged = {**current, **changes}
        fields = schedule_check(
            name=name,
            workflow=merged["workflow_name"],
            cron_expression=merged["cron"],
            timezone=merged["timezone"],
            id_template=merged["id_template"],
            args=merged["args"],
            kwargs=merged["kwargs"],
            catch_up=merged["catch_up"],
        )
        changed = {
            field: [current[field], fields[field]]
            for field in EDITABLE
            if fields[field] != current[field]
        }
        if not changed:
            return schedule
        now = clock.now()
        for field in changed:
            setattr(schedule, field, fields[field])
        schedule.updated_at = now
        if not schedule.paused and {"cron", "timezone"} & set(changed):
            schedule.next_fire_at = cron.after(schedule.cron, schedule.timezone, now).at
        schedule.save(update_fields=[*changed, "updated_at", "next_fire_at"])
        _audit(schedule, ScheduleAction.UPDATE, actor, {"changed": changed, **(audit or {})})
    return schedule


def schedule_pause(
    name: str, *, actor: str, reason: str = "", audit: dict | None = None
) -> Schedule:
    """Stop firing. Occurrences that pass while paused are skipped, whatever the catch-up
    policy: pausing says "not these"; a missed day can still be started by hand."""
    with transaction.atomic():
        schedule = _get_locked(name)
        if not schedule.paused:
            now = clock.now()
            schedule.paused, schedule.next_fire_at, schedule.updated_at = True, None, now
            schedule.save(update_fields=["paused", "next_fire_at", "updated_at"])
            _audit(schedule, ScheduleAction.PAUSE, actor, {"reason": reason, **(audit or {})})
    return schedule


def schedule_resume(name: str, *, actor: str, audit: dict | None = None) -> Schedule:
    """Fire again from the first occurrence after now."""
    with transaction.atomic():
        schedule = _get_locked(name)
        if schedule.paused:
            now = clock.now()
            schedule.paused, schedule.updated_at, schedule.last_error = False, now, ""
            schedule.next_fire_at = cron.after(schedule.cron, schedule.timezone, now).at
            schedule.save(update_fields=["paused", "next_fire_at", "updated_at", "last_error"])
            _audit(
                schedule,
                ScheduleAction.RESUME,
                actor,
                {"next_fire_at": schedule.next_fire_at.isoformat(), **(audit or {})},
            )
    return schedule


def schedule_trigger(name: str, *, actor: str, audit: dict | None = None):
    """Start the schedule's occurrence of now, by hand, paused or not: its run id is the
    id template rendered for now, so with a ``{date}`` template today's run (fired by the
    schedule or triggered before) is that run, returned as it is, never a second one.
    Returns (the run, whether it was started now)."""
    with transaction.atomic():
        schedule = _get_locked(name)
        now = clock.now()
        occurrence = Occurrence(at=now, local=now.astimezone(cron.zone(schedule.timezone)))
        run_id = cron.render(schedule.id_template, occurrence, schedule.name)
        args, kwargs = cron.render_input(schedule.args, schedule.kwargs, occurrence, schedule.name)
        existed = selectors.run_exists(run_id)
        run = services.run_start(
            schedule.workflow_name,
            *args,
            id=run_id,
            actor=actor,
            audit={"schedule": schedule.name, "triggered": now.isoformat(), **(audit or {})},
            **kwargs,
        )
        _audit(
            schedule,
            ScheduleAction.TRIGGER,
            actor,
            {"run_id": run.id, "started": not existed, **(audit or {})},
        )
    return run, not existed


# --- the sweep ---


def fire_due(*, limit: int = 100) -> list[str]:
    """Start the runs of every due occurrence; return their run ids.

    With nothing due this is one indexed query and no transaction: it runs on every tick.
    """
    due = list(
        Schedule.objects.filter(next_fire_at__lte=clock.now())
        .order_by("next_fire_at")
        .values_list("pk", flat=True)[:limit]
    )
    fired: list[str] = []
    for pk in due:
        fired += _fire(pk)
    return fired


@dataclass
class _Plan:
    fire: list[Occurrence]
    next_fire_at: object
    skipped_since: object = None


def _plan(schedule: Schedule, now) -> _Plan:
    """Which due occurrences to fire under the schedule's catch-up policy, and the next one."""
    expression, tz = schedule.cron, schedule.timezone
    if schedule.catch_up == CatchUp.ALL:
        occurrences = cron.between(
            expression, tz, schedule.next_fire_at, now, limit=catch_up_batch()
        )
        resume_from = occurrences[-1].at if occurrences else now
        return _Plan(fire=occurrences, next_fire_at=cron.after(expression, tz, resume_from).at)
    last = cron.latest(expression, tz, now)
    following = cron.after(expression, tz, now).at
    if last.at < schedule.next_fire_at:  # no occurrence since next_fire_at (set by hand)
        return _Plan(fire=[], next_fire_at=following)
    missed_since = schedule.next_fire_at if schedule.next_fire_at < last.at else None
    on_time = (now - last.at) <= timedelta(seconds=misfire_grace_seconds())
    if schedule.catch_up == CatchUp.SKIP and not on_time:
        return _Plan(fire=[], next_fire_at=following, skipped_since=schedule.next_fire_at)
    return _Plan(fire=[last], next_fire_at=following, skipped_since=missed_since)


def _fire(pk: int) -> list[str]:
    now = clock.now()
    try:
        with transaction.atomic():
            rows = Schedule.objects.filter(pk=pk, next_fire_at__lte=now)
            # Another sweep holding it is firing it: skip, never wait behind it.
            rows = rows.select_for_update(
                skip_locked=connection.features.has_select_for_update_skip_locked
            )
            schedule = rows.first()
            if schedule is None:
                return []
            plan = _plan(schedule, now)
            fired, conflicts = [], []
            for occurrence in plan.fire:
                run_id = cron.render(schedule.id_template, occurrence, schedule.name)
                args, kwargs = cron.render_input(
                    schedule.args, schedule.kwargs, occurrence, schedule.name
                )
                try:
                    services.run_start(
                        schedule.workflow_name,
                        *args,
                        id=run_id,
                        actor=f"schedule:{schedule.name}",
                        audit={"schedule": schedule.name, "occurrence": occurrence.at.isoformat()},
                        **kwargs,
                    )
                except (
                    RunConflict
                ) as error:  # started by hand with other input: that run is the occurrence
                    log.warning("schedule %s: %s", schedule.name, error)
                    conflicts.append(run_id)
                fired.append(run_id)
            changes = {"next_fire_at": plan.next_fire_at, "updated_at": now, "last_error": ""}
            if plan.fire:
                changes.update(last_fired_at=plan.fire[-1].at, last_run_id=fired[-1])
            Schedule.objects.filter(pk=pk).update(**changes)
            detail = {"fired": fired, "next_fire_at": plan.next_fire_at.isoformat()}
            if plan.skipped_since is not None:
                detail["skipped_since"] = plan.skipped_since.isoformat()
            if conflicts:
                detail["existing_with_other_input"] = conflicts
            if fired or plan.skipped_since is not None:
                _audit(
                    schedule,
                    ScheduleAction.FIRE if fired else ScheduleAction.SKIP,
                    "sweep",
                    {"catch_up": schedule.catch_up, **detail},
                )
            return fired
    except DurableError as error:  # its workflow is gone, its input no longer fits
        message = f"{type(error).__name__}: {error}"
        if (
            Schedule.objects.filter(pk=pk)
            .exclude(last_error=message)
            .update(last_error=message, updated_at=now)
        ):
            log.error(
                "schedule #%s cannot fire: %s (it stays due; fix it or pause it)", pk, message
            )
        return []


# --- reads ---


def schedules_listed():
    return Schedule.objects.order_by("name")


def schedule_get(name: str) -> Schedule:
    schedule = Schedule.objects.filter(name=name).first()
    if schedule is None:
        raise ScheduleNotFound(f"no schedule named {name!r}")
    return schedule


# --- helpers ---


def _get_locked(name: str) -> Schedule:
    schedule = Schedule.objects.select_for_update().filter(name=name).first()
    if schedule is None:
        raise ScheduleNotFound(f"no schedule named {name!r}")
    return schedule


def _audit(
    schedule: Schedule, action: str, actor: str, detail: dict, *, first: bool = False
) -> ScheduleEvent:
    """Callers hold the schedule's row lock (or created it in this transaction)."""
    event = ScheduleEvent(
        schedule=schedule,
        action=str(action),
        actor=actor or "system",
        detail=detail,
        created_at=clock.now(),
    )
    event.save(parent_locked=True, first_in_chain=first)
    return event
