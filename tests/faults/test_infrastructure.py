"""Redis restarted, PostgreSQL connections terminated, two beats and duplicate dispatches."""
import shutil
import socket
import subprocess
import time

import pytest
from django.db import connection

from durable.dispatch import send_advance
from tests.faults.harness import settle, start_chaos, wait_for_all

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of this test's own, so restarting it disturbs nobody else."""

    def __init__(self):
        self.port = free_port()
        self.proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_runs_survive_redis_being_killed_and_restarted_empty(celery_processes, rng):
    redis = PrivateRedis()
    redis.start()
    celery = celery_processes
    celery.env["CELERY_BROKER_URL"] = redis.url
    try:
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
    finally:
        celery.stop()
        redis.kill()

    settle(run_ids, sender, "Redis restarts", redis_restarts=restarts)
    assert restarts >= 2, "the runs finished before Redis could be restarted: the test proved nothing"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's")
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
                    ["durable-fault-worker"])
                terminated.append(cursor.fetchone()[0])
            next_burst = time.monotonic() + rng.uniform(3.5, 5.0)

    wait_for_all(run_ids, timeout=180, chaos=chaos)

    settle(run_ids, sender, "PostgreSQL connections terminated", connections_terminated=sum(terminated))
    assert len(terminated) >= 3 and sum(terminated) >= 3, "too few connections were terminated to prove anything"


def test_two_beats_and_duplicate_dispatches_do_no_harm(celery_processes, chaos_settings, rng):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=60, spread=4, beats=("beat-a", "beat-b"))
    for run_id in run_ids:  # every run also gets two racing advance messages
        send_advance(run_id)
        send_advance(run_id)

    wait_for_all(run_ids, timeout=180)

    settle(run_ids, sender, "two beats and duplicate dispatches")
