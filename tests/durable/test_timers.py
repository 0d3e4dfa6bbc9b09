"""Timers: deadlines and sleeps are recorded once and fire on the (fake) clock."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from durable import days, minutes, seconds, services, testing, workflow
from durable.models import JournalEntry, RunStatus, WorkflowRun
from durable.runtime import executor
from durable.runtime.store import live
from durable.runtime.sweep import sweep_due
from durable.testing import drive, override_workflow
from tests.durable.crashed import as_if_its_worker_died
from tests.durable.workflows import CALLS, record

pytestmark = pytest.mark.django_db


def test_wait_for_signal_returns_none_after_its_deadline(clock):
    run = services.run_start("wait_with_deadline", id="deadline:1", actor="test")
    run = drive(run.id)
    assert run.status == RunStatus.WAITING
    assert run.wake_at == clock.now() + days(7)

    clock.advance(days(7))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == "expired"
    assert CALLS["close_case"] == 1


def test_a_wait_before_its_deadline_keeps_waiting(clock):
    run = services.run_start("wait_with_deadline", id="deadline:2", actor="test")
    drive(run.id)

    clock.advance(days(6))
    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert CALLS["close_case"] == 0


def test_the_deadline_is_recorded_at_the_first_encounter(clock):
    run = services.run_start("wait_with_deadline", id="deadline:3", actor="test")
    drive(run.id)
    deadline = JournalEntry.objects.get(run=run, position=0).wake_at

    clock.advance(days(3))
    drive(run.id)

    assert JournalEntry.objects.get(run=run, position=0).wake_at == deadline


def test_sleep_wakes_after_its_duration(clock):
    run = services.run_start("nap", id="nap:1", actor="test")
    run = drive(run.id)
    assert run.status == RunStatus.WAITING

    clock.advance(minutes(59))
    assert drive(run.id).status == RunStatus.WAITING
    clock.advance(minutes(1))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert CALLS["woke"] == 1


def test_the_sweep_sends_a_run_whose_lease_expired_to_the_takeover_lane_and_a_timer_to_its_queue(
    clock, django_capture_on_commit_callbacks
):
    napping = services.run_start("nap", id="nap:lane", actor="test")
    drive(napping.id)
    held = services.run_start("nap", id="nap:held", actor="test")
    live.claim(held.id, owner="a worker that then died")
    clock.advance(minutes(61))

    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(sweep_due()) == ["nap:held", "nap:lane"]

    assert testing.dispatch_queues == {"nap:held": "durable-takeover", "nap:lane": "celery"}


SENT_BY_AN_OLD_SENDER = []


def send_as_before_queues(run_id: str, *, delay: float) -> None:
    """A DURABLE_DISPATCHER written before queues and the takeover lane existed."""
    SENT_BY_AN_OLD_SENDER.append(run_id)


def test_a_sender_that_knows_no_lane_gets_a_takeover_as_the_plain_advance_it_always_got(
    clock, settings, django_capture_on_commit_callbacks
):
    settings.DURABLE_DISPATCHER = f"{__name__}.send_as_before_queues"
    held = services.run_start("nap", id="nap:old-sender", actor="test")
    live.claim(held.id, owner="a worker that then died")
    clock.advance(minutes(61))

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        sweep_due()

    assert SENT_BY_AN_OLD_SENDER == ["nap:old-sender"]
    assert len(callbacks) == 1


def test_the_sweep_dispatches_runs_whose_wake_time_has_passed(clock, settings):
    waiting = services.run_start("nap", id="nap:sweep", actor="test")
    drive(waiting.id)
    early = services.run_start("wait_with_deadline", id="deadline:sweep", actor="test")
    drive(early.id)

    clock.advance(minutes(61))
    picked = sweep_due()

    assert picked == ["nap:sweep"]
    assert sweep_due() == []  # not again while its message is in flight


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SKIP LOCKED is PostgreSQL's; SQLite has one writer"
)
def test_a_run_another_sweep_holds_is_skipped_and_the_others_are_picked(clock):
    for run_id in ("nap:held", "nap:free"):
        drive(services.run_start("nap", id=run_id, actor="test").id)
    clock.advance(minutes(61))
    holding, release = threading.Event(), threading.Event()

    def another_sweep():
        try:
            with transaction.atomic():
                list(
                    WorkflowRun.objects.select_for_update().filter(pk="nap:held").values_list("pk")
                )
                holding.set()
                release.wait(timeout=10)
        finally:
            holding.set()
            connection.close()

    thread = threading.Thread(target=another_sweep)
    thread.start()
    holding.wait(timeout=10)
    try:
        picked = sweep_due()
    finally:
        release.set()
        thread.join(timeout=10)

    assert picked == ["nap:free"]
    assert sweep_due() == ["nap:held"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite's pick is a SELECT, then an UPDATE"
)
def test_a_sweep_picks_and_moves_its_runs_in_one_statement_on_postgresql(clock):
    for run_id in ("nap:one", "nap:two"):
        drive(services.run_start("nap", id=run_id, actor="test").id)
    clock.advance(minutes(61))

    with CaptureQueriesContext(connection) as statements:
        picked = sweep_due()

    assert sorted(picked) == ["nap:one", "nap:two"]
    assert len([s for s in statements if "durable_workflowrun" in s["sql"]]) == 1


def test_a_timer_due_before_the_next_tick_is_sent_now_with_a_countdown(
    clock, django_capture_on_commit_callbacks
):
    run = services.run_start("nap", id="nap:lookahead", actor="test")
    drive(run.id)
    clock.advance(minutes(60) - timedelta(milliseconds=400))

    with django_capture_on_commit_callbacks(execute=True):
        picked = sweep_due(lookahead=1.0)

    assert picked == ["nap:lookahead"]
    assert testing.dispatch_delays["nap:lookahead"] == pytest.approx(0.4)


def test_a_zero_length_sleep_completes_without_waiting(clock):
    def naps_for_nothing():
        workflow.sleep(seconds(0))
        return workflow.step(record, "after the nap")

    with override_workflow(naps_for_nothing, name="zero_nap"):
        run = services.run_start("zero_nap", id="nap:zero", actor="test")

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "after the nap")


def test_a_sleep_replayed_before_its_end_keeps_waiting_for_the_same_time(clock):
    run = services.run_start("nap", id="nap:early", actor="test")
    wake_at = drive(run.id).wake_at
    clock.advance(minutes(30))

    run = drive(run.id)

    assert (run.status, run.waiting_for, run.wake_at) == (RunStatus.WAITING, "sleep", wake_at)


def test_a_sleeps_entry_records_when_it_began(clock):
    run = services.run_start("nap", id="nap:started", actor="test")
    began = clock.now()

    drive(run.id)

    assert JournalEntry.objects.get(run_id=run.id, position=0).started_at == began


def test_a_sub_second_sleep_still_waits(clock):
    def naps_briefly():
        workflow.sleep(seconds(0.5))
        return workflow.step(record, "after the nap")

    with override_workflow(naps_briefly, name="brief_nap"):
        run = services.run_start("brief_nap", id="nap:brief", actor="test")

        run = drive(run.id)

    assert (run.status, run.wake_at) == (RunStatus.WAITING, clock.now() + seconds(0.5))


def test_a_sleeping_run_says_it_waits_for_its_sleep(clock):
    run = services.run_start("nap", id="nap:waiting-for", actor="test")

    run = drive(run.id)

    assert run.waiting_for == "sleep"


def test_a_finished_sleep_is_journaled_as_completed(clock):
    run = services.run_start("nap", id="nap:completed", actor="test")
    drive(run.id)
    clock.advance(minutes(60))

    drive(run.id)

    assert JournalEntry.objects.get(run_id=run.id, position=0).status == "completed"


def test_a_wait_that_timed_out_is_journaled_as_completed_by_its_deadline(clock):
    run = services.run_start("wait_with_deadline", id="deadline:journaled", actor="test")
    drive(run.id)
    clock.advance(days(7))

    drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert (entry.status, entry.result) == ("completed", {"timed_out": True})


def test_a_sleep_of_zero_lets_the_run_go_on_in_the_same_advance(clock):
    def naps_for_nothing():
        workflow.sleep(seconds(0))
        return "awake"

    with override_workflow(naps_for_nothing, name="zero_nap"):
        run = services.run_start("zero_nap", id="sleep:zero", actor="test")

        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == "awake"


def test_a_crash_loop_at_a_new_sleep_names_the_sleep_in_its_reason(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start("nap", id="sleep:crash-loop", actor="test")
    as_if_its_worker_died(run, takeovers=2, at=0)

    run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at sleep 'sleep' (position 0)")


# --- copies of the sweep's message: a backlog makes the sweep send a run again ---


def test_the_sweep_s_message_carries_the_run_s_count_of_advances(
    clock, settings, django_capture_on_commit_callbacks
):
    run = services.run_start("wait_with_deadline", id="count:1", actor="test")
    clock.advance(
        timedelta(seconds=settings.DURABLE_DISPATCH_GRACE_SECONDS + 1)
    )  # its message was lost

    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_due() == [run.id]

    assert testing.dispatch_advances[run.id] == 0


def test_a_copy_that_arrives_after_the_run_moved_on_is_dropped_without_a_replay(clock):
    run = services.run_start("wait_with_deadline", id="copy:1", actor="test")
    drive(run.id)  # the first message came through: the run waits for days

    outcome = executor.advance(run.id, advances=0)  # the sweep's copy, sent while the first waited

    assert outcome == executor.Outcome.SKIPPED
    assert WorkflowRun.objects.get(pk=run.id).advances == 1


def test_a_copy_is_still_taken_when_the_run_is_due_anyway(clock):
    run = services.run_start("wait_with_deadline", id="copy:2", actor="test")
    drive(run.id)
    clock.advance(days(7))  # its deadline passed: the copy has work to do after all

    outcome = executor.advance(run.id, advances=0)

    assert outcome == executor.Outcome.COMPLETED


def test_a_message_that_is_not_a_copy_is_taken_whatever_the_run_s_count(clock):
    run = services.run_start("wait_with_deadline", id="copy:3", actor="test")
    drive(run.id)
    services.signal_send(run.id, "documents_received", {}, actor="test")  # wakes it, sends afresh

    assert executor.advance(run.id) == executor.Outcome.COMPLETED


def test_a_run_no_worker_claims_is_sent_again_later_each_time(clock, settings):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 10
    settings.DURABLE_SWEEP_LOOKAHEAD_SECONDS = 1
    run = services.run_start(
        "wait_with_deadline", id="resend:1", actor="test"
    )  # its message is stuck
    sent_at = []

    for second in range(200):  # a sweep every second; no worker takes the run
        if run.id in sweep_due():
            sent_at.append(second)
        clock.advance(timedelta(seconds=1))

    gaps = [later - earlier for earlier, later in zip(sent_at, sent_at[1:])]
    assert gaps == [10, 20, 40, 80]  # a grace period, then twice as long each time


def test_a_run_claimed_since_its_last_resend_is_sent_at_the_plain_grace_again(clock, settings):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 10
    settings.DURABLE_SWEEP_LOOKAHEAD_SECONDS = 1
    run = services.run_start("nap", id="resend:2", actor="test")
    clock.advance(timedelta(seconds=10))
    sweep_due()
    clock.advance(timedelta(seconds=11))
    sweep_due()  # sent twice, no worker came
    live.claim(run.id, owner="a worker that dies at once", lease_seconds=1)
    clock.advance(timedelta(seconds=1))

    assert sweep_due() == [run.id]  # the takeover: never held back
    assert WorkflowRun.objects.get(pk=run.id).wake_at == clock.now() + timedelta(seconds=11)
