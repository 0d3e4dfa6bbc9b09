"""The shipped Celery config gives the sweep a queue of its own and takeovers a lane."""

from config.celery import app


def test_the_sweep_goes_to_its_own_queue_and_never_expires():
    entry = app.conf.beat_schedule["durable-sweep"]

    assert app.amqp.router.route({}, entry["task"])["queue"].name == "durable-sweep"
    assert "expires" not in entry.get("options", {})


def test_a_worker_started_without_queues_consumes_the_default_the_takeover_lane_and_the_sweep():
    assert set(app.amqp.queues.consume_from) == {"celery", "durable-takeover", "durable-sweep"}


def test_each_queue_is_declared_as_celery_declares_one_it_creates():
    for name, queue in app.amqp.queues.items():
        assert (queue.exchange.name, queue.exchange.type, queue.routing_key) == (
            name,
            "direct",
            name,
        )
