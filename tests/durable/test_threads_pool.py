"""Runs on a real worker with Celery's ``threads`` pool: many I/O-bound steps in one process."""

import time

import pytest
from django.db import connection, transaction
from django.db.models import Count

from durable import services
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun
from tests.effects.models import Effect, Once
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ON_POSTGRESQL = connection.vendor == "postgresql"
THREADS = 50


def start_io_runs(workflow: str, count: int, seconds_to_wait: float) -> list[str]:
    with transaction.atomic():
        return [
            services.run_start(workflow, n, seconds_to_wait, id=f"{workflow}:{n}", actor="test").id
            for n in range(count)
        ]


def completed(run_ids: list[str]) -> int:
    return WorkflowRun.objects.filter(pk__in=run_ids, status=RunStatus.COMPLETED).count()


def per_run(queryset, field: str = "run_id") -> dict[str, int]:
    return dict(queryset.order_by().values_list(field).annotate(n=Count("id")))


def database_connections() -> int:
    """Sessions on this test database: the workers' and our own."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_500_io_bound_runs_on_one_threads_worker_complete_with_each_step_run_once(celery):
    celery.start_worker("threads", concurrency=THREADS, pool="threads")
    celery.start_beat()
    started = time.monotonic()

    run_ids = start_io_runs("io_bound", 500, 0.2)
    wait_until(
        lambda: completed(run_ids) == 500, timeout=240, interval=0.2, message="500 completed runs"
    )
    elapsed = time.monotonic() - started

    assert sorted(
        WorkflowRun.objects.filter(pk__in=run_ids).values_list("result", flat=True)
    ) == list(range(500))
    assert list(per_run(Effect.objects.filter(name="wait_on_io")).values()) == [1] * 500
    steps = JournalEntry.objects.filter(run_id__in=run_ids, kind=EntryKind.STEP)
    assert (
        list(steps.values_list("attempt", flat=True)) == [1] * 500
    )  # one entry each, none retried
    print(f"500 runs of one 0.2 s step on --pool threads --concurrency {THREADS}: {elapsed:.1f} s")


def test_thirty_steps_longer_than_the_lease_on_one_threads_worker_all_keep_their_leases(celery):
    celery.start_worker("threads", concurrency=THREADS, pool="threads")  # 20 threads idle, ready to
    celery.start_beat()  # take over a lost lease

    run_ids = start_io_runs("io_bound", 30, 3.0)  # the lease is 2 s: the heartbeat keeps each
    wait_until(
        lambda: completed(run_ids) == 30, timeout=120, interval=0.2, message="30 completed runs"
    )

    assert set(WorkflowRun.objects.filter(pk__in=run_ids).values_list("advances", flat=True)) == {1}
    assert set(per_run(Effect.objects.filter(name="wait_on_io")).values()) == {1}


@pytest.mark.skipif(not ON_POSTGRESQL, reason="counts sessions in pg_stat_activity")
def test_a_threads_worker_holds_at_most_one_connection_per_thread_and_its_heartbeat(celery):
    celery.start_worker("threads", concurrency=THREADS, pool="threads")
    celery.start_beat()
    peak = 0

    def all_done(run_ids):
        nonlocal peak
        peak = max(peak, database_connections())
        return completed(run_ids) == len(run_ids)

    run_ids = start_io_runs("io_bound", 150, 1.0)  # long enough for the heartbeat to write
    wait_until(lambda: all_done(run_ids), timeout=240, interval=0.1, message="150 completed runs")
    time.sleep(2)  # idle threads keep their connections: no more appear while nothing runs
    after = database_connections()

    assert peak <= THREADS + 10
    assert after <= THREADS + 10
    print(f"PostgreSQL sessions: peak {peak}, idle after {after} (threads: {THREADS})")


def test_a_threads_worker_killed_mid_atomic_steps_is_replaced_and_no_effect_repeats(celery):
    celery.start_worker("doomed", concurrency=20, pool="threads")
    celery.start_beat()
    run_ids = start_io_runs("io_bound_atomic", 60, 0.5)
    wait_until(
        lambda: Once.objects.count() >= 10, timeout=120, message="some atomic steps to commit"
    )

    celery.kill("doomed")
    interrupted = WorkflowRun.objects.filter(pk__in=run_ids, status=RunStatus.RUNNING).count()
    celery.start_worker("replacement", concurrency=20, pool="threads")
    wait_until(
        lambda: completed(run_ids) == 60, timeout=180, interval=0.2, message="60 completed runs"
    )

    assert interrupted > 0, "the kill landed between steps: the test proved nothing"
    assert Once.objects.count() == 60
    assert set(per_run(Effect.objects.filter(name="book_once")).values()) == {1}
    assert len(per_run(Effect.objects.filter(name="book_once"))) == 60
    print(f"killed with {interrupted} runs inside their atomic step; every booking happened once")


@pytest.mark.skipif(
    not ON_POSTGRESQL,
    reason="SQLite locks the whole database: a held write transaction "
    "stalls every writer, heartbeats included (docs/operations.md)",
)
def test_a_run_row_locked_by_a_slow_transaction_does_not_stall_the_heartbeat_of_the_other_runs(
    celery,
):
    celery.start_worker("threads", concurrency=40, pool="threads")
    celery.start_beat()
    run_ids = start_io_runs("io_bound", 20, 4.0)
    locked = services.run_start("io_bound", 99, 4.0, id="io_bound:locked", actor="test").id
    wait_until(
        lambda: Effect.objects.filter(name="wait_on_io").count() == 21,
        timeout=60,
        message="every step to be running",
    )

    with transaction.atomic():  # a webhook that signals the run, then works on in its transaction
        services.signal_send(locked, "poke", actor="test")
        time.sleep(4.0)  # twice the lease
    wait_until(
        lambda: completed([*run_ids, locked]) == 21,
        timeout=120,
        interval=0.2,
        message="21 completed runs",
    )

    others = WorkflowRun.objects.filter(pk__in=run_ids)
    assert set(others.values_list("advances", flat=True)) == {1}
    assert set(per_run(Effect.objects.filter(name="wait_on_io", run_id__in=run_ids)).values()) == {
        1
    }
