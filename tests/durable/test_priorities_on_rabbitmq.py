"""Priorities on a real RabbitMQ: advances that wait in a priority queue (x-max-priority) are
served higher first by a worker that comes to them, whatever order they were sent in."""

import pytest
from django.conf import settings

from durable import services
from durable.runtime.priorities import broker_priority
from tests.durable.limited import PRIORITY_QUEUE
from tests.effects.models import Effect
from tests.workers import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        broker_priority(9, settings.CELERY_BROKER_URL) != 9,
        reason="message priorities in this order are RabbitMQ's (the amqp broker)",
    ),
]


@pytest.fixture
def priority_queue():
    """The test's queue, declared afresh with x-max-priority by both sides (RabbitMQ refuses
    to change an existing queue's arguments), and deleted after."""
    from config.celery import app

    def delete():
        with app.connection_for_write() as connection:
            connection.default_channel.queue_delete(PRIORITY_QUEUE)

    delete()
    app.amqp.queues.max_priority, before = 10, app.amqp.queues.max_priority
    app.amqp.queues.pop(PRIORITY_QUEUE, None)
    yield
    app.amqp.queues.pop(PRIORITY_QUEUE, None)
    app.amqp.queues.max_priority = before
    delete()


def test_runs_waiting_in_a_priority_queue_are_served_highest_first(celery, priority_queue):
    for n, priority in enumerate([1, 2, 9, 3, 8, 0]):  # sent in this order, nobody consuming yet
        services.run_start(
            "served_by_priority", n, id=f"prio:rabbit:{n}", actor="test", priority=priority
        )

    celery.start_worker(
        "ordered",
        concurrency=1,
        queues=[PRIORITY_QUEUE],
        env={"CELERY_TASK_QUEUE_MAX_PRIORITY": "10"},
    )
    wait_until(lambda: Effect.objects.count() == 6, timeout=60, message="the six runs to be served")

    served = [
        name.removeprefix("served-")
        for name in Effect.objects.order_by("pk").values_list("name", flat=True)
    ]
    assert served == ["2", "4", "3", "1", "0", "5"]  # priorities 9, 8, 3, 2, 1, 0
