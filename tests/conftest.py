"""Fixtures shared by every test: a fake clock, the engine driven in-process, clean counters.

Also the rule for tests that start a redis-server of their own (marker ``redis_server``):
they run on the Redis configuration (``CELERY_BROKER_URL=redis://...``) or when asked
with ``DURABLE_TEST_REDIS_SERVER=1``; on the embedded defaults they are skipped, so that
configuration never starts a service behind a newcomer's back.
"""

import logging
import os
import shutil
import warnings
from datetime import UTC

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from durable import testing
from durable.testing import fake_clock
from tests.durable.workflows import CALLS


@pytest.fixture(autouse=True)
def _fresh_counters():
    CALLS.clear()
    testing.dispatched.clear()
    testing.dispatch_delays.clear()
    testing.dispatch_queues.clear()
    testing.dispatch_advances.clear()
    testing.dispatch_priorities.clear()
    yield


@pytest.fixture(autouse=True)
def _root_logger_left_as_found(request):
    """A test that leaves the root logger at another level (an in-process Celery worker set it
    to ERROR) would silence the warnings every later test reads: the level is put back, and
    the warnings summary names the test."""
    root = logging.getLogger()
    level = root.level
    yield
    if root.level != level:
        changed_to = logging.getLevelName(root.level)
        root.setLevel(level)
        warnings.warn(f"{request.node.nodeid} left the root logger at {changed_to}", stacklevel=1)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database as migrations leave it, but with the seeded daily reconciliation
    (processes migration 0006) out of every sweep: its next occurrence is the first 00:30 UTC
    after the migration, so a test that moves the fake clock an hour on, run before half
    past midnight, would see the sweep start ``reconcile:<day>`` beside what it asserted.
    Tests of that schedule set its ``next_fire_at`` themselves."""
    from datetime import datetime

    from durable.models.schedules import Schedule

    with django_db_blocker.unblock():
        Schedule.objects.filter(name="reconcile-daily").update(
            next_fire_at=datetime(2100, 1, 1, 0, 30, tzinfo=UTC)
        )
    yield
    with django_db_blocker.unblock():
        _end_pooled_sessions()


def _end_pooled_sessions() -> None:
    """Behind a pooler the test database is dropped through it, and the pooler keeps its
    server sessions on that database open after every client left (PgBouncer: for
    server_idle_timeout, 10 minutes by default), which DROP DATABASE refuses. End them from
    a session on the maintenance database, as the pooler would once idle long enough."""
    from django.conf import settings
    from django.db import connection, connections

    if not getattr(settings, "DURABLE_DATABASE_POOLER", None) or connection.vendor != "postgresql":
        return
    connections.close_all()
    with connection._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
            [connection.settings_dict["NAME"]],
        )


@pytest.fixture
def spans():
    """Every span this process ends, kept in memory: the SDK installed as config.tracing
    installs it from OTEL_TRACES_EXPORTER, with an exporter a test can read."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    # A process sets its provider once; the other tests run without one, as a site without
    # OTEL_TRACES_EXPORTER does (opentelemetry-test-utils resets these globals so too).
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def clock():
    with fake_clock() as frozen:
        yield frozen


def _redis_server_wanted() -> tuple[bool, str]:
    if os.environ.get("DURABLE_TEST_REDIS_SERVER", "").strip().lower() in {
        "1",
        "true",
        "yes",
        "on",
    }:
        return True, "DURABLE_TEST_REDIS_SERVER=1"
    if os.environ.get("CELERY_BROKER_URL", "").startswith("redis"):
        return True, "the broker is Redis"
    return False, "embedded defaults; DURABLE_TEST_REDIS_SERVER=1 runs them"


def pytest_report_header(config):
    wanted, why = _redis_server_wanted()
    found = shutil.which("redis-server")
    if wanted and found:
        return f"redis_server tests: start a private {found} on a free port ({why})"
    return f"redis_server tests: skipped ({why if not wanted else 'no redis-server on PATH'})"


def pytest_collection_modifyitems(config, items):
    wanted, _ = _redis_server_wanted()
    skip = pytest.mark.skip(
        reason="starts a redis-server of its own: set DURABLE_TEST_REDIS_SERVER=1 "
        "(or run on Redis) to include it"
    )
    for item in items:
        if not wanted and item.get_closest_marker("redis_server"):
            item.add_marker(skip)
