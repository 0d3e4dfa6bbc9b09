"""Kills in the middle of the new operations that create runs: a fork (``manage.py durable fork``)
and a continue-as-new (a worker), each SIGKILLed after writing the new run but before its
commit, leave nothing behind; done again, they make one run."""

import subprocess
import sys

import pytest
from django.db import connection, connections

from durable import chain, services
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.testing import drive
from tests.durable.test_archive_kill import backend_gone, backend_waiting_on, kill, wait_for
from tests.effects.models import Effect
from tests.support import ROOT, subprocess_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="holds the fork on a PostgreSQL table lock"
    ),
]

SOURCE, FORK = "fork:killed", "fork:killed:again"


@pytest.fixture
def finished_run() -> WorkflowRun:
    run = drive(services.run_start("step_wait_step", id=SOURCE, actor="test").id)
    services.signal_send(run.id, "go", {"value": 1}, actor="test")
    return drive(run.id)


def test_a_fork_killed_before_its_commit_leaves_nothing_and_forking_again_makes_one(finished_run):
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with (
        blocker.cursor() as cursor
    ):  # the fork's signal copy waits here, after the run and journal rows
        cursor.execute(f'LOCK TABLE "{Signal._meta.db_table}" IN EXCLUSIVE MODE')
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "durable",
            "fork",
            SOURCE,
            "--at",
            "1",
            "--yes",
            "--id",
            FORK,
        ],
        cwd=ROOT,
        env=subprocess_env(),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    backend = wait_for(
        lambda: backend_waiting_on(Signal._meta.db_table), "the fork to wait on the lock", process
    )

    kill(process)
    blocker.rollback()
    blocker.close()
    wait_for(lambda: backend_gone(backend), "the killed fork's backend to end")

    assert not WorkflowRun.objects.filter(pk=FORK).exists()
    assert not JournalEntry.objects.filter(run_id=FORK).exists()
    assert not AuditEvent.objects.filter(run_id=SOURCE, action="fork").exists()
    fork = drive(services.run_fork(SOURCE, at_position=1, actor="test", id=FORK).id)
    assert fork.status == RunStatus.COMPLETED
    assert AuditEvent.objects.filter(run_id=SOURCE, action="fork").count() == 1
    assert chain.verify(AuditEvent).broken is None


def backend_updating(table: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            [f'UPDATE "{table}"%'],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def test_a_worker_killed_while_its_run_continues_as_new_leaves_one_chain():
    """The worker has ended the run and inserted its successor, and waits to move the run's
    untaken signal: killed there, nothing of it commits; the next worker continues once."""
    run = services.run_start("counting_loop", 1, 0, id="count:killed", actor="test")
    services.signal_send(run.id, "unrelated", {"n": 1}, actor="test")
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        cursor.execute(f'LOCK TABLE "{Signal._meta.db_table}" IN EXCLUSIVE MODE')
    code = "import django; django.setup(); from durable.testing import drive; drive('count:killed')"
    worker = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=subprocess_env(DURABLE_LEASE_SECONDS="1"),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    backend = wait_for(
        lambda: backend_updating(Signal._meta.db_table), "the worker to wait on the lock", worker
    )

    kill(worker)
    blocker.rollback()
    blocker.close()
    wait_for(lambda: backend_gone(backend), "the killed worker's backend to end")

    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.RUNNING
    assert not WorkflowRun.objects.filter(pk="count:killed~2").exists()
    wait_for(
        lambda: drive(run.id).status == RunStatus.CONTINUED,
        "the lease to expire and the run to continue",
    )
    assert list(WorkflowRun.objects.filter(chain_root=run.id).values_list("id", flat=True)) == [
        "count:killed~2"
    ]
    assert (
        Effect.objects.filter(run_id=run.id, name="add_n").count() == 1
    )  # the step before is not run again
    assert Signal.objects.get(name="unrelated").run_id == "count:killed~2"
