"""Readable durations for deadlines and sleeps: ``days(7)`` reads like the business rule."""
from datetime import timedelta


def days(n: float) -> timedelta:
    return timedelta(days=n)


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


def as_timedelta(value: timedelta | float | int | None) -> timedelta | None:
    """Accept a timedelta or a number of seconds, so ``timeout=30`` also works."""
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a timedelta or seconds, got {value!r}")
    return timedelta(seconds=value)
