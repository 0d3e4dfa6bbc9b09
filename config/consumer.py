"""The Celery worker's consumer for quorum queues (``CELERY_QUEUE_TYPE=quorum``)."""

from celery.worker.consumer import Consumer


class ConsumerWithoutDelayedDelivery(Consumer):
    """Celery's consumer without its native delayed delivery step. That step declares 28
    delay queues and, each time the consumer reconnects, tries every broker URL in turn, a
    stopped node included, before the worker consumes again; and its delays, whole seconds,
    could not carry the engine's countdowns (under one sweep tick), which Celery does not
    send through it anyway on the engine's direct exchanges."""

    class Blueprint(Consumer.Blueprint):
        default_steps = [
            step
            for step in Consumer.Blueprint.default_steps
            if not step.endswith(":DelayedDelivery")
        ]
