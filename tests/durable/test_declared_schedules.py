"""Schedules declared in code: `durable schedule sync` makes the database say what the apps
declare (paused ones stay paused, undeclared ones stay), and a system check reports drift."""

from importlib import import_module
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from durable.features import declared
from durable.features.declared import DeclaredSchedule
from durable.features.schedules import schedule_pause
from durable.models.schedules import Schedule, ScheduleEvent
from durable.surfaces.checks import check_declared_schedules
from tests.durable.test_schedules import daily_report  # noqa: F401  (registers the workflow)

pytestmark = pytest.mark.django_db

REPORT = DeclaredSchedule(
    name="report-daily",
    workflow="daily_report",
    cron="0 6 * * *",
    timezone="America/Sao_Paulo",
    id_template="report:{date}",
    args=["{date}"],
)


def drift_warnings() -> list[str]:
    return [
        message.msg
        for message in check_declared_schedules(databases=["default"])
        if message.id == "durable.W201"
    ]


@pytest.fixture
def reconcile_daily(clock):
    """The processes' declared schedule in the database. A migration seeds it, but a test
    that flushed the tables before this one (a transactional test) took it away."""
    declared.schedules_sync(actor="test")
    return Schedule.objects.get(name="reconcile-daily")


def test_the_processes_declaration_is_what_their_migration_seeds():
    seeded = import_module("processes.migrations.0006_reconcile_schedule").FIELDS

    (spec,) = declared.declared_schedules()

    assert spec.fields() == seeded


def test_a_synced_database_shows_no_drift(reconcile_daily):
    assert drift_warnings() == []


def test_a_schedule_changed_by_hand_is_reported_and_synced_back(reconcile_daily):
    Schedule.objects.filter(name="reconcile-daily").update(cron="0 1 * * *")
    assert drift_warnings() == [
        "schedule 'reconcile-daily' differs from its declaration: cron is '0 1 * * *', "
        "declared '30 0 * * *'"
    ]

    out = StringIO()
    call_command("durable", "schedule", "sync", stdout=out)

    assert "cron '0 1 * * *' -> '30 0 * * *' (did change it)" in out.getvalue()
    assert Schedule.objects.get(name="reconcile-daily").cron == "30 0 * * *"
    assert drift_warnings() == []
    update = ScheduleEvent.objects.filter(schedule__name="reconcile-daily", action="update").get()
    assert update.actor.startswith("cli:") and update.detail["sync"] is True


def test_a_declared_schedule_missing_from_the_database_is_created(clock):
    drifts = declared.schedules_sync(actor="deploy", declared=[REPORT])

    assert [(drift.name, drift.missing) for drift in drifts] == [("report-daily", True)]
    created = Schedule.objects.get(name="report-daily")
    assert (created.cron, created.timezone, created.args, created.paused) == (
        "0 6 * * *",
        "America/Sao_Paulo",
        ["{date}"],
        False,
    )


def test_a_sync_never_resumes_a_schedule_an_operator_paused(clock):
    declared.schedules_sync(actor="deploy", declared=[REPORT])
    schedule_pause("report-daily", actor="ops", reason="month-end")
    changed = DeclaredSchedule(**{**REPORT.__dict__, "cron": "0 7 * * *"})

    declared.schedules_sync(actor="deploy", declared=[changed])

    schedule = Schedule.objects.get(name="report-daily")
    assert (schedule.cron, schedule.paused) == ("0 7 * * *", True)


def test_a_dry_run_says_what_differs_and_writes_nothing(clock):
    drifts = declared.schedules_sync(actor="deploy", declared=[REPORT], dry_run=True)

    assert drifts[0].missing
    assert not Schedule.objects.filter(name="report-daily").exists()


def test_a_schedule_no_app_declares_is_left_as_it_is_and_named(clock):
    declared.schedules_sync(actor="deploy", declared=[REPORT])
    out = StringIO()

    call_command("durable", "schedule", "sync", "--dry-run", stdout=out)

    assert "report-daily: in the database, declared by no app (left as it is)" in out.getvalue()
    assert Schedule.objects.filter(name="report-daily").exists()


def test_a_declaration_that_cannot_work_is_refused_with_the_reason(clock):
    broken = DeclaredSchedule(
        name="broken", workflow="daily_report", cron="61 * * * *", id_template="b:{date}"
    )

    with pytest.raises(declared.schedules.ScheduleInvalid):
        declared.schedules_sync(actor="deploy", declared=[broken])

    assert not Schedule.objects.filter(name="broken").exists()


def test_the_sync_command_exits_2_on_a_declaration_that_cannot_work(clock, monkeypatch):
    monkeypatch.setattr(
        "processes.schedules.SCHEDULES",
        [
            DeclaredSchedule(
                name="broken", workflow="no_such_workflow", cron="0 0 * * *", id_template="b:{date}"
            )
        ],
    )

    with pytest.raises(CommandError) as refused:
        call_command("durable", "schedule", "sync", stdout=StringIO())

    assert refused.value.returncode == 2
    assert [message.id for message in check_declared_schedules()] == ["durable.E201"]
