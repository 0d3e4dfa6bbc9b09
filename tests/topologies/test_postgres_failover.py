"""A PostgreSQL failover under load: the primary stopped hard and its standby promoted while
runs are in flight, on the pair scripts/topology/pg-failover makes (127.0.0.1:5440, 5441).

The workers, beat and this process reach it through one multi-host DATABASE_URL with
``target_session_attrs=read-write``, so they find the promoted standby without a restart.
Every effect is a row of our own database written by an atomic step, so it exists once per
run whatever was lost; with asynchronous replication a commit acknowledged by the old
primary and not yet on the standby is lost, and its step runs again (counted, not hidden).
"""

import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import InterfaceError, OperationalError, connection

from durable import services
from durable.models import EntryStatus, JournalEntry, RunStatus, Signal, WorkflowRun
from tests.effects.models import Effect
from tests.faults.harness import FAULT_TIMINGS
from tests.support import ROOT
from tests.topologies.workflows import STEPS
from tests.workers import celery_processes as running_celery
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SCRIPT = ROOT / "scripts" / "topology" / "pg-failover"
PRIMARY, STANDBY = ("durable_primary", 5440), ("durable_standby", 5441)
NAME = "durable_failover"
URL = f"postgres://postgres@127.0.0.1:5440,127.0.0.1:5441/{NAME}?target_session_attrs=read-write"
RUNS = int(os.environ.get("FAILOVER_RUNS", "50"))
POSITIONS = 5  # reserve, charge, the signal, the timer, ship
LOST = (OperationalError, InterfaceError)


def pair_status() -> int:
    return subprocess.run([SCRIPT, "status"], capture_output=True, timeout=60).returncode


@pytest.fixture
def pair(request):
    """A fresh primary and standby, asynchronous or synchronous as the test asks."""
    required = os.environ.get("DURABLE_TEST_FAILOVER") == "1"
    if connection.vendor != "postgresql":
        pytest.skip("the failover pair is PostgreSQL: run the suite on PostgreSQL")
    if pair_status() == 3:
        message = (
            "PostgreSQL failover pair not set up: run scripts/topology/pg-failover start, "
            "or set DURABLE_TEST_FAILOVER=1"
        )
        if required:
            pytest.fail(message)
        pytest.skip(message)
    mode = ["--sync"] if request.param == "sync" else []
    done = subprocess.run([SCRIPT, "reset", *mode], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return request.param


@pytest.fixture
def failover_database(pair, django_db_blocker):
    """This process's connection pointed at the pair, on a fresh database migrated there;
    put back afterwards. Threads share the settings, so the signal sender goes there too."""
    with psycopg.connect("host=127.0.0.1 port=5440 user=postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {NAME}")
    saved = dict(connection.settings_dict)
    with django_db_blocker.unblock():
        connection.close()
        connection.settings_dict.update(
            HOST="127.0.0.1,127.0.0.1",
            PORT="5440,5441",
            NAME=NAME,
            OPTIONS={**saved["OPTIONS"], "target_session_attrs": "read-write"},
            CONN_MAX_AGE=0,
        )
        try:
            call_command("migrate", interactive=False, verbosity=0)
            yield
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)


@pytest.fixture
def celery(tmp_path, settings, failover_database):
    marks = tmp_path / "marks"
    marks.mkdir()
    settings.DURABLE_DISPATCHER = "none"  # beat's sweep dispatches what this process starts
    with running_celery(
        tmp_path,
        DATABASE_URL=URL,
        FAILOVER_MARKS=str(marks),
        **FAULT_TIMINGS,
    ) as processes:
        processes.marks = marks
        yield processes


def patiently(query, *, timeout: float = 60):
    """``query()`` on whichever server is the primary now: a lost connection is dropped and
    the query asked again (the window between the crash and the promotion refuses both)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return query()
        except LOST:
            connection.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Signals(threading.Thread):
    """Sends each run's "go" over ``spread`` seconds, as a provider would: a send that fails
    is sent again (same dedupe key) until the database acknowledges it."""

    def __init__(self, run_ids: list[str], spread: float):
        super().__init__(daemon=True)
        self.plan = [(spread * k / len(run_ids), run_id) for k, run_id in enumerate(run_ids)]
        self.acknowledged: dict[str, float] = {}
        self.error: BaseException | None = None

    def run(self):
        started = time.monotonic()
        try:
            for at, run_id in self.plan:
                time.sleep(max(0.0, at - (time.monotonic() - started)))
                patiently(lambda run_id=run_id: send_go(run_id))
                self.acknowledged[run_id] = time.monotonic()
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            connection.close()


def send_go(run_id: str) -> None:
    services.signal_send(
        run_id, "go", {"token": f"t-{run_id}"}, dedupe_key=f"{run_id}:go", actor="test"
    )


def completed_entries() -> int:
    return JournalEntry.objects.filter(status=EntryStatus.COMPLETED).count()


def pg_ctlcluster(cluster: str, *args: str) -> None:
    subprocess.run(
        ["pg_ctlcluster", "15", cluster, *args], check=True, capture_output=True, timeout=120
    )


@pytest.mark.parametrize("pair", ["async", "sync"], indirect=True)
def test_every_run_completes_once_on_the_promoted_standby(pair, celery):
    celery.start_worker("w0")
    celery.start_worker("w1")
    celery.start_beat("beat")
    pids = {name: proc.pid for name, proc in celery.procs.items()}
    run_ids = [
        services.run_start("failover_order", n, id=f"failover:{n}", actor="test").id
        for n in range(RUNS)
    ]
    signals = Signals(run_ids, spread=10)
    signals.start()
    wait_until(
        lambda: completed_entries() >= RUNS,
        timeout=120,
        message="a first wave of steps, so that the failover lands with runs in flight",
    )
    before = completed_entries()
    in_flight = WorkflowRun.objects.exclude(status=RunStatus.COMPLETED).count()

    crashed = time.monotonic()
    pg_ctlcluster(PRIMARY[0], "stop", "-m", "immediate")
    pg_ctlcluster(STANDBY[0], "promote")
    promoted = time.monotonic()
    connection.close()
    after_promotion = patiently(completed_entries)
    advancing = wait_until(
        lambda: patiently(completed_entries) > after_promotion and time.monotonic(),
        timeout=120,
        message="a step completed on the promoted standby",
    )
    signals.join(timeout=120)
    assert signals.error is None, f"sending a signal failed: {signals.error!r}"
    # An acknowledged signal lost with the old primary is gone for good unless the sender
    # redelivers it: count them, then redeliver (the dedupe key makes that safe).
    arrived = set(
        patiently(lambda: list(Signal.objects.filter(name="go").values_list("run_id", flat=True)))
    )
    lost_signals = [run_id for run_id in run_ids if run_id not in arrived]
    for run_id in lost_signals:
        patiently(lambda run_id=run_id: send_go(run_id))
    wait_until(
        lambda: patiently(
            lambda: WorkflowRun.objects.filter(status=RunStatus.COMPLETED).count() == RUNS
        ),
        timeout=300,
        interval=0.2,
        message=f"all {RUNS} runs to complete on the promoted standby",
    )
    finished = time.monotonic()

    runs = {run.id: run for run in WorkflowRun.objects.filter(pk__in=run_ids)}
    assert sorted(runs) == sorted(run_ids), "a run was lost"
    for run in runs.values():
        n = int(run.id.split(":")[1])
        assert run.status == RunStatus.COMPLETED
        assert run.result == {"n": n, "token": f"t-{run.id}"}
    journal = Counter(
        (run_id, position)
        for run_id, position in JournalEntry.objects.filter(
            run_id__in=run_ids, status=EntryStatus.COMPLETED
        ).values_list("run_id", "position")
    )
    for run_id in run_ids:
        entries = [journal[(run_id, position)] for position in range(POSITIONS)]
        assert entries == [1] * POSITIONS, f"{run_id}: completed entries per step {entries}"
    assert JournalEntry.objects.filter(run_id__in=run_ids).count() == RUNS * POSITIONS
    effects = Counter(Effect.objects.filter(run_id__in=run_ids).values_list("run_id", "name"))
    assert effects == Counter({(run_id, name): 1 for run_id in run_ids for name in STEPS}), (
        "an effect on our own database happened twice, or not at all"
    )
    assert Counter(Signal.objects.filter(name="go").values_list("run_id", flat=True)) == Counter(
        run_ids
    ), "a redelivered signal became two"
    for name, pid in pids.items():
        proc = celery.procs[name]
        assert proc.poll() is None and proc.pid == pid, f"{name} exited or was restarted"

    marks = Counter(path.name.rsplit(".", 2)[0] for path in Path(celery.marks).iterdir())
    rerun = sum(count - 1 for count in marks.values() if count > 1)
    print(
        f"\n[failover] {pair} replication: runs={RUNS} in_flight={in_flight} "
        f"steps_done_before={before} promoted_after={promoted - crashed:.1f}s "
        f"advancing_after={advancing - crashed:.1f}s all_complete_after={finished - crashed:.1f}s "
        f"acknowledged_commits_rerun={rerun} acknowledged_signals_lost={len(lost_signals)} "
        f"lost_runs=0 doubled_effects=0"
    )
    if pair == "sync":
        assert rerun == 0, f"{rerun} acknowledged commits were lost with synchronous replication"
        assert not lost_signals, "an acknowledged signal was lost with synchronous replication"
