"""``durable schedule list|create|update|pause|resume|sync``: schedules from a shell, over
durable.features.schedules (and durable.features.declared for those declared in code)."""

from django.core.management.base import CommandError

from durable.errors import DurableError
from durable.features import cron, declared, schedules
from durable.models.schedules import CatchUp
from durable.surfaces.cli._common import USAGE_ERROR, audit, parse_json, table, when

help = (
    "List, create, update, pause and resume schedules "
    "(a workflow started at each occurrence of a cron)."
)


def add_arguments(parser):
    actions = parser.add_subparsers(dest="schedule_action", metavar="ACTION")
    actions.required = True
    actions.add_parser("list", help="every schedule: its cron, state, next and last occurrence")
    create = actions.add_parser(
        "create", help="create a schedule (it fires from its next occurrence on)"
    )
    create.add_argument("name", help="a slug, e.g. reconcile-daily")
    create.add_argument("--workflow", required=True, help="registered workflow name")
    create.add_argument("--cron", required=True, help="five fields, e.g. '30 0 * * *'")
    create.add_argument(
        "--timezone", default="UTC", help="IANA name (default UTC), e.g. America/Sao_Paulo"
    )
    create.add_argument(
        "--id-template",
        required=True,
        help="the run id of an occurrence, e.g. 'report:{date}'; placeholders: "
        + ", ".join(f"{{{name}}}" for name in cron.PLACEHOLDERS),
    )
    # dest: Django pops an option named "args" before handle() sees it.
    create.add_argument(
        "--args",
        dest="input_args",
        default="[]",
        help="JSON list of positional input, e.g. '[\"{date}\"]'",
    )
    create.add_argument(
        "--kwargs", dest="input_kwargs", default="{}", help="JSON object of keyword input"
    )
    create.add_argument(
        "--catch-up",
        default=CatchUp.ALL,
        choices=CatchUp.values,
        help="missed occurrences: all (each once, the default), latest, or skip",
    )
    create.add_argument("--paused", action="store_true", help="create it paused")
    update = actions.add_parser(
        "update", help="change a schedule (a new cron or zone fires from its next occurrence)"
    )
    update.add_argument("name")
    update.add_argument("--workflow", dest="workflow_name")
    update.add_argument("--cron")
    update.add_argument("--timezone")
    update.add_argument("--id-template")
    update.add_argument("--args", dest="input_args", help="JSON list")
    update.add_argument("--kwargs", dest="input_kwargs", help="JSON object")
    update.add_argument("--catch-up", choices=CatchUp.values)
    pause = actions.add_parser("pause", help="stop firing; occurrences while paused are skipped")
    pause.add_argument("name")
    pause.add_argument("--reason", default="", help="why, for the audit trail")
    resume = actions.add_parser("resume", help="fire again from the next occurrence")
    resume.add_argument("name")
    sync = actions.add_parser(
        "sync",
        help="create or change the schedules the apps declare (their schedules.py) "
        "so the database says the same; paused ones stay paused",
    )
    sync.add_argument("--dry-run", action="store_true", help="only say what differs")


def handle(options, out) -> int:
    action = options["schedule_action"]
    if action == "list":
        return _list(out)
    if action == "sync":
        return _sync(out, dry_run=options["dry_run"])
    if action == "create":
        schedule = schedules.schedule_create(
            options["name"],
            options["workflow"],
            cron_expression=options["cron"],
            timezone=options["timezone"],
            id_template=options["id_template"],
            args=_json(options["input_args"], "--args", list),
            kwargs=_json(options["input_kwargs"], "--kwargs", dict),
            catch_up=options["catch_up"],
            paused=options["paused"],
            **audit(),
        )
    elif action == "update":
        changes = {
            field: options[field]
            for field in ("workflow_name", "cron", "timezone", "id_template", "catch_up")
            if options[field] is not None
        }
        if options["input_args"] is not None:
            changes["args"] = _json(options["input_args"], "--args", list)
        if options["input_kwargs"] is not None:
            changes["kwargs"] = _json(options["input_kwargs"], "--kwargs", dict)
        if not changes:
            raise CommandError(
                "nothing to change: give at least one of --workflow, --cron, --timezone, "
                "--id-template, --args, --kwargs, --catch-up",
                returncode=USAGE_ERROR,
            )
        schedule = schedules.schedule_update(options["name"], **changes, **audit())
    elif action == "pause":
        schedule = schedules.schedule_pause(options["name"], reason=options["reason"], **audit())
    else:
        schedule = schedules.schedule_resume(options["name"], **audit())
    out.write(_line(schedule))
    return 0


def _json(text: str, what: str, kind: type):
    value = parse_json(text, what=what)
    if not isinstance(value, kind):
        raise CommandError(
            f"{what} must be a JSON {'list' if kind is list else 'object'}", returncode=USAGE_ERROR
        )
    return value


def _state(schedule) -> str:
    return "paused" if schedule.paused else ("error" if schedule.last_error else "active")


def _line(schedule) -> str:
    upcoming = (
        f"next {when(schedule.next_fire_at)}" if schedule.next_fire_at else "no next occurrence"
    )
    return f"{schedule.name}  {_state(schedule)}  {schedule.cron} {schedule.timezone}  {upcoming}"


def _list(out) -> int:
    rows = list(schedules.schedules_listed())
    if not rows:
        out.write("no schedules")
        return 0
    out.write(
        table(
            [
                [
                    s.name,
                    s.workflow_name,
                    f"{s.cron} ({s.timezone})",
                    s.id_template,
                    s.catch_up,
                    _state(s),
                    when(s.next_fire_at),
                    when(s.last_fired_at),
                    s.last_run_id,
                ]
                for s in rows
            ],
            [
                "name",
                "workflow",
                "cron",
                "id template",
                "catch-up",
                "state",
                "next",
                "last fired",
                "last run",
            ],
        )
    )
    for schedule in rows:
        if schedule.last_error:
            out.write(f"{schedule.name}: {schedule.last_error}")
    return 0


def _sync(out, *, dry_run: bool) -> int:
    try:
        drifts = declared.schedules_sync(**audit(), dry_run=dry_run)
    except (DurableError, ValueError) as error:  # ScheduleInvalid, WorkflowNotFound, PayloadError
        raise CommandError(
            f"a declared schedule cannot be synced: {error}", returncode=USAGE_ERROR
        ) from None
    verb = "would" if dry_run else "did"
    for drift in drifts:
        if drift.missing:
            out.write(f"{drift.name}: missing, {verb} create it")
        else:
            changes = ", ".join(
                f"{name} {old!r} -> {new!r}" for name, (old, new) in drift.changed.items()
            )
            out.write(f"{drift.name}: {changes} ({verb} change it)")
    for name in declared.undeclared_schedules():
        out.write(f"{name}: in the database, declared by no app (left as it is)")
    if not drifts:
        out.write("every declared schedule is in the database as declared")
    return 0
