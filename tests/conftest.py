"""Fixtures shared by every test: a fake clock, the engine driven in-process, clean counters."""
import pytest

from durable import testing
from durable.testing import fake_clock
from tests.durable.workflows import CALLS


@pytest.fixture(autouse=True)
def _fresh_counters():
    CALLS.clear()
    testing.dispatched.clear()
    testing.dispatch_delays.clear()
    yield


@pytest.fixture
def clock():
    with fake_clock() as frozen:
        yield frozen
