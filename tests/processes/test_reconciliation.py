"""Reconciliation: one named, atomic step per missing entry; killed mid-way, posts each once."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.db import connection

from durable import days, hours
from durable.models import AuditEvent, JournalEntry, RunStatus, WorkflowRun
from durable.models.schedules import Schedule
from durable.tasks import tick
from durable.testing import drive, fake_clock
from processes.reconciliation.models import (
    BankStatementLine,
    BatchStatus,
    LedgerEntry,
    ReconciliationBatch,
)
from processes.reconciliation.services import reconciliation_start
from tests.support import subprocess_env

DAY = date(2026, 5, 5)
STARTED = datetime(2026, 5, 6, 0, 30, tzinfo=UTC)


@pytest.fixture
def statement():
    """Five bank lines; the ledger already has two of them."""
    for n in range(1, 6):
        BankStatementLine.objects.create(
            entry_id=f"e{n}", date=DAY, amount=Decimal(f"{n}0.00"), description=f"pix {n}"
        )
    for n in (1, 3):
        LedgerEntry.objects.create(entry_id=f"e{n}", date=DAY, amount=Decimal(f"{n}0.00"))


def corrections() -> list[str]:
    return list(
        LedgerEntry.objects.filter(is_correction=True)
        .order_by("entry_id")
        .values_list("entry_id", flat=True)
    )


@pytest.mark.django_db
def test_each_missing_entry_is_posted_by_its_own_step_then_the_batch_closes_at_the_window(
    statement, settings
):
    settings.RECONCILIATION_CLOSING_TIME = "06:00"

    with fake_clock(STARTED) as clock:
        batch = reconciliation_start(batch_date=DAY, actor="test")
        drive(batch.run_id)
        drive_corrections(batch.run_id)
        run = drive(batch.run_id)
        assert run.waiting_for == "sleep"
        clock.advance(days(1) / 4)  # 06:30, past the closing window
        run = drive(batch.run_id)

    batch.refresh_from_db()
    assert run.result == {"batch": "2026-05-05", "posted": ["e2", "e4", "e5"]}
    assert corrections() == ["e2", "e4", "e5"]
    assert (batch.status, batch.corrections_posted) == (BatchStatus.RECONCILED, 3)
    steps = JournalEntry.objects.filter(run_id=run.id, kind="step").order_by("position")
    assert [s.name for s in steps] == [
        "open_batch",
        "fetch_bank_statement",
        "fetch_ledger",
        "closing_window",
        "mark_reconciled",
    ]


@pytest.mark.django_db
def test_each_missing_entry_is_a_child_run_named_after_the_entry(statement, clock):
    batch = reconciliation_start(batch_date=DAY, actor="test")

    drive(batch.run_id)

    children = WorkflowRun.objects.filter(parent_id=batch.run_id).order_by("id")
    assert [c.id for c in children] == [f"{batch.run_id}:post_e{n}" for n in (2, 4, 5)]
    assert {c.workflow_name for c in children} == {"reconcile_correction"}
    assert WorkflowRun.objects.get(pk=batch.run_id).waiting_for.startswith("signal:durable.child:")


def drive_corrections(run_id: str) -> None:
    for child_id in (
        WorkflowRun.objects.filter(parent_id=run_id).order_by("id").values_list("id", flat=True)
    ):
        drive(child_id)


@pytest.fixture
def seeded_schedule():
    """The schedule processes' migration seeded, as if seeded at STARTED's midnight."""
    schedule = Schedule.objects.get(name="reconcile-daily")
    Schedule.objects.filter(pk=schedule.pk).update(
        next_fire_at=datetime(2026, 5, 6, 0, 30, tzinfo=UTC)
    )
    return schedule


@pytest.mark.django_db
def test_reconciliation_runs_from_a_durable_schedule_not_a_beat_entry():
    from config.celery import app

    schedule = Schedule.objects.get(name="reconcile-daily")

    assert (schedule.workflow_name, schedule.cron, schedule.timezone, schedule.catch_up) == (
        "reconcile",
        "30 0 * * *",
        "UTC",
        "all",
    )
    assert not schedule.paused and schedule.next_fire_at is not None
    assert [
        entry["task"]
        for entry in app.conf.beat_schedule.values()
        if entry["task"].startswith("processes.reconcile")
    ] == []


@pytest.mark.django_db
def test_three_days_without_a_sweep_reconcile_each_missed_day_once(seeded_schedule):
    with fake_clock(datetime(2026, 5, 6, 0, 0, tzinfo=UTC)) as clock:
        tick()  # the last sweep before beat goes down: nothing is due yet
        clock.advance(days(3))  # three days without a sweep

        tick()  # beat is back
        tick()

    runs = WorkflowRun.objects.filter(workflow_name="reconcile").order_by("id")
    assert [run.id for run in runs] == [
        "reconcile:2026-05-05",
        "reconcile:2026-05-06",
        "reconcile:2026-05-07",
    ]
    assert [run.input["args"] for run in runs] == [["2026-05-05"], ["2026-05-06"], ["2026-05-07"]]


@pytest.mark.django_db
def test_a_missed_day_reconciles_that_day_not_yesterday(statement, seeded_schedule, settings):
    settings.RECONCILIATION_CLOSING_TIME = "06:00"
    with fake_clock(datetime(2026, 5, 6, 0, 0, tzinfo=UTC)) as clock:
        clock.advance(days(2) + hours(7))  # beat was down on the 6th and the 7th
        tick()

        drive(f"reconcile:{DAY.isoformat()}")
        drive_corrections(f"reconcile:{DAY.isoformat()}")
        run = drive(f"reconcile:{DAY.isoformat()}")

    batch = ReconciliationBatch.objects.get(date=DAY)
    assert run.result == {"batch": "2026-05-05", "posted": ["e2", "e4", "e5"]}
    assert (batch.status, batch.corrections_posted) == (BatchStatus.RECONCILED, 3)
    assert AuditEvent.objects.get(run_id=run.id, action="start").actor == "schedule:reconcile-daily"


@pytest.mark.django_db
def test_a_second_sweep_or_a_manual_start_of_the_same_day_starts_nothing(seeded_schedule):
    with fake_clock(datetime(2026, 5, 6, 0, 31, tzinfo=UTC)):
        tick()
        tick()  # a second beat
        reconciliation_start(batch_date=DAY, actor="ops")

    assert ReconciliationBatch.objects.count() == 1
    assert WorkflowRun.objects.filter(workflow_name="reconcile").count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_during_corrections_posts_each_correction_once(statement):
    batch = reconciliation_start(batch_date=DAY, actor="test")
    env = subprocess_env(
        DURABLE_LEASE_SECONDS="1",
        SLOW_LEDGER_SECONDS="60",
        RECONCILIATION_LEDGER_CLIENT="tests.processes.slow_ledger.SlowLedger",
    )
    code = (
        "import django; django.setup(); from durable.testing import drive; "
        "from durable.models import WorkflowRun; "
        f"drive({batch.run_id!r}); "
        f"[drive(c) for c in WorkflowRun.objects.filter(parent_id={batch.run_id!r}).order_by('id')"
        ".values_list('id', flat=True)]"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not corrections():  # the first correction committed; the second hangs uncommitted
            assert worker.poll() is None, "the worker exited before posting a correction"
            assert time.monotonic() < deadline, "the worker never posted a correction"
            time.sleep(0.05)
        time.sleep(0.2)
        os.killpg(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL
    assert corrections() == ["e2"]

    time.sleep(1.1)  # the dead worker's 1-second lease expires
    connection.close()
    drive_corrections(batch.run_id)
    run = drive(batch.run_id)

    batch.refresh_from_db()
    assert run.status in (RunStatus.WAITING, RunStatus.COMPLETED)
    assert corrections() == ["e2", "e4", "e5"]
    assert batch.corrections_posted == 3  # a counter that a repeated step would have bumped twice
    assert JournalEntry.objects.get(run_id=f"{batch.run_id}:post_e2", name="post_e2").attempt == 1
