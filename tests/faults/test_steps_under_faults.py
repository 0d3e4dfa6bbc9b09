"""One step under one fault, on real workers: frozen (SIGSTOP) inside a step, its database
connection cut inside a step, a step that kills its worker every time, a step that hangs.

The workers run with a 2 s lease and a 0.5 s sweep tick (tests/faults/conftest.py), so
"lease + two ticks" is 3 s here.
"""

import os
import signal
import time

import pytest
from django.conf import settings
from django.db import connection

from durable import services
from durable.models import EntryStatus, JournalEntry, RunStatus, WorkflowRun
from tests.effects.models import Effect, Once
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LEASE, TICK = 2.0, 0.5
SLACK = 1.0  # process start-up and a loaded 2-core machine
needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend and row locks are PostgreSQL's"
)


@pytest.fixture
def markers(tmp_path, celery_processes):
    folder = tmp_path / "markers"
    folder.mkdir()
    celery_processes.env["FAULT_MARKERS"] = str(folder)
    return folder


def attempts(markers, kind: str, n: int) -> int:
    return len(list(markers.glob(f"{kind}-{n}-*")))


def run_of(run_id: str) -> WorkflowRun:
    return WorkflowRun.objects.get(pk=run_id)


def worker_holding(celery, run: WorkflowRun) -> str:
    """The name of the worker whose process holds the run's lease (owner is host:pid:thread)."""
    pid = int(run.lease_owner.split(":")[1])
    group = os.getpgid(pid)  # prefork children share their worker's process group
    return next(name for name, proc in celery.procs.items() if proc.pid == group)


def terminate_worker_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            ["durable-fault-worker"],
        )
        return cursor.fetchone()[0]


def freeze_inside_the_step(celery, markers, run_id: str, kind: str, n: int):
    """Wait until a worker is inside the step, SIGSTOP its whole process group, and return
    (its name, the moment it froze, the fencing token of its lease)."""
    wait_until(lambda: attempts(markers, kind, n) >= 1, timeout=60, message="the step to start")
    run = run_of(run_id)
    name = worker_holding(celery, run)
    os.killpg(celery.procs[name].pid, signal.SIGSTOP)
    return name, time.monotonic(), run.fencing_token


def taken_over(run_id: str, token: int) -> bool:
    """Another worker claimed the run since ``token``. Read from the token, not the lease
    owner: a new holder can claim, finish the step and park the run between two polls,
    leaving the owner empty again (which made these tests miss a takeover about one run
    in five)."""
    return run_of(run_id).fencing_token > token


def thaw(celery, name: str) -> None:
    os.killpg(celery.procs[name].pid, signal.SIGCONT)


@needs_postgres
def test_a_worker_frozen_inside_an_atomic_step_holds_the_run_for_no_longer_than_its_lease(
    celery_processes, markers
):
    celery = celery_processes
    celery.start_worker("w0", concurrency=1)
    celery.start_worker("w1", concurrency=1)
    celery.start_beat()
    run_id = services.run_start("fault_frozen", 1, True, id="frozen:1", actor="test").id

    frozen, frozen_at, token = freeze_inside_the_step(celery, markers, run_id, "atomic", 1)
    try:
        sending = time.monotonic()
        services.signal_send(run_id, "go", {"token": "t-1"}, dedupe_key="go:1", actor="test")
        send_seconds = time.monotonic() - sending
        wait_until(
            lambda: taken_over(run_id, token),
            timeout=30,
            interval=0.02,
            message="another worker to take the run",
        )
        takeover_seconds = time.monotonic() - frozen_at
        time.sleep(max(0.0, 3 * LEASE - (time.monotonic() - frozen_at)))
    finally:
        thaw(celery, frozen)
    wait_until(
        lambda: run_of(run_id).status == RunStatus.COMPLETED,
        timeout=60,
        message="the run to complete",
    )
    time.sleep(1.0)  # the thawed worker's late writes, if any got through, would land by now

    print(
        f"\n[faults] frozen atomic step: signal_send {send_seconds:.3f} s, takeover after "
        f"{takeover_seconds:.2f} s (lease {LEASE} s + two ticks = {LEASE + 2 * TICK} s)"
    )
    assert send_seconds < 1.0, "signal_send waited on a lock the frozen worker held"
    assert takeover_seconds <= LEASE + 2 * TICK + SLACK
    assert Once.objects.filter(key=f"{run_id}:held").count() == 1
    assert (
        JournalEntry.objects.filter(run_id=run_id, position=0, status=EntryStatus.COMPLETED).count()
        == 1
    )
    assert run_of(run_id).result == "t-1"
    assert celery.procs[frozen].poll() is None, "the thawed worker exited"


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite's write lock lives in the writing process: a worker frozen while its "
    "heartbeat writes holds it (docs/operations.md, the embedded default)",
)
def test_a_worker_frozen_inside_a_plain_step_is_taken_over_and_fenced(celery_processes, markers):
    celery = celery_processes
    celery.start_worker("w0", concurrency=1)
    celery.start_worker("w1", concurrency=1)
    celery.start_beat()
    run_id = services.run_start("fault_frozen", 2, False, id="frozen:2", actor="test").id

    frozen, frozen_at, token = freeze_inside_the_step(celery, markers, run_id, "plain", 2)
    try:
        wait_until(
            lambda: taken_over(run_id, token),
            timeout=30,
            interval=0.02,
            message="another worker to take the run",
        )
        takeover_seconds = time.monotonic() - frozen_at
        wait_until(
            lambda: JournalEntry.objects.filter(run_id=run_id, position=0).exists(),
            timeout=30,
            message="the new holder to record the step",
        )
        services.signal_send(run_id, "go", {"token": "t-2"}, dedupe_key="go:2", actor="test")
        wait_until(
            lambda: run_of(run_id).status == RunStatus.COMPLETED,
            timeout=30,
            message="the run to complete",
        )
        time.sleep(max(0.0, 3 * LEASE - (time.monotonic() - frozen_at)))
    finally:
        thaw(celery, frozen)
    time.sleep(3.0)  # the thawed worker finishes its step and tries to record it

    print(f"\n[faults] frozen plain step: takeover after {takeover_seconds:.2f} s")
    assert takeover_seconds <= LEASE + 2 * TICK + SLACK
    entries = JournalEntry.objects.filter(run_id=run_id)
    assert entries.count() == 2 and entries.get(position=0).attempt == 1
    assert 1 <= Effect.objects.filter(run_id="frozen:2", name="linger").count() <= 2
    assert run_of(run_id).status == RunStatus.COMPLETED and run_of(run_id).result == "t-2"


@needs_postgres
def test_connections_lost_inside_an_atomic_step_spend_none_of_its_retries(
    celery_processes, markers
):
    celery = celery_processes
    celery.env["PGAPPNAME"] = "durable-fault-worker"
    celery.start_worker("w0", concurrency=1)
    celery.start_beat()
    blips = 4  # more than the step's three attempts
    run_id = services.run_start("fault_blips", 1, blips, id="blips:1", actor="test").id

    cut = 0
    for attempt in range(1, blips + 1):
        wait_until(
            lambda attempt=attempt: attempts(markers, "blip", 1) >= attempt,
            timeout=60,
            message=f"attempt {attempt} to start",
        )
        time.sleep(0.3)  # inside the step's transaction
        cut += terminate_worker_connections()
    wait_until(
        lambda: (
            run_of(run_id).status not in (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)
        ),
        timeout=60,
        message="the run to end",
    )

    run = run_of(run_id)
    assert cut >= blips
    assert run.status == RunStatus.COMPLETED, f"the run ended {run.status}: {run.error}"
    assert JournalEntry.objects.get(run_id=run_id, position=0).attempt == 1
    assert Once.objects.filter(key=f"{run_id}:ledger").count() == 1


@needs_postgres
@pytest.mark.skipif(
    settings.DURABLE_DATABASE_POOLER == "transaction",
    reason="behind a transaction pooler a worker between two transactions holds no server "
    "session for pg_terminate_backend to end: the pooler absorbs the fault",
)
def test_a_journal_write_whose_connection_died_is_sent_again_not_the_effect(
    celery_processes, markers
):
    celery = celery_processes
    celery.env["PGAPPNAME"] = "durable-fault-worker"
    celery.start_worker("w0", concurrency=1)
    celery.start_beat()

    run_ids = []
    for n in range(3):
        run_ids.append(services.run_start("fault_lost_write", n, id=f"blip:{n}", actor="test").id)
        wait_until(
            lambda n=n: attempts(markers, "send", n) >= 1, timeout=60, message=f"send {n} to start"
        )
        time.sleep(0.2)  # the effect is made; the step pauses before returning
        assert terminate_worker_connections() >= 1
        wait_until(
            lambda: run_of(run_ids[-1]).status == RunStatus.COMPLETED,
            timeout=60,
            message=f"run {n} to complete",
        )

    for n in range(3):
        assert Effect.objects.filter(run_id=f"blip:{n}", name="send").count() == 1, (
            f"run {n}: the effect ran again because its journal write was lost"
        )


def test_a_step_that_kills_its_worker_every_time_blocks_the_run_as_a_crash_loop(
    celery_processes, markers
):
    celery = celery_processes
    celery.env["DURABLE_CRASH_LOOP_LIMIT"] = "3"
    worker = celery.start_worker("w0", concurrency=1)
    celery.start_beat()
    run_id = services.run_start("fault_crash_loop", 1, id="crash:1", actor="test").id

    wait_until(
        lambda: run_of(run_id).status == RunStatus.BLOCKED,
        timeout=90,
        message="the run to be blocked",
    )

    run = run_of(run_id)
    assert run.error["type"] == "CrashLoop"
    assert "crash loop at step 'kill_my_worker'" in run.error["message"]
    assert attempts(markers, "crash", 1) == 3
    assert worker.poll() is None
    time.sleep(2 * LEASE)
    assert attempts(markers, "crash", 1) == 3, "the blocked run was still being run"


def test_a_hung_step_times_out_and_its_retry_completes_the_run(celery_processes, markers):
    celery = celery_processes
    celery.start_worker("w0", concurrency=2)
    celery.start_beat()
    started = time.monotonic()
    run_id = services.run_start("fault_timeout", 1, 3600.0, id="timeout:1", actor="test").id

    wait_until(
        lambda: run_of(run_id).status == RunStatus.COMPLETED,
        timeout=60,
        message="the run to complete",
    )
    elapsed = time.monotonic() - started

    entry = JournalEntry.objects.get(run_id=run_id, position=0)
    print(f"\n[faults] hung step: completed after {elapsed:.2f} s (timeout 1 s + lease {LEASE} s)")
    assert entry.status == EntryStatus.COMPLETED and entry.attempt == 2
    assert attempts(markers, "hang", 1) == 2
    assert elapsed <= 1.0 + LEASE + 2 * TICK + SLACK + 2.0  # + the run's start and worker pick-up


def test_a_timed_out_step_that_returns_late_is_fenced(celery_processes, markers):
    celery = celery_processes
    celery.start_worker("w0", concurrency=2)
    celery.start_beat()
    run_id = services.run_start("fault_timeout", 2, 5.0, id="timeout:2", actor="test").id
    wait_until(
        lambda: run_of(run_id).status == RunStatus.COMPLETED,
        timeout=60,
        message="the run to complete",
    )
    completed = JournalEntry.objects.get(run_id=run_id, position=0)

    wait_until(lambda: attempts(markers, "hang", 2) >= 2, timeout=10, message="two attempts")
    time.sleep(6.0)  # the first attempt returns after 5 s and tries to record itself

    entry = JournalEntry.objects.get(run_id=run_id, position=0)
    assert (entry.status, entry.attempt, entry.result) == (
        EntryStatus.COMPLETED,
        2,
        completed.result,
    )
    assert run_of(run_id).status == RunStatus.COMPLETED
