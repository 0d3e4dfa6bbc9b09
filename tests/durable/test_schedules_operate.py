"""Operating schedules: the CLI and the admin pause and resume them through the services,
audited."""

from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from durable import chain
from durable.features.schedules import schedule_create, schedule_pause
from durable.models.schedules import Schedule, ScheduleEvent
from durable.testing import fake_clock
from tests.durable.test_schedules import daily_report  # noqa: F401  (registers the workflow)

pytestmark = pytest.mark.django_db

NOON = datetime(2026, 5, 5, 12, 0, tzinfo=UTC)


def durable(*argv: str) -> str:
    out = StringIO()
    call_command("durable", *argv, stdout=out)
    return out.getvalue()


@pytest.fixture
def report_schedule():
    with fake_clock(NOON):
        return schedule_create(
            "report-daily",
            "daily_report",
            cron_expression="0 0 * * *",
            timezone="America/Sao_Paulo",
            id_template="report:{date}",
            args=["{date}"],
            actor="test",
        )


def staff_with(client, *codenames: str, username: str = "ops"):
    user = User.objects.create_user(username, password="pw-unused-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename__in=codenames)
    )
    client.force_login(user)
    return client


def changelist_action(client, action: str, schedule):
    return client.post(
        reverse("admin:durable_schedule_changelist"),
        {"action": action, "_selected_action": [schedule.pk]},
        follow=True,
    )


# --- CLI ---


def test_cli_create_makes_a_schedule_audited_as_the_cli():
    output = durable(
        "schedule",
        "create",
        "report-cli",
        "--workflow",
        "daily_report",
        "--cron",
        "30 6 * * 1-5",
        "--timezone",
        "America/Sao_Paulo",
        "--id-template",
        "report:{date}",
        "--args",
        '["{date}"]',
        "--catch-up",
        "latest",
    )

    schedule = Schedule.objects.get(name="report-cli")
    assert "report-cli  active  30 6 * * 1-5 America/Sao_Paulo  next " in output
    assert (schedule.catch_up, schedule.args) == ("latest", ["{date}"])
    assert ScheduleEvent.objects.get(schedule=schedule, action="create").detail["via"] == "cli"


def test_cli_create_with_a_bad_cron_exits_with_the_reason():
    with pytest.raises(
        CommandError, match=r"cron expression '0 25 \* \* \*' is not valid: Bad hour"
    ):
        durable(
            "schedule",
            "create",
            "report-bad",
            "--workflow",
            "daily_report",
            "--cron",
            "0 25 * * *",
            "--id-template",
            "report:{date}",
            "--args",
            '["{date}"]',
        )

    assert not Schedule.objects.filter(name="report-bad").exists()


def test_cli_pause_and_resume_change_the_state_and_name_the_os_user(report_schedule):
    paused = durable("schedule", "pause", "report-daily", "--reason", "bank maintenance")
    resumed = durable("schedule", "resume", "report-daily")

    events = ScheduleEvent.objects.filter(schedule=report_schedule).order_by("chain_seq")
    assert "report-daily  paused" in paused and "no next occurrence" in paused
    assert "report-daily  active" in resumed
    assert [(event.action, event.actor.startswith("cli:")) for event in events] == [
        ("create", False),
        ("pause", True),
        ("resume", True),
    ]


def test_cli_list_shows_each_schedule_and_its_state(report_schedule):
    schedule_pause("report-daily", actor="ana")

    output = durable("schedule", "list")

    line = next(line for line in output.splitlines() if line.startswith("report-daily"))
    assert "0 0 * * * (America/Sao_Paulo)" in line and "report:{date}" in line and "paused" in line


def test_cli_pause_of_an_unknown_schedule_is_an_error():
    with pytest.raises(CommandError, match="no schedule named 'nope'"):
        durable("schedule", "pause", "nope")


# --- admin ---


def test_an_operator_pauses_a_schedule_from_the_admin_and_the_trail_names_them(
    client, report_schedule
):
    staff_with(client, "view_schedule", "operate_schedule", username="ana")

    response = changelist_action(client, "pause_selected", report_schedule)

    report_schedule.refresh_from_db()
    event = ScheduleEvent.objects.get(schedule=report_schedule, action="pause")
    assert response.status_code == 200 and "1 schedule paused." in response.content.decode()
    assert (report_schedule.paused, report_schedule.next_fire_at) == (True, None)
    assert (event.actor, event.detail["via"], event.detail["user"]) == ("ana", "admin", "ana")


def test_an_operator_resumes_a_schedule_from_the_admin(client, report_schedule):
    schedule_pause("report-daily", actor="bia")
    staff_with(client, "view_schedule", "operate_schedule", username="ana")

    changelist_action(client, "resume_selected", report_schedule)

    report_schedule.refresh_from_db()
    assert not report_schedule.paused and report_schedule.next_fire_at is not None
    assert ScheduleEvent.objects.get(schedule=report_schedule, action="resume").actor == "ana"


def test_a_viewer_cannot_pause_a_schedule(client, report_schedule):
    staff_with(client, "view_schedule", username="viewer")

    changelist_action(client, "pause_selected", report_schedule)

    report_schedule.refresh_from_db()
    assert not report_schedule.paused
    assert not ScheduleEvent.objects.filter(schedule=report_schedule, action="pause").exists()


def test_the_schedule_page_shows_its_cron_in_words_and_its_trail(client, report_schedule):
    staff_with(client, "view_schedule")

    page = client.get(
        reverse("admin:durable_schedule_change", args=[report_schedule.pk])
    ).content.decode()

    assert "At 00:00 every day" in page and "America/Sao_Paulo" in page
    assert "audit trail" in page.lower()


def test_schedule_audit_chains_verify_including_the_seeded_one(report_schedule):
    schedule_pause("report-daily", actor="ana")

    report = chain.verify(ScheduleEvent)

    assert report.broken is None
    assert report.chains == Schedule.objects.count()


def schedule_form(**changes) -> dict:
    return {
        "name": "report-admin",
        "workflow_name": "daily_report",
        "cron": "0 6 * * 1-5",
        "timezone": "America/Sao_Paulo",
        "id_template": "report:{date}",
        "args": '["{date}"]',
        "kwargs": "{}",
        "catch_up": "all",
        "events-TOTAL_FORMS": "0",
        "events-INITIAL_FORMS": "0",
        **changes,
    }


def test_an_operator_creates_a_schedule_in_the_admin_and_the_trail_names_them(client):
    staff_with(client, "view_schedule", "add_schedule", username="ana")

    response = client.post(reverse("admin:durable_schedule_add"), schedule_form())

    schedule = Schedule.objects.get(name="report-admin")
    assert response.status_code == 302
    assert (schedule.cron, schedule.args, schedule.next_fire_at is not None) == (
        "0 6 * * 1-5",
        ["{date}"],
        True,
    )
    assert ScheduleEvent.objects.get(schedule=schedule, action="create").actor == "ana"


def test_a_bad_cron_in_the_admin_form_is_shown_and_nothing_is_saved(client):
    staff_with(client, "view_schedule", "add_schedule")

    response = client.post(reverse("admin:durable_schedule_add"), schedule_form(cron="0 6 * * 8"))

    assert response.status_code == 200
    assert (
        "cron expression &#x27;0 6 * * 8&#x27; is not valid: Bad day-of-week"
        in response.content.decode()
    )
    assert not Schedule.objects.filter(name="report-admin").exists()


def test_changing_the_cron_in_the_admin_moves_the_next_occurrence_and_audits_old_and_new(
    client, report_schedule
):
    staff_with(client, "view_schedule", "change_schedule", username="ana")

    with fake_clock(NOON):
        client.post(
            reverse("admin:durable_schedule_change", args=[report_schedule.pk]),
            schedule_form(name="ignored", cron="30 1 * * *", timezone="America/Sao_Paulo"),
        )

    report_schedule.refresh_from_db()
    event = ScheduleEvent.objects.get(schedule=report_schedule, action="update")
    assert report_schedule.name == "report-daily"  # the name is not editable
    assert report_schedule.next_fire_at == datetime(
        2026, 5, 6, 4, 30, tzinfo=UTC
    )  # 01:30 in São Paulo
    assert (event.actor, event.detail["changed"]) == ("ana", {"cron": ["0 0 * * *", "30 1 * * *"]})


def test_cli_update_changes_the_catch_up_policy_and_records_it(report_schedule):
    durable("schedule", "update", "report-daily", "--catch-up", "skip")

    report_schedule.refresh_from_db()
    assert report_schedule.catch_up == "skip"
    assert ScheduleEvent.objects.get(schedule=report_schedule, action="update").detail[
        "changed"
    ] == {"catch_up": ["all", "skip"]}


def test_a_schedule_is_never_deleted_from_the_admin(client, report_schedule):
    user = staff_with(client, "view_schedule", "delete_schedule")

    response = user.post(
        reverse("admin:durable_schedule_delete", args=[report_schedule.pk]), {"post": "yes"}
    )

    assert response.status_code == 403
    assert Schedule.objects.filter(pk=report_schedule.pk).exists()
