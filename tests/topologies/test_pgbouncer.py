"""The engine through PgBouncer in transaction mode (scripts/topology/pgbouncer): the pooler
is really between the app and PostgreSQL, really hands each transaction to whichever server
session is free, and runs with a timer, a signal and a limit still complete on real workers."""

from contextlib import contextmanager

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from durable import services
from durable.models import RunStatus, WorkflowRun
from tests.durable.test_limits_on_workers import intervals, most_at_once
from tests.topologies.conftest import PgBouncer
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RUNS = 4
WORKERS_NAME = "durable-through-pgbouncer"  # the workers' PGAPPNAME (conftest)


@contextmanager
def django_connection_through(pgbouncer: PgBouncer):
    """A Django connection to the test database with PgBouncer's address, set up as
    DATABASE_POOLER=transaction sets it up."""
    settings_dict = {
        **connection.settings_dict,
        "HOST": pgbouncer.host,
        "PORT": str(pgbouncer.port),
        "OPTIONS": {
            **connection.settings_dict["OPTIONS"],
            "server_side_binding": False,
            "prepare_threshold": None,
        },
        "DISABLE_SERVER_SIDE_CURSORS": True,
    }
    pooled = type(connections[DEFAULT_DB_ALIAS])(settings_dict, alias="through-pgbouncer")
    try:
        yield pooled
    finally:
        pooled.close()


def backend_pid(django_connection) -> int:
    """The server session that ran this statement (its own transaction: autocommit)."""
    with django_connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_one_connection_s_next_transaction_runs_on_another_session_when_its_last_is_taken(
    pgbouncer,
):
    database = connection.settings_dict["NAME"]
    with django_connection_through(pgbouncer) as pooled, pgbouncer.connect(database) as other:
        for _ in range(20):  # a stray client may take the freed session first: try again
            first = backend_pid(pooled)
            with other.transaction():  # another client, in a transaction, on a free session
                taken = other.execute("SELECT pg_backend_pid()").fetchone()[0]
                second = backend_pid(pooled)
            if taken == first:
                break
        pools = [pool for pool in pgbouncer.show("POOLS") if pool["database"] == database]

    assert taken == first, (
        "no other client ever ran on the server session the Django connection had just used: "
        "the connection keeps its session (session mode, or no pooler in the path)"
    )
    assert second != first
    assert [pool["pool_mode"] for pool in pools] == ["transaction"]


def test_runs_with_a_timer_a_signal_and_a_limit_complete_on_workers_through_pgbouncer(
    pgbouncer, celery_through_pgbouncer
):
    celery = celery_through_pgbouncer
    celery.start_worker("w0")
    celery.start_worker("w1")
    celery.start_beat()
    run_ids = [
        services.run_start("topology_order", n, id=f"pooled:{n}", actor="test").id
        for n in range(RUNS)
    ]
    wait_until(
        lambda: WorkflowRun.objects.filter(pk__in=run_ids, waiting_for="signal:go").count() == RUNS,
        timeout=120,
        interval=0.2,
        message="every run to sleep, then wait for its signal",
    )

    for n, run_id in enumerate(run_ids):
        services.signal_send(
            run_id, "go", {"token": f"t-{n}"}, dedupe_key=f"{run_id}:go", actor="t"
        )
    wait_until(
        lambda: (
            WorkflowRun.objects.filter(pk__in=run_ids, status=RunStatus.COMPLETED).count() == RUNS
        ),
        timeout=120,
        interval=0.2,
        message="every run to complete",
    )

    runs = WorkflowRun.objects.filter(pk__in=run_ids).order_by("id")
    assert [run.result for run in runs] == [{"n": n, "delivered": f"t-{n}"} for n in range(RUNS)]
    spans = intervals("pooled:")
    assert len(spans) == RUNS, "a step ran more than once, or not at all"
    assert most_at_once(spans) == 1, "two steps under a limit of one ran at once"
    workers = [
        client
        for client in pgbouncer.show("CLIENTS")
        if client["database"] == connection.settings_dict["NAME"]
        and client["application_name"] == WORKERS_NAME
    ]
    assert len(workers) >= 2, f"the workers are not PgBouncer's clients: {workers}"
