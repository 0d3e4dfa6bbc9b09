"""A fork killed in the middle: ``manage.py durable fork`` SIGKILLed after it wrote the new run
and its journal but before it committed leaves nothing behind, and forking again makes one fork."""
import subprocess
import sys

import pytest
from django.db import connection, connections

from durable import services
from durable import chain
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.testing import drive
from tests.durable.test_archive_kill import backend_gone, backend_waiting_on, kill, wait_for
from tests.support import ROOT, subprocess_env

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="holds the fork on a PostgreSQL table lock")]

SOURCE, FORK = "fork:killed", "fork:killed:again"


@pytest.fixture
def finished_run() -> WorkflowRun:
    run = drive(services.run_start("step_wait_step", id=SOURCE, actor="test").id)
    services.signal_send(run.id, "go", {"value": 1}, actor="test")
    return drive(run.id)


def test_a_fork_killed_before_its_commit_leaves_nothing_and_forking_again_makes_one(finished_run):
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:  # the fork's signal copy waits here, after the run and journal rows
        cursor.execute(f'LOCK TABLE "{Signal._meta.db_table}" IN EXCLUSIVE MODE')
    process = subprocess.Popen([sys.executable, "manage.py", "durable", "fork", SOURCE, "--at", "1", "--yes",
                                "--id", FORK], cwd=ROOT, env=subprocess_env(), start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    backend = wait_for(lambda: backend_waiting_on(Signal._meta.db_table), "the fork to wait on the lock", process)

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
