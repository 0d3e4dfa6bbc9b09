"""Real Celery workers for the engine's integration tests."""

import pytest

from tests.workers import celery_processes

LEASE_SECONDS = "2"


@pytest.fixture
def celery(tmp_path, settings):
    """Workers and beat against the test database; the test process dispatches to them."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    with celery_processes(
        tmp_path,
        DURABLE_LEASE_SECONDS=LEASE_SECONDS,
        DURABLE_DISPATCH_GRACE_SECONDS="1",
        DURABLE_SWEEP_INTERVAL_SECONDS="0.5",
    ) as processes:
        yield processes
