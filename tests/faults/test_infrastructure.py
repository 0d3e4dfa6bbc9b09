"""Redis restarted, PostgreSQL connections terminated, two beats and duplicate dispatches."""

import shutil
import subprocess
import time

import pytest
from django.conf import settings
from django.db import connection

from durable.tasks import send_advance
from tests.faults.harness import (
    later_runs_reach_every_worker,
    settle,
    start_chaos,
    wait_for_all,
)
from tests.workers import PrivateRedis

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis(celery_processes):
    """A redis-server of the test's own as the workers' broker, gone after the test."""
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    server = PrivateRedis()
    server.start()
    celery_processes.env["CELERY_BROKER_URL"] = server.url
    yield server
    celery_processes.stop()
    server.kill()


@pytest.mark.redis_server
def test_runs_survive_redis_being_killed_and_restarted_empty(celery_processes, redis, rng):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=40, spread=6)
    restarts = 0
    next_restart = time.monotonic() + 1.5

    def chaos():
        nonlocal restarts, next_restart
        if restarts < 3 and time.monotonic() >= next_restart:
            redis.kill()  # every queued and unacknowledged message is gone
            time.sleep(rng.uniform(0.2, 1.0))
            redis.start()
            restarts += 1
            next_restart = time.monotonic() + rng.uniform(1.5, 3.0)

    wait_for_all(run_ids, timeout=180, chaos=chaos)

    settle(run_ids, sender, "Redis restarts", redis_restarts=restarts)
    assert restarts >= 2, (
        "the runs finished before Redis could be restarted: the test proved nothing"
    )


@pytest.mark.redis_server
def test_every_worker_keeps_consuming_after_redis_is_restarted_five_times(
    celery_processes, redis, rng
):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=30, spread=12)
    for _ in range(5):  # while advances are queued, in flight and unacknowledged
        time.sleep(rng.uniform(1.0, 2.0))
        redis.kill()
        time.sleep(rng.uniform(0.2, 1.0))
        redis.start()
    wait_for_all(run_ids, timeout=180)
    settle(run_ids, sender, "Redis restarted five times", redis_restarts=5)
    exited = [name for name, proc in celery.procs.items() if proc.poll() is not None]
    assert not exited, f"these Celery processes exited when Redis restarted: {exited}"

    later_runs_reach_every_worker(rng, first=100, after="the restarts")


def rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)


@pytest.mark.skipif(
    not settings.CELERY_BROKER_URL.startswith("amqp"),
    reason="restarts the RabbitMQ the suite runs against (the PostgreSQL + RabbitMQ configuration)",
)
def test_runs_survive_rabbitmq_being_stopped_and_started(celery_processes, rng):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=50, spread=8)
    restarts = 0
    next_restart = time.monotonic() + 1.5

    def chaos():
        nonlocal restarts, next_restart
        if restarts < 2 and time.monotonic() >= next_restart:
            rabbitmqctl("stop_app")  # queued and unacknowledged messages go with the broker
            time.sleep(rng.uniform(0.5, 1.5))
            rabbitmqctl("start_app")
            restarts += 1
            next_restart = time.monotonic() + rng.uniform(2.0, 4.0)

    wait_for_all(run_ids, timeout=240, chaos=chaos)

    settle(run_ids, sender, "RabbitMQ restarts", rabbitmq_restarts=restarts)
    exited = [name for name, proc in celery.procs.items() if proc.poll() is not None]
    assert not exited, f"these Celery processes exited when RabbitMQ restarted: {exited}"
    assert restarts >= 1, (
        "the runs finished before RabbitMQ could be restarted: the test proved nothing"
    )


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"
)
def test_runs_survive_their_database_connections_being_terminated(celery_processes, rng):
    celery = celery_processes
    celery.env["PGAPPNAME"] = "durable-fault-worker"
    run_ids, sender = start_chaos(celery, rng, runs=40, spread=16)
    terminated = []
    next_burst = time.monotonic() + 1.0

    def chaos():
        """Terminate every worker connection at once, a few times, far enough apart that
        a step re-run after one burst is recorded before the next (so "at most twice")."""
        nonlocal next_burst
        if len(terminated) < 6 and time.monotonic() >= next_burst:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = %s",
                    ["durable-fault-worker"],
                )
                terminated.append(cursor.fetchone()[0])
            next_burst = time.monotonic() + rng.uniform(3.5, 5.0)

    wait_for_all(run_ids, timeout=180, chaos=chaos)

    settle(
        run_ids, sender, "PostgreSQL connections terminated", connections_terminated=sum(terminated)
    )
    assert len(terminated) >= 3 and sum(terminated) >= 3, (
        "too few connections were terminated to prove anything"
    )


def test_two_beats_and_duplicate_dispatches_do_no_harm(celery_processes, chaos_settings, rng):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=60, spread=4, beats=("beat-a", "beat-b"))
    for run_id in run_ids:  # every run also gets two racing advance messages
        send_advance(run_id)
        send_advance(run_id)

    wait_for_all(run_ids, timeout=180)

    settle(run_ids, sender, "two beats and duplicate dispatches")
