"""The engine's one source of time, so tests can move it forward by days in microseconds.

Every deadline, lease and timer in durable/ reads ``clock.now()``, never the system clock
directly. A fake clock only affects the process that installs it.
"""
import threading
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone

_fake: "FakeClock | None" = None
_lock = threading.Lock()


class FakeClock:
    def __init__(self, start: datetime | None = None):
        self._now = start or timezone.now()

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        if not isinstance(delta, timedelta):
            delta = timedelta(seconds=delta)
        with _lock:
            self._now += delta
        return self._now


def now() -> datetime:
    fake = _fake
    return fake.now() if fake is not None else timezone.now()


@contextmanager
def fake_clock(start: datetime | None = None):
    """Freeze the engine's time; move it with ``clock.advance(days(7))``."""
    global _fake
    previous, _fake = _fake, FakeClock(start)
    try:
        yield _fake
    finally:
        _fake = previous
