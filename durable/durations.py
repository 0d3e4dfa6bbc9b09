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


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> timedelta:
    """``90d``, ``12h``, ``2w``, ``30m``, ``45s`` (or bare seconds) as a timedelta, for settings
    and command lines; ValueError names what is wrong."""
    cleaned = str(text).strip().lower()
    unit = cleaned[-1:] if cleaned[-1:] in _UNITS else "s"
    number = cleaned[:-1] if cleaned[-1:] in _UNITS else cleaned
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a duration: write e.g. 90d, 12h, 2w, 30m or 45s"
        ) from None
    if not amount >= 0 or amount == float("inf"):
        raise ValueError(f"{text!r} is not a duration: it must be a finite number, 0 or more")
    return timedelta(seconds=amount * _UNITS[unit])
