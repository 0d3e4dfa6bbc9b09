"""Child runs on real Celery workers: fan-out and fan-in survive a worker's death."""

import pytest

from durable import services
from durable.models import RunStatus, WorkflowRun
from tests.effects.models import Once
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CHILDREN = 30


def test_a_fan_out_finishes_once_each_when_a_worker_is_killed_mid_way(celery):
    celery.start_worker("first")
    celery.start_worker("second")
    celery.start_beat()
    parent = services.run_start("fan_out_bookings", CHILDREN, id="workers:fan-out", actor="test")
    wait_until(lambda: Once.objects.count() >= CHILDREN // 3, timeout=60, message="some bookings")

    celery.kill("first")
    wait_until(
        lambda: WorkflowRun.objects.get(pk=parent.id).is_finished,
        timeout=120,
        message="the parent to end",
    )

    parent = WorkflowRun.objects.get(pk=parent.id)
    assert parent.status == RunStatus.COMPLETED, parent.error
    assert parent.result == [f"e{n}" for n in range(CHILDREN)]
    assert Once.objects.count() == CHILDREN
    assert (
        WorkflowRun.objects.filter(parent_id=parent.id, status=RunStatus.COMPLETED).count()
        == CHILDREN
    )
