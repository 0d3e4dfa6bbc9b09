"""The engine's one source of time, so tests can move it forward by days in microseconds.

Every deadline, lease and timer in durable/ reads ``clock.now()``, never the system clock
directly. A fake clock is a context variable: it affects the code that installed it (and
what that code calls), never another thread, a worker, or a concurrent test.
"""

import contextvars
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone

_fake: contextvars.ContextVar["FakeClock | None"] = contextvars.ContextVar(
    "durable_fake_clock", default=None
)


class FakeClock:
    def __init__(self, start: datetime | None = None):
        self._now = start or timezone.now()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        if not isinstance(delta, timedelta):
            delta = timedelta(seconds=delta)
        with self._lock:
            self._now += delta
        return self._now


def now() -> datetime:
    fake = _fake.get()
    return fake.now() if fake is not None else timezone.now()


def sleep(seconds: float) -> None:
    """Wait: for real, or on a fake clock by moving it forward."""
    fake = _fake.get()
    if fake is not None:
        fake.advance(seconds)
    elif seconds > 0:
        time.sleep(seconds)


@contextmanager
def fake_clock(start: datetime | None = None):
    """Freeze the engine's time; move it with ``clock.advance(days(7))``."""
    token = _fake.set(FakeClock(start))
    try:
        yield _fake.get()
    finally:
        _fake.reset(token)
