"""A schedule fired by real beats and a worker: each missed occurrence runs once, with two beats."""

from datetime import timedelta

import pytest
from django.utils import timezone

from durable.features.schedules import schedule_create
from durable.models import RunStatus, WorkflowRun
from durable.models.schedules import Schedule, ScheduleEvent
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_two_beats_start_each_missed_occurrence_once_and_a_worker_completes_them(celery):
    schedule = schedule_create(
        "three-minutely",
        "three_steps",
        cron_expression="* * * * *",
        id_template="three:{datetime}",
        args=[4],
        actor="test",
    )
    this_minute = timezone.now().replace(second=0, microsecond=0)
    missed = [this_minute - timedelta(minutes=n) for n in (3, 2, 1)]  # beat was down for them
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=missed[0])
    expected = [f"three:{moment.isoformat(timespec='minutes')}" for moment in missed]
    celery.start_worker()
    celery.start_beat("beat-1")
    celery.start_beat("beat-2")

    wait_until(
        lambda: (
            WorkflowRun.objects.filter(pk__in=expected, status=RunStatus.COMPLETED).count() == 3
        ),
        timeout=90,
        message="the three missed minutes to run to completion",
    )

    fired = [
        run_id
        for event in ScheduleEvent.objects.filter(schedule=schedule, action="fire")
        for run_id in event.detail["fired"]
    ]
    assert set(expected) <= set(fired)
    assert len(fired) == len(set(fired))  # no occurrence fired by both beats
    assert list(WorkflowRun.objects.filter(pk__in=expected).values_list("result", flat=True)) == [
        7,
        7,
        7,
    ]
