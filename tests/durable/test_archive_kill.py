"""durable archive under SIGKILL: a real subprocess killed mid-pass, then run again, archives
every run exactly once (nothing lost, nothing duplicated, the audit chains still verify)."""

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.db.models import Count

from durable import services
from durable.models import JournalEntry, WorkflowRun
from durable.models.archive import (
    ArchiveBatch,
    ArchivedAuditEvent,
    ArchivedJournalEntry,
    ArchivedRun,
)
from durable.testing import drive
from tests.support import ROOT, subprocess_env

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="blocks the pass on a PostgreSQL table lock"
)
RUNS = 120


@pytest.fixture
def finished_runs() -> list[str]:
    ids = []
    for n in range(RUNS):
        run = services.run_start("three_steps", n, id=f"kill:{n:03d}", actor="test")
        drive(run.id)
        ids.append(run.id)
    assert WorkflowRun.objects.filter(status="completed").count() == RUNS
    return ids


def archive_command(*extra: str) -> list[str]:
    return [sys.executable, "manage.py", "durable", "archive", "--finished-before", "0s", *extra]


def start_pass(*extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        archive_command(*extra),
        cwd=ROOT,
        env=subprocess_env(),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def run_pass_to_the_end(*extra: str) -> str:
    done = subprocess.run(
        archive_command(*extra),
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wait_for(condition, what: str, process: subprocess.Popen | None = None, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if process is not None and process.poll() is not None:
            pytest.fail(
                f"the pass exited ({process.returncode}) before "
                f"{what}: {process.stdout.read().decode()}"
            )
        time.sleep(0.005)
    pytest.fail(f"timed out waiting for {what}")


def assert_archived_exactly_once(
    ids: list[str], journal_rows: int, export_dir: Path | None
) -> None:
    assert not WorkflowRun.objects.filter(id__in=ids).exists()
    assert sorted(ArchivedRun.objects.values_list("id", flat=True)) == sorted(ids)
    assert sum(ArchiveBatch.objects.values_list("runs", flat=True)) == len(ids)
    archive_events = Counter(
        dict(
            ArchivedAuditEvent.objects.filter(action="archive")
            .values("run_id")
            .annotate(n=Count("id"))
            .values_list("run_id", "n")
        )
    )
    assert set(archive_events) == set(ids) and set(archive_events.values()) == {1}
    if export_dir is None:
        assert ArchivedJournalEntry.objects.count() == journal_rows
    else:
        assert not list(export_dir.glob("*.partial"))
        exported = Counter(
            json.loads(line)["run"]["id"]
            for path in export_dir.glob("*.jsonl.gz")
            for line in gzip.open(path, "rt")
        )
        assert set(exported) == set(ids) and set(exported.values()) == {1}
        assert sum(1 for _ in export_dir.glob("*.jsonl.gz")) == ArchiveBatch.objects.count()
    out = io.StringIO()
    call_command("durable", "audit", "verify", stdout=out)  # exits non-zero (SystemExit) if broken
    assert "BROKEN" not in out.getvalue()


@pytest.mark.parametrize("mode", ["tables", "export"])
def test_a_pass_killed_mid_way_and_run_again_archives_every_run_exactly_once(
    finished_runs, tmp_path, mode
):
    journal_rows = JournalEntry.objects.count()
    export_dir = tmp_path / "exports" if mode == "export" else None
    extra = ["--batch-size", "2", *(["--export", str(export_dir)] if export_dir else [])]
    process = start_pass(*extra)
    wait_for(lambda: ArchiveBatch.objects.count() >= 3, "three batches committed", process)

    kill(process)
    taken = ArchivedRun.objects.count()
    run_pass_to_the_end(*extra)

    assert 0 < taken < RUNS, "the kill landed after the pass had finished"
    assert_archived_exactly_once(finished_runs, journal_rows, export_dir)


def backend_waiting_on(table: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            [f'INSERT INTO "{table}"%'],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def backend_gone(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone() is None


@on_postgresql
@pytest.mark.parametrize("mode", ["tables", "export"])
def test_a_pass_killed_between_writing_a_batch_and_committing_it_leaves_that_batch_hot(
    finished_runs, tmp_path, mode
):
    """The batch has locked its runs, chained their archive events and (export) fsynced its
    file; it waits on a table lock the test holds when it is killed."""
    journal_rows = JournalEntry.objects.count()
    export_dir = tmp_path / "exports" if mode == "export" else None
    extra = ["--batch-size", "10", *(["--export", str(export_dir)] if export_dir else [])]
    blocker = connections.create_connection("default")
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        cursor.execute('LOCK TABLE "durable_archivebatch" IN SHARE MODE')
    process = start_pass(*extra)
    backend = wait_for(
        lambda: backend_waiting_on("durable_archivebatch"), "the batch to wait on the lock", process
    )

    kill(process)
    blocker.rollback()
    blocker.close()
    wait_for(lambda: backend_gone(backend), "the killed pass's backend to end")
    left_behind = list(export_dir.glob("*.partial")) if export_dir else []
    still_hot = WorkflowRun.objects.filter(id__in=finished_runs).count()
    run_pass_to_the_end(*extra)

    assert still_hot == RUNS
    assert len(left_behind) == (1 if export_dir else 0)
    assert_archived_exactly_once(finished_runs, journal_rows, export_dir)
