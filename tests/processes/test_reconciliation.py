"""Reconciliation: one named, atomic step per missing entry; killed mid-way, posts each once."""
import os
import signal
import subprocess
import sys
import time
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from django.db import connection

from durable import days
from durable.models import JournalEntry, RunStatus, WorkflowRun
from durable.testing import drive
from processes.reconciliation.models import BankStatementLine, BatchStatus, LedgerEntry, ReconciliationBatch
from processes.reconciliation.services import reconciliation_start
from processes.tasks import reconcile_yesterday
from tests.support import subprocess_env

DAY = date(2026, 5, 5)
STARTED = datetime(2026, 5, 6, 0, 30, tzinfo=timezone.utc)


@pytest.fixture
def statement():
    """Five bank lines; the ledger already has two of them."""
    for n in range(1, 6):
        BankStatementLine.objects.create(entry_id=f"e{n}", date=DAY, amount=Decimal(f"{n}0.00"),
                                         description=f"pix {n}")
    for n in (1, 3):
        LedgerEntry.objects.create(entry_id=f"e{n}", date=DAY, amount=Decimal(f"{n}0.00"))


def corrections() -> list[str]:
    return list(LedgerEntry.objects.filter(is_correction=True).order_by("entry_id")
                .values_list("entry_id", flat=True))


@pytest.mark.django_db
def test_each_missing_entry_is_posted_by_its_own_step_then_the_batch_closes_at_the_window(statement, settings):
    settings.RECONCILIATION_CLOSING_TIME = "06:00"
    from durable.testing import fake_clock

    with fake_clock(STARTED) as clock:
        batch = reconciliation_start(batch_date=DAY)
        drive(batch.run_id)
        drive_corrections(batch.run_id)
        run = drive(batch.run_id)
        assert run.waiting_for == "sleep"
        clock.advance(days(1) / 4)      # 06:30, past the closing window
        run = drive(batch.run_id)

    batch.refresh_from_db()
    assert run.result == {"batch": "2026-05-05", "posted": ["e2", "e4", "e5"]}
    assert corrections() == ["e2", "e4", "e5"]
    assert (batch.status, batch.corrections_posted) == (BatchStatus.RECONCILED, 3)


@pytest.mark.django_db
def test_each_missing_entry_is_a_child_run_named_after_the_entry(statement, clock):
    batch = reconciliation_start(batch_date=DAY)

    drive(batch.run_id)

    children = WorkflowRun.objects.filter(parent_id=batch.run_id).order_by("id")
    assert [c.id for c in children] == [f"{batch.run_id}:post_e{n}" for n in (2, 4, 5)]
    assert {c.workflow_name for c in children} == {"reconcile_correction"}
    assert WorkflowRun.objects.get(pk=batch.run_id).waiting_for.startswith("signal:durable.child:")


def drive_corrections(run_id: str) -> None:
    for child_id in WorkflowRun.objects.filter(parent_id=run_id).order_by("id").values_list("id", flat=True):
        drive(child_id)


@pytest.mark.django_db
def test_the_daily_start_is_idempotent(clock):
    reconcile_yesterday()
    reconcile_yesterday()    # a second beat, or a redelivered task

    assert ReconciliationBatch.objects.count() == 1
    assert WorkflowRun.objects.filter(workflow_name="reconcile").count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_during_corrections_posts_each_correction_once(statement):
    batch = reconciliation_start(batch_date=DAY)
    env = subprocess_env(DURABLE_LEASE_SECONDS="1", SLOW_LEDGER_SECONDS="60",
                         RECONCILIATION_LEDGER_CLIENT="tests.processes.slow_ledger.SlowLedger")
    code = ("import django; django.setup(); from durable.testing import drive; "
            "from durable.models import WorkflowRun; "
            f"drive({batch.run_id!r}); "
            f"[drive(c) for c in WorkflowRun.objects.filter(parent_id={batch.run_id!r}).order_by('id')"
            ".values_list('id', flat=True)]")
    worker = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not corrections():   # the first correction committed; the second hangs uncommitted
            assert worker.poll() is None, "the worker exited before posting a correction"
            assert time.monotonic() < deadline, "the worker never posted a correction"
            time.sleep(0.05)
        time.sleep(0.2)
        os.killpg(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL
    assert corrections() == ["e2"]

    time.sleep(1.1)   # the dead worker's 1-second lease expires
    connection.close()
    drive_corrections(batch.run_id)
    run = drive(batch.run_id)

    batch.refresh_from_db()
    assert run.status in (RunStatus.WAITING, RunStatus.COMPLETED)
    assert corrections() == ["e2", "e4", "e5"]
    assert batch.corrections_posted == 3      # a counter that a repeated step would have bumped twice
    assert JournalEntry.objects.get(run_id=f"{batch.run_id}:post_e2", name="post_e2").attempt == 1
