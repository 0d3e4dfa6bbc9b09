"""Celery beat's scheduler (``CELERY_BEAT_SCHEDULER``): Celery's own, publishing with
publisher confirms when the queues are quorum queues (``CELERY_QUEUE_TYPE=quorum``).

RabbitMQ 3.10 registers a channel as a quorum queue's publisher on the channel's first
publish to it, with the node its queue record then names as leader. A channel opened while
the queue elects a new leader (beat reconnecting, within milliseconds, after its node was
killed) asks the dead node, and the broker rejects that publish and every later one on the
channel, for it never asks another node. Without confirms a rejected publish is dropped
and nothing says so: beat "sent" the sweep every tick and none arrived (docs/operations.md,
"RabbitMQ cluster"). With confirms the rejection comes back as a nack, which Celery's publish
retry policy treats as a lost connection: it connects again and publishes on a new
channel, which finds the new leader. A confirm that never comes counts the same after
``CONFIRM_SECONDS``, which the scheduler adds to every entry it publishes.
"""

from celery.beat import PersistentScheduler
from django.conf import settings
from kombu.utils.objects import cached_property

# How long beat waits for the broker to confirm a publish before it reconnects and sends
# again. A confirm normally takes milliseconds; one that comes too late costs a second
# copy of the message (a sweep, which does nothing twice), none that never comes.
CONFIRM_SECONDS = 3.0


class Scheduler(PersistentScheduler):
    @cached_property
    def connection(self):
        if not confirms_publishes():
            return self.app.connection_for_write()
        options = {**self.app.conf.broker_transport_options, "confirm_publish": True}
        return self.app.connection_for_write(transport_options=options)

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry.options = publish_options(entry.options)
        return super().apply_async(entry, producer, advance, **kwargs)


def publish_options(options: dict) -> dict:
    """A schedule entry's publish options, with a confirm timeout when beat waits for
    confirms: every entry, including one added later to the schedule."""
    if not confirms_publishes():
        return options
    return {"confirm_timeout": CONFIRM_SECONDS, **options}


def confirms_publishes() -> bool:
    """Beat publishes with confirms: over AMQP, to quorum queues."""
    scheme = settings.CELERY_BROKER_URL.split(":", 1)[0]
    return scheme in ("amqp", "amqps", "pyamqp") and settings.CELERY_QUEUE_TYPE == "quorum"
