"""Run and step priorities: 0..9, higher first (the sweep's pick, a limit's line, the broker)."""

DEFAULT_PRIORITY = 5
MAX_PRIORITY = 9


def check_priority(priority) -> int:
    """A whole number from 0 to 9; a ValueError naming the value otherwise."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MAX_PRIORITY
    ):
        raise ValueError(
            "a priority is a whole number from 0 to "
            f"{MAX_PRIORITY} (higher first), not {priority!r}"
        )
    return priority


def broker_priority(priority: int, broker_url: str) -> int | None:
    """The message priority that means ``priority`` to the broker, or None to send none.

    RabbitMQ serves higher numbers first (on queues declared with x-max-priority; others
    ignore it). Redis (kombu's priority lists) serves 0 first and files every message sent
    without a priority under 0, ahead of all others, across the queues a worker reads: a
    run above the default cannot go ahead of those there, so it goes as they do, and a run
    below the default goes behind them. The filesystem broker has none."""
    scheme = broker_url.split(":", 1)[0].lower()
    if scheme in ("amqp", "amqps", "pyamqp"):
        return priority
    if scheme in ("redis", "rediss", "sentinel"):
        return None if priority >= DEFAULT_PRIORITY else MAX_PRIORITY - priority
    return None
