"""The schedules' REST API: list, pause, resume and trigger, through the services, audited,
with the view and operate permissions of schedules."""

import json
from datetime import UTC, datetime

import pytest

from durable.features.schedules import schedule_create
from durable.models import WorkflowRun
from durable.models.schedules import ScheduleEvent
from durable.testing import fake_clock
from tests.durable.test_api import client_for, user_with
from tests.durable.test_schedules import daily_report  # noqa: F401  (registers the workflow)

pytestmark = pytest.mark.django_db

NOON = datetime(2026, 5, 5, 12, 0, tzinfo=UTC)


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


@pytest.fixture
def operator():
    return client_for(user_with("view_schedule", "operate_schedule", username="scheduler"))


def post(client, url, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def test_the_list_shows_each_schedule_with_its_next_occurrence(operator, report_schedule):
    listed = {schedule["name"]: schedule for schedule in operator.get("/api/schedules/").json()}

    report = listed["report-daily"]
    assert (report["workflow"], report["cron"], report["timezone"], report["paused"]) == (
        "daily_report",
        "0 0 * * *",
        "America/Sao_Paulo",
        False,
    )
    assert report["next_fire_at"].startswith("2026-05-06T03:00")


def test_pause_and_resume_go_through_the_services_and_are_audited(operator, report_schedule):
    paused = post(operator, "/api/schedules/report-daily/pause/", {"reason": "month-end freeze"})
    resumed = post(operator, "/api/schedules/report-daily/resume/")

    assert (paused.status_code, paused.json()["paused"]) == (200, True)
    assert (resumed.status_code, resumed.json()["paused"]) == (200, False)
    events = list(
        ScheduleEvent.objects.filter(schedule=report_schedule).values_list("action", "actor")
    )
    assert events[-2:] == [("pause", "scheduler"), ("resume", "scheduler")]


def test_trigger_starts_the_occurrence_of_now_once(operator, report_schedule):
    with fake_clock(NOON):
        first = post(operator, "/api/schedules/report-daily/trigger/")
        again = post(operator, "/api/schedules/report-daily/trigger/")

    assert (first.status_code, first.json()["run"]["id"], first.json()["started"]) == (
        201,
        "report:2026-05-05",
        True,
    )
    assert (again.status_code, again.json()["started"]) == (200, False)
    assert WorkflowRun.objects.get(pk="report:2026-05-05").input["args"] == ["2026-05-05"]
    assert ScheduleEvent.objects.filter(schedule=report_schedule, action="trigger").count() == 2


def test_a_paused_schedule_can_still_be_triggered_by_hand(operator, report_schedule):
    post(operator, "/api/schedules/report-daily/pause/")

    with fake_clock(NOON):
        response = post(operator, "/api/schedules/report-daily/trigger/")

    assert response.status_code == 201
    assert response.json()["schedule"]["paused"] is True


def test_an_unknown_schedule_is_a_404_in_the_error_shape(operator):
    response = post(operator, "/api/schedules/nope/trigger/")

    assert (response.status_code, response.json()["error"]["code"]) == (404, "schedule_not_found")


def test_viewing_runs_is_not_enough_to_see_or_operate_schedules(report_schedule):
    run_viewer = client_for(
        user_with("view_workflowrun", "operate_workflowrun", username="runs-only")
    )
    schedule_viewer = client_for(user_with("view_schedule", username="viewer"))

    assert run_viewer.get("/api/schedules/").status_code == 403
    assert schedule_viewer.get("/api/schedules/").status_code == 200
    assert post(schedule_viewer, "/api/schedules/report-daily/pause/").status_code == 403
    assert not WorkflowRun.objects.exists()
