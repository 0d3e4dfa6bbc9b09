"""Leases and fencing: one advance per run; a worker that lost its lease writes nothing."""

import logging
import re
import socket
import threading
import time
from contextlib import ExitStack, contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from durable import Retry, seconds, services, workflow
from durable.errors import Divergence, Fenced
from durable.models import JournalEntry, RunStatus, WorkflowRun
from durable.runtime import heartbeat
from durable.runtime.store import live
from durable.runtime.store.live import Settlement
from durable.testing import drive, override_workflow
from tests.durable.crashed import as_if_its_worker_died
from tests.durable.workflows import CALLS, add_one, create_once, effect, three_steps
from tests.effects.models import Once

pytestmark = pytest.mark.django_db


def test_a_second_claim_is_refused_while_the_lease_is_live(clock):
    run = services.run_start(three_steps, 1, id="lease:1", actor="test")
    assert live.claim(run.id, owner="a") is not None

    assert live.claim(run.id, owner="b") is None


def test_an_expired_lease_is_taken_over_and_the_old_holder_is_fenced(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:2", actor="test")
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    _, fresh = live.claim(run.id, owner="b")
    entry = JournalEntry(run_id=run.id, position=0, kind="step", name="add_one", status="completed")

    with pytest.raises(Fenced):
        stale.record(entry)

    assert fresh.token == stale.token + 1
    assert not JournalEntry.objects.filter(run_id=run.id).exists()


def test_the_new_holder_finishes_the_run_with_no_duplicate_entry(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:3", actor="test")
    live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))

    run = drive(run.id, owner="b")

    assert run.status == RunStatus.COMPLETED
    assert list(JournalEntry.objects.filter(run=run).values_list("position", flat=True)) == [
        0,
        1,
        2,
    ]


def _statements_to_drive(run_id: str, queue: str | None) -> int:
    with CaptureQueriesContext(connection) as queries:
        drive(run_id, queue=queue)
    # Savepoints exist only because the test wraps everything in a transaction.
    return sum(1 for q in queries if "SAVEPOINT" not in q["sql"])


# In process (no queue) and as a worker of the default queue does it (each step checks
# that it runs on its queue: that must cost no statement).
@pytest.mark.parametrize("queue", [None, "celery"], ids=["in-process", "on-a-worker"])
def test_each_step_costs_at_most_two_sql_statements(clock, queue):
    none = services.run_start("n_steps", 0, id="queries:0", actor="test")
    ten = services.run_start("n_steps", 10, id="queries:10", actor="test")

    per_step = (_statements_to_drive(ten.id, queue) - _statements_to_drive(none.id, queue)) / 10

    # The fenced lease update and the journal insert: one statement on PostgreSQL (a
    # data-modifying CTE), two elsewhere.
    assert per_step == (1 if connection.vendor == "postgresql" else 2)


def test_a_lease_owner_longer_than_its_column_is_kept_to_its_first_255_characters(clock):
    run = services.run_start("n_steps", 1, id="lease:long-owner", actor="test")

    claimed, _ = live.claim(run.id, owner="w" * 300)

    assert claimed.lease_owner == "w" * 255
    assert WorkflowRun.objects.get(pk=run.id).lease_owner == "w" * 255


def test_a_new_runs_first_advance_does_not_read_its_journal(clock):
    run = services.run_start("n_steps", 2, id="queries:first", actor="test")

    with CaptureQueriesContext(connection) as queries:
        drive(run.id)

    reads = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().startswith("SELECT") and "durable_journalentry" in q["sql"]
    ]
    assert reads == []
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.COMPLETED


def test_a_heartbeat_after_the_run_was_parked_gives_it_no_lease(clock):
    run = services.run_start("collect_two", id="lease:parked", actor="test")
    _, lease = live.claim(run.id, owner="a")
    lease.settle(WorkflowRun.objects.get(pk=run.id), Settlement.park(None, "signal:item"))

    assert lease.extend() is False
    assert WorkflowRun.objects.filter(
        pk=run.id, lease_expires_at__isnull=True, wake_at__isnull=True
    ).exists()


def test_a_fenced_finish_leaves_the_run_object_as_it_was(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:fenced-finish", actor="test")
    stale_run, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")

    with pytest.raises(Fenced):
        stale.settle(stale_run, Settlement.complete(1))

    assert (
        stale_run.status == RunStatus.RUNNING
    )  # changed in memory only after a write that succeeded
    assert WorkflowRun.objects.get(pk=run.id).result is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"
)
def test_a_connection_the_database_dropped_while_idle_is_reopened_for_the_claim():
    run = services.run_start(three_steps, 1, id="lease:idle-killed", actor="test")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    killer = connection.copy()
    with killer.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    killer.close()

    claimed = live.claim(run.id, owner="a")

    assert claimed is not None and claimed[0].status == RunStatus.RUNNING


def test_a_parked_run_names_no_lease_owner(clock):
    run = services.run_start("collect_two", id="lease:parked-owner", actor="test")

    run = drive(run.id, owner="worker-1")

    assert (run.status, run.lease_owner, run.lease_expires_at) == (RunStatus.WAITING, "", None)


def test_a_run_that_parks_with_no_new_signal_replays_its_body_once(clock):
    replays = []

    def counts_its_replays():
        replays.append(1)
        workflow.wait_for_signal("go")

    with override_workflow(counts_its_replays, name="counts_replays"):
        run = services.run_start("counts_replays", id="lease:one-replay", actor="test")

        drive(run.id)

    assert len(replays) == 1


def test_a_workflows_own_lease_length_keeps_another_worker_out_while_a_step_runs(clock):
    run = services.run_start("long_lease", id="lease:long", actor="test")

    run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, RunStatus.RUNNING)


def test_a_stale_holders_heartbeat_does_not_extend_the_new_holders_lease(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:stale-heartbeat", actor="test")
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")
    expires = WorkflowRun.objects.get(pk=run.id).lease_expires_at
    clock.advance(timedelta(seconds=5))

    assert stale.extend() is False
    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at == expires


def _beat_until(predicate, *held, seconds: float = 3) -> None:
    """Hold ``held`` on a heartbeat of their own, in real time (its thread never sees a
    test's fake clock), until ``predicate()`` or ``seconds``; its thread ends with the test."""
    beat, threads_before = heartbeat.Heartbeat(), set(threading.enumerate())
    beat.IDLE_EXIT_SECONDS = 0
    with ExitStack() as stack:
        for lease in held:
            stack.enter_context(beat.hold(lease))
        give_up = time.monotonic() + seconds
        while time.monotonic() < give_up and not predicate():
            time.sleep(0.05)
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=5)


def _expiry(run_id):
    return WorkflowRun.objects.get(pk=run_id).lease_expires_at


def _extended(run_id, times: int = 1):
    """A predicate: true once the run's lease expiry has moved ``times`` times since now."""
    seen = {_expiry(run_id)}

    def extended() -> bool:
        seen.add(_expiry(run_id))
        return len(seen) > times

    return extended


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_extends_the_lease_of_a_step_that_outlasts_a_third_of_it():
    run = services.run_start(three_steps, 1, id="lease:heartbeat", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=3)
    claimed_until = _expiry(run.id)

    _beat_until(_extended(run.id), lease)  # a step that runs for a while

    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at >= claimed_until + timedelta(
        seconds=0.9
    )


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_extending_a_lease_after_its_first_extension():
    run = services.run_start(three_steps, 1, id="lease:heartbeat-again", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    extended_twice = _extended(run.id, times=2)

    _beat_until(extended_twice, lease)

    assert extended_twice()


@pytest.mark.django_db(transaction=True)
def test_a_lease_too_fresh_to_extend_does_not_hold_back_the_heartbeat_of_the_next():
    _, fresh = live.claim(
        services.run_start(three_steps, 1, id="lease:fresh", actor="test").id,
        owner="a",
        lease_seconds=60,
    )
    _, due = live.claim(
        services.run_start(three_steps, 2, id="lease:due", actor="test").id,
        owner="a",
        lease_seconds=0.6,
    )

    extended = _extended(due.run_id)

    _beat_until(extended, fresh, due)

    assert extended()


@pytest.mark.django_db(transaction=True)
def test_a_step_past_its_timeout_does_not_hold_back_the_heartbeat_of_the_next():
    _, late = live.claim(
        services.run_start(three_steps, 1, id="lease:late", actor="test").id,
        owner="a",
        lease_seconds=0.6,
    )
    late.step_deadline = time.monotonic()
    _, due = live.claim(
        services.run_start(three_steps, 2, id="lease:due-after-late", actor="test").id,
        owner="a",
        lease_seconds=0.6,
    )

    extended = _extended(due.run_id)

    _beat_until(extended, late, due)

    assert extended()


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_logs_no_lost_lease_for_a_lease_it_extends(caplog):
    run = services.run_start(three_steps, 1, id="lease:alive-no-log", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    extended_twice = _extended(run.id, times=2)

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(extended_twice, lease)

    assert extended_twice()
    assert "lease lost" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_logs_a_step_past_its_timeout_once_however_many_ticks_it_stays(caplog):
    _, late = live.claim(
        services.run_start(three_steps, 1, id="lease:late-once", actor="test").id,
        owner="a",
        lease_seconds=0.6,
    )
    late.step_deadline = time.monotonic()
    run = services.run_start(three_steps, 2, id="lease:ticks", actor="test")
    _, ticking = live.claim(run.id, owner="a", lease_seconds=0.6)
    ticked_twice = _extended(run.id, times=2)  # two extensions of the other: two ticks or more

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(ticked_twice, late, ticking)

    assert ticked_twice()
    assert caplog.text.count("past its timeout") == 1


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_ends_without_an_error_once_its_leases_are_released(monkeypatch):
    run = services.run_start(three_steps, 1, id="lease:idle-exit-clean", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    errors, threads_before = [], set(threading.enumerate())
    monkeypatch.setattr(threading, "excepthook", errors.append)

    _beat_until(_extended(run.id), lease)

    assert errors == []
    assert not [t for t in set(threading.enumerate()) - threads_before if t.is_alive()]


def test_a_heartbeat_thread_that_finds_no_lease_to_keep_waits_its_idle_time_and_ends_cleanly(
    monkeypatch,
):
    beat = heartbeat.Heartbeat()
    beat.IDLE_EXIT_SECONDS = 0.3  # the step it started for was over before its first look
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    thread = threading.Thread(target=beat._loop)

    thread.start()
    thread.join(timeout=5)

    assert errors == []
    assert not thread.is_alive()


def test_a_heartbeat_extends_only_its_own_runs_lease(clock):
    mine = services.run_start(three_steps, 1, id="lease:mine", actor="test")
    other = services.run_start(three_steps, 2, id="lease:other", actor="test")
    _, lease = live.claim(mine.id, owner="a")
    live.claim(other.id, owner="b")  # same fencing token number: both runs' first claim
    expires = WorkflowRun.objects.get(pk=other.id).lease_expires_at
    clock.advance(timedelta(seconds=5))

    assert lease.extend() is True
    assert WorkflowRun.objects.get(pk=other.id).lease_expires_at == expires


@contextmanager
def in_another_open_transaction(act, *, commits_after: float = 30):
    """Another connection does ``act()`` and keeps its transaction (and the row locks it
    took) open until the block ends, or ``commits_after`` seconds have passed."""
    done, release = threading.Event(), threading.Event()

    def other():
        try:
            with transaction.atomic():
                act()
                done.set()
                release.wait(timeout=commits_after)
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    assert done.wait(timeout=30)
    try:
        yield
    finally:
        release.set()
        thread.join(timeout=30)


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite has no row locks to pass over"
)
@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_passes_over_a_run_row_another_transaction_holds_instead_of_waiting():
    run = services.run_start(three_steps, 1, id="lease:locked-row", actor="test")
    _, lease = live.claim(run.id, owner="a")
    claimed_until = WorkflowRun.objects.get(pk=run.id).lease_expires_at

    with in_another_open_transaction(lambda: services.signal_send(run.id, "poke", actor="test")):
        busy = lease.extend(wait=False)

    assert busy is None
    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at == claimed_until


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one-statement journal writes are PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_journal_write_racing_an_uncommitted_cancel_waits_for_it_and_is_fenced():
    run = services.run_start(three_steps, 1, id="lease:racing-cancel", actor="test")
    _, lease = live.claim(run.id, owner="a")
    entry = JournalEntry(run_id=run.id, position=0, kind="step", name="add_one", status="completed")

    cancel = lambda: services.run_cancel(run.id, reason="operator", actor="ops")  # noqa: E731
    with in_another_open_transaction(cancel, commits_after=1), pytest.raises(Fenced):
        lease.record(entry)

    assert not JournalEntry.objects.filter(run_id=run.id).exists()
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.CANCELLED


def test_a_heartbeat_that_does_not_wait_still_reports_a_lost_lease(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:lost-no-wait", actor="test")
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")

    assert stale.extend(wait=False) is False


def test_an_extended_lease_is_also_when_the_sweep_looks_at_the_run_again(clock):
    run = services.run_start(three_steps, 1, id="lease:extend-wake", actor="test")
    _, lease = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=1))

    assert lease.extend() is True

    row = WorkflowRun.objects.get(pk=run.id)
    assert row.wake_at == row.lease_expires_at == clock.now() + timedelta(seconds=lease.seconds)


def test_a_run_taken_over_again_and_again_at_the_same_position_is_blocked_as_a_crash_loop(
    clock, settings
):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start(three_steps, 1, id="lease:crash-loop", actor="test")
    as_if_its_worker_died(run, takeovers=2, at=0)  # two takeovers already happened there

    run = drive(run.id)  # the third

    assert run.status == RunStatus.BLOCKED
    assert run.error["type"] == "CrashLoop"
    assert run.error["message"].startswith("crash loop at step 'add_one' (position 0)")
    assert not JournalEntry.objects.filter(run_id=run.id).exists()


def test_a_crash_loop_at_a_recorded_value_names_the_value_in_its_reason(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start("deterministic_values", id="lease:crash-loop-now", actor="test")
    as_if_its_worker_died(run, takeovers=2, at=0)

    run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at now 'now' (position 0)")


def test_a_takeover_after_progress_counts_its_recoveries_from_one_again(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start(three_steps, 1, id="lease:crash-progress", actor="test")
    as_if_its_worker_died(run, takeovers=5, at=7)  # earlier takeovers were at another position

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_whose_thread_ended_idle_starts_a_new_one_for_the_next_step():
    beat = heartbeat.Heartbeat()
    beat.IDLE_EXIT_SECONDS = 0
    first = services.run_start(three_steps, 1, id="lease:beat-1", actor="test")
    second = services.run_start(three_steps, 2, id="lease:beat-2", actor="test")
    _, lease = live.claim(first.id, owner="a")
    with beat.hold(lease):
        thread = beat._thread
    thread.join(timeout=5)  # nothing held: it exits at once

    _, lease = live.claim(second.id, owner="a")
    with beat.hold(lease):
        restarted = beat._thread
        alive = restarted is not None and restarted.is_alive()
    restarted.join(timeout=5)

    assert not thread.is_alive() and alive and restarted is not thread


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="idle_in_transaction_session_timeout is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_writer_frozen_between_its_fence_and_its_commit_holds_the_run_no_longer_than_its_lease():
    from django.db import DatabaseError

    run = services.run_start(three_steps, 1, id="lease:idle-fence", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.5)

    with pytest.raises(DatabaseError, match="idle-in-transaction timeout"):
        with transaction.atomic():
            lease._fence()  # holds the run row FOR SHARE until commit
            time.sleep(1.0)  # frozen: nothing sent, so the server ends the transaction
            WorkflowRun.objects.filter(pk=run.id).exists()
    connection.close()

    assert live.claim(run.id, owner="b", lease_seconds=5) is not None  # nobody holds the row


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_logs_which_run_lost_its_lease_while_a_step_ran(caplog):
    run = services.run_start(three_steps, 1, id="lease:lost-log", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    services.run_cancel(run.id, reason="operator", actor="ops")  # bumps the token under the step

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(lambda: "lease lost" in caplog.text, lease)

    assert f"run {run.id}: lease lost while a step was running" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_logs_a_step_past_its_timeout_and_does_not_extend_its_lease(caplog):
    run = services.run_start(three_steps, 1, id="lease:timeout-log", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    claimed_until = WorkflowRun.objects.get(pk=run.id).lease_expires_at
    lease.step_deadline = time.monotonic()  # the step's timeout has passed

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(lambda: "past its timeout" in caplog.text, lease)

    assert f"run {run.id}: a step ran past its timeout; its lease is left to expire" in caplog.text
    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at == claimed_until


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_extending_the_lease_of_a_step_whose_timeout_is_ahead(caplog):
    run = services.run_start(three_steps, 1, id="lease:timeout-ahead", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    claimed_until = _expiry(run.id)
    lease.step_running(timezone.now() + timedelta(seconds=60))

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(_extended(run.id), lease)

    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at > claimed_until
    assert "past its timeout" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stops_extending_the_lease_of_a_step_whose_timeout_has_passed(caplog):
    run = services.run_start(three_steps, 1, id="lease:timeout-passed", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    claimed_until = WorkflowRun.objects.get(pk=run.id).lease_expires_at
    lease.step_running(timezone.now() - timedelta(seconds=1))

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(lambda: "past its timeout" in caplog.text, lease)

    assert f"run {run.id}: a step ran past its timeout; its lease is left to expire" in caplog.text
    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at == claimed_until


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_extends_the_lease_again_once_a_timed_step_has_ended():
    run = services.run_start(three_steps, 1, id="lease:timeout-ended", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    claimed_until = WorkflowRun.objects.get(pk=run.id).lease_expires_at
    lease.step_running(timezone.now() - timedelta(seconds=1))
    lease.step_running(None)  # the step returned

    _beat_until(_extended(run.id), lease)

    assert WorkflowRun.objects.get(pk=run.id).lease_expires_at > claimed_until


def test_a_crash_loop_at_a_patch_marker_names_the_change_in_its_reason(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3

    def prices_with_a_patch():
        return "new" if workflow.patched("new-pricing") else "old"

    with override_workflow(prices_with_a_patch, name="prices_with_a_patch"):
        run = services.run_start("prices_with_a_patch", id="lease:crash-loop-patch", actor="test")
        as_if_its_worker_died(run, takeovers=2, at=0)

        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at patch 'new-pricing' (position 0)")


def kills_its_worker(x: int) -> int:
    effect("kills_its_worker")
    raise SystemExit("the worker process dies inside the step")


def test_a_worker_dying_in_the_same_step_again_and_again_gets_the_run_blocked_at_the_limit(
    clock, settings
):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3

    def dies_at_its_second_step():
        return workflow.step(kills_its_worker, workflow.step(add_one, 1))

    with override_workflow(dies_at_its_second_step, name="dies_at_its_second_step"):
        run = services.run_start(
            "dies_at_its_second_step", id="lease:crash-loop-natural", actor="test"
        )
        for _ in range(3):  # the first holder, then two takeovers of its expired lease
            with pytest.raises(SystemExit):
                drive(run.id)
            clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))

        run = drive(run.id)  # the third takeover at position 1

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at step 'kills_its_worker' (position 1)")
    assert (CALLS["add_one"], CALLS["kills_its_worker"]) == (1, 3)


def test_a_write_that_would_take_a_signal_already_taken_is_refused_naming_the_signal(clock):
    run = services.run_start("collect_two", id="lease:signal-taken-twice", actor="test")
    signal = services.signal_send(run.id, "item", {"n": 1}, actor="test")
    _, lease = live.claim(run.id, owner="a")
    lease.record(
        JournalEntry(
            run_id=run.id,
            position=0,
            kind="signal",
            name="item",
            status="completed",
            created_at=clock.now(),
        ),
        consume=[signal],
    )
    again = JournalEntry(
        run_id=run.id,
        position=1,
        kind="signal",
        name="item",
        status="completed",
        created_at=clock.now(),
    )

    with pytest.raises(Divergence) as refused:
        lease.record(again, consume=[signal])

    assert (
        refused.value.message
        == f"signals [{signal.pk}] (item): one was consumed by another position"
    )
    assert not JournalEntry.objects.filter(run_id=run.id, position=1).exists()


def test_a_refused_batch_of_signals_names_each_of_their_names_once(clock):
    run = services.run_start("collect_two", id="lease:batch-taken", actor="test")
    item = services.signal_send(run.id, "item", {"n": 1}, actor="test")
    note = services.signal_send(run.id, "note", {"n": 2}, actor="test")
    _, lease = live.claim(run.id, owner="a")
    lease.record(
        JournalEntry(
            run_id=run.id,
            position=0,
            kind="signal",
            name="item",
            status="completed",
            created_at=clock.now(),
        ),
        consume=[item],
    )
    batch = JournalEntry(
        run_id=run.id,
        position=1,
        kind="signals",
        name="batch",
        status="completed",
        created_at=clock.now(),
    )

    with pytest.raises(Divergence) as refused:
        lease.record(batch, consume=[note, item])

    assert refused.value.message == (
        f"signals [{note.pk}, {item.pk}] (item, note): one was consumed by another position"
    )


def _backend_pid(conn) -> int:
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _other_backends() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return {pid for (pid,) in cursor.fetchall()}


TERMINATE = "SELECT pg_terminate_backend(%s, 5000)"


def _terminate(pid: int) -> None:
    """The database drops that connection (as a failover or an operator would), from a
    connection of its own; returns once the backend is gone."""
    killer = connection.copy()
    try:
        with killer.cursor() as cursor:
            cursor.execute(TERMINATE, [pid])  # durable: allow (a test cut)
    finally:
        killer.close()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_logs_which_run_it_failed_to_extend_and_the_databases_error(caplog):
    run = services.run_start(three_steps, 1, id="lease:beat-failed", actor="test")
    _, lease = live.claim(run.id, owner="a", lease_seconds=0.6)
    claimed_until = WorkflowRun.objects.get(pk=run.id).lease_expires_at
    before = _other_backends()
    killed = []

    def heartbeat_connection_dropped_once_it_has_extended():
        if not killed and WorkflowRun.objects.get(pk=run.id).lease_expires_at != claimed_until:
            killed.extend(_other_backends() - before)  # the heartbeat thread's connection
            for pid in killed:
                _terminate(pid)
        return "heartbeat failed" in caplog.text

    with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
        _beat_until(heartbeat_connection_dropped_once_it_has_extended, lease)

    assert killed
    assert re.search(rf"run {re.escape(run.id)}: heartbeat failed: .*connection", caplog.text)


def loses_its_connection(x: int) -> int:
    effect("loses_its_connection")
    _terminate(_backend_pid(connection))  # the step's effect happened; its journal write cannot
    return x + 1


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_journal_write_whose_connection_died_is_sent_again_and_the_log_names_run_position_and_error(  # noqa: E501
    caplog,
):
    def one_step():
        return workflow.step(loses_its_connection, 1)

    with override_workflow(one_step, name="loses_its_connection"):
        run = services.run_start("loses_its_connection", id="lease:write-retried", actor="test")
        with caplog.at_level(logging.WARNING, logger="durable.runtime.heartbeat"):
            run = drive(run.id)

    assert (run.status, run.result, CALLS["loses_its_connection"]) == (RunStatus.COMPLETED, 2, 1)
    assert JournalEntry.objects.filter(run_id=run.id).count() == 1
    assert re.search(
        rf"run {re.escape(run.id)}: journal write at position 0 failed \(.*connection.*\); "
        "retrying on a fresh connection",
        caplog.text,
    )


def cut_once_before_an_atomic_step(cut: list) -> int:
    workflow.step(add_one, 1)
    if not cut:  # after the claim and the first entry, before the atomic step's transaction
        cut.append(connection.connection.info.backend_pid)  # psycopg knows it: no query in the body
        _terminate(cut[0])
    return workflow.step(
        create_once,
        "account",
        idempotency_key=f"{workflow.id}:account",
        atomic=True,
        retry=Retry(max_attempts=1),
    )


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_connection_cut_before_an_atomic_steps_body_spends_none_of_its_attempts():
    cut = []
    with override_workflow(lambda: cut_once_before_an_atomic_step(cut), name="cut_before_atomic"):
        run = services.run_start("cut_before_atomic", id="lease:cut-before-atomic", actor="test")
        drive(run.id)
        run = drive(run.id)

    assert cut
    assert run.status == RunStatus.COMPLETED, run.error
    assert JournalEntry.objects.get(run_id=run.id, position=1).attempt == 1
    assert Once.objects.filter(key=f"{run.id}:account").count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's writers never overlap")
@pytest.mark.django_db(transaction=True)
def test_a_journal_write_that_meets_a_cancel_being_committed_waits_for_it_and_is_refused():
    run = services.run_start(three_steps, 1, id="lease:fence-race", actor="test")
    _, lease = live.claim(run.id, owner="a")
    entry = JournalEntry(run_id=run.id, position=0, kind="step", name="add_one", status="completed")
    cancelling, done = threading.Event(), threading.Event()

    def operator_cancels_and_commits_a_moment_later():
        try:
            with transaction.atomic():
                services.run_cancel(run.id, reason="operator", actor="ops")  # bumps the token
                cancelling.set()
                time.sleep(0.5)
        finally:
            connection.close()
            done.set()

    threading.Thread(target=operator_cancels_and_commits_a_moment_later).start()
    assert cancelling.wait(timeout=30)

    with pytest.raises(Fenced):
        lease.record(entry)

    assert done.wait(timeout=30)
    assert not JournalEntry.objects.filter(run_id=run.id).exists()


@contextmanager
def reply_lost_once_after(statement: bytes):
    """This process's connections go through a relay that, once, lets ``statement`` reach the
    server and commit, then drops the connection before the reply (a network cut at the
    worst moment). Every other byte passes as it is."""
    settings_dict = connection.settings_dict
    upstream = (settings_dict["HOST"] or "127.0.0.1", int(settings_dict["PORT"] or 5432))
    listener = socket.create_server(("127.0.0.1", 0))
    cut = threading.Event()

    def pump(source, target, on_chunk):
        try:
            while chunk := source.recv(65536):
                if on_chunk(chunk):
                    break
                target.sendall(chunk)
        except OSError:
            pass
        for end in (source, target):  # shutdown wakes the other direction's recv
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def relay():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(upstream)
            sent = threading.Event()

            def to_server(chunk, sent=sent):
                if not cut.is_set() and statement in chunk:
                    sent.set()
                return False

            def to_client(chunk, sent=sent):  # ReadyForQuery: the statement has committed
                if sent.is_set() and not cut.is_set() and b"Z\x00\x00\x00\x05" in chunk:
                    cut.set()
                    return True
                return False

            threading.Thread(target=pump, args=(client, server, to_server), daemon=True).start()
            threading.Thread(target=pump, args=(server, client, to_client), daemon=True).start()

    threading.Thread(target=relay, daemon=True).start()
    saved = settings_dict["HOST"], settings_dict["PORT"]
    connection.close()
    settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", listener.getsockname()[1]
    try:
        yield cut
    finally:
        connection.close()
        settings_dict["HOST"], settings_dict["PORT"] = saved
        listener.close()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one-statement fenced insert is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_journal_write_that_committed_before_its_connection_died_is_not_written_twice():
    def one_timed_step():
        return workflow.step(
            add_one, 1, timeout=seconds(30)
        )  # its start is journaled, then updated

    with override_workflow(one_timed_step, name="one_timed_step"):
        run = services.run_start("one_timed_step", id="lease:write-landed", actor="test")
        with reply_lost_once_after(b"WITH fence AS") as cut:
            run = drive(run.id)

    assert cut.is_set()
    assert (run.status, run.result, CALLS["add_one"]) == (RunStatus.COMPLETED, 2, 1)
    assert list(JournalEntry.objects.filter(run_id=run.id).values_list("position", "attempt")) == [
        (0, 1)
    ]


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one-statement fenced insert is PostgreSQL's"
)
@pytest.mark.django_db(transaction=True)
def test_a_stale_holder_whose_reply_was_lost_does_not_take_the_new_holders_entry_for_its_own(
    clock, settings
):
    run = services.run_start(three_steps, 1, id="lease:landed-stale", actor="test")
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    _, new = live.claim(run.id, owner="b")
    new.record(
        JournalEntry(
            run_id=run.id, position=0, kind="step", name="add_one", status="completed", result=2
        )
    )
    same_position = JournalEntry(
        run_id=run.id, position=0, kind="step", name="add_one", status="completed", result=2
    )

    with reply_lost_once_after(b"WITH fence AS") as cut, pytest.raises(Fenced):
        stale.record(same_position)

    assert cut.is_set()
    assert same_position._state.adding
    assert JournalEntry.objects.filter(run_id=run.id).count() == 1


def test_a_takeover_after_progress_counts_from_one_should_its_worker_die_there_too(clock):
    run = services.run_start(three_steps, 1, id="lease:note-recovery", actor="test")
    as_if_its_worker_died(run, takeovers=5, at=7)
    other = services.run_start(three_steps, 1, id="lease:note-recovery-other", actor="test")
    as_if_its_worker_died(other, takeovers=5, at=7)
    _, lease = live.claim(run.id, owner="b")
    live.claim(other.id, owner="c")  # the same fencing token as ``lease``

    lease.note_recovery(0)

    assert WorkflowRun.objects.filter(pk=run.id).values_list(
        "recoveries", "recovery_position"
    ).get() == (1, 0)
    assert WorkflowRun.objects.filter(pk=other.id).values_list(
        "recoveries", "recovery_position"
    ).get() == (6, 7)


def test_a_stale_holder_does_not_reset_the_takeover_count(clock, settings):
    run = services.run_start(three_steps, 1, id="lease:note-recovery-stale", actor="test")
    as_if_its_worker_died(run, takeovers=5, at=7)
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")

    stale.note_recovery(0)

    assert WorkflowRun.objects.filter(pk=run.id).values_list(
        "recoveries", "recovery_position"
    ).get() == (7, 7)


def test_an_atomic_write_at_a_position_already_recorded_is_fenced(clock):
    run = services.run_start(three_steps, 1, id="lease:atomic-twice", actor="test")
    _, lease = live.claim(run.id, owner="a")
    first = JournalEntry(
        run_id=run.id,
        position=0,
        kind="step",
        name="add_one",
        status="completed",
        created_at=clock.now(),
    )
    lease.record(first, effect=lambda: None)
    again = JournalEntry(
        run_id=run.id,
        position=0,
        kind="step",
        name="add_one",
        status="completed",
        created_at=clock.now(),
    )

    with pytest.raises(Fenced):
        lease.record(again, effect=lambda: None)

    assert JournalEntry.objects.filter(run_id=run.id).count() == 1
