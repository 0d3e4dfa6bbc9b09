"""What the replay core promises, each written so that an engine breaking it fails here.

Only the public API: workflows, services, ``drive`` and the fake clock, with the models
read for outcomes. docs/testing.md names the deliberate break each test was seen to catch.
"""

from datetime import timedelta

import pytest

from durable import days, seconds, services, workflow
from durable.models import EntryStatus, JournalEntry, RunStatus, Signal
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, Crash, effect, record
from tests.effects.models import Effect, Once

pytestmark = pytest.mark.django_db


def _journal(run_id: str) -> list[tuple]:
    return list(
        JournalEntry.objects.filter(run_id=run_id)
        .order_by("position")
        .values_list("position", "kind", "status", "result")
    )


# --- deterministic values ---


@pytest.mark.parametrize("kind", ["now", "uuid4", "random"])
def test_a_recorded_value_is_returned_again_on_replay_not_regenerated(clock, kind):
    run = services.run_start("value_across_a_wait", kind, id=f"values:{kind}", actor="test")
    drive(run.id)
    recorded = JournalEntry.objects.get(run_id=run.id, position=0).result
    clock.advance(timedelta(hours=1))  # a fresh now() would differ from the recorded one

    services.signal_send(run.id, "go", {}, actor="test")
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == recorded


# --- atomic steps ---


def test_an_atomic_step_that_dies_after_its_writes_leaves_neither_writes_nor_entry(clock):
    run = services.run_start("atomic_crash", id="atomic:crash", actor="test")

    with pytest.raises(Crash):
        drive(run.id)

    assert not Once.objects.exists()
    assert not Effect.objects.filter(run_id=run.id).exists()
    assert _journal(run.id) == []


def test_an_atomic_step_that_raises_keeps_none_of_its_writes_for_the_retry(clock):
    run = services.run_start("atomic_retry", id="atomic:retry", actor="test")
    assert drive(run.id).status == RunStatus.WAITING
    clock.advance(seconds(5))

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert list(Once.objects.values_list("pk", flat=True)) == [run.result]
    assert CALLS["write_then_fail"] == 2


def test_a_completed_atomic_step_has_its_writes_committed_with_its_entry(clock):
    run = services.run_start("atomic_write", id="atomic:write", actor="test")

    run = drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert entry.status == EntryStatus.COMPLETED
    assert Once.objects.filter(pk=entry.result, key=entry.idempotency_key).exists()
    assert Effect.objects.filter(run_id=run.id, name="create_once").count() == 1


# --- signals ---


def test_one_signal_resumes_one_wait_even_across_replays(clock):
    run = services.run_start("collect_two", id="signals:one", actor="test")
    services.signal_send(run.id, "item", {"n": 1}, actor="test")
    assert drive(run.id).status == RunStatus.WAITING
    assert drive(run.id).status == RunStatus.WAITING  # a replay reloads the signals

    services.signal_send(run.id, "item", {"n": 2}, actor="test")
    run = drive(run.id)

    assert run.result == [1, 2]


def test_a_signal_redelivered_after_it_was_consumed_resumes_nothing(clock):
    run = services.run_start("collect_two", id="signals:redelivered", actor="test")
    services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.1", actor="test")
    drive(run.id)

    services.signal_send(
        run.id, "item", {"n": 1}, dedupe_key="wamid.1", actor="test"
    )  # the provider retries
    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert list(Signal.objects.filter(run=run).values_list("consumed_position", flat=True)) == [0]


# --- deadlines ---


def test_a_replay_before_the_deadline_does_not_push_the_deadline_back(clock):
    run = services.run_start("wait_with_deadline", id="deadline:replayed", actor="test")
    drive(run.id)
    clock.advance(days(6))
    drive(run.id)  # replays the wait one day before its deadline

    clock.advance(days(1))
    run = drive(run.id)

    assert run.result == "expired"


def wait_with_a_one_day_deadline() -> str:
    docs = workflow.wait_for_signal("documents_received", timeout=days(1))
    if docs is None:
        workflow.step(record, "close_case")
        return "expired"
    return "received"


def test_a_changed_timeout_argument_does_not_move_a_recorded_deadline(clock):
    run = services.run_start("wait_with_deadline", id="deadline:redeployed", actor="test")
    drive(run.id)
    recorded = clock.now() + days(7)
    clock.advance(days(2))

    with override_workflow(wait_with_a_one_day_deadline, name="wait_with_deadline"):
        run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert run.wake_at == recorded
    assert CALLS["close_case"] == 0


# --- fencing ---


def cancel_own_run() -> str:
    effect("cancel_own_run")
    services.run_cancel(
        workflow.id, reason="an operator cancelled while the step ran", actor="test"
    )
    return "finished after the cancel"


def test_a_step_that_finishes_after_its_run_was_cancelled_is_not_journaled(clock):
    with override_workflow(lambda: workflow.step(cancel_own_run), name="cancelled_mid_step"):
        run = services.run_start("cancelled_mid_step", id="fence:cancelled", actor="test")

        run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert CALLS["cancel_own_run"] == 1
    assert _journal(run.id) == []


def test_a_worker_that_lost_its_lease_cannot_overwrite_the_new_holders_outcome(clock, settings):
    paused = []

    def pauses_before_finishing() -> str:
        workflow.step(record, "work")
        if not paused:  # the old worker stalls here; its lease expires and another takes over
            paused.append(True)
            clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
            drive(workflow.id, owner="new-holder")
            return "from the stale holder"
        return "from the new holder"

    with override_workflow(pauses_before_finishing, name="taken_over_before_finishing"):
        run = services.run_start("taken_over_before_finishing", id="fence:takeover", actor="test")

        run = drive(run.id, owner="old-holder")

    assert (run.status, run.result) == (RunStatus.COMPLETED, "from the new holder")
    assert CALLS["work"] == 1


# --- retries ---


def test_a_signal_during_the_back_off_does_not_run_the_failed_step_early(clock):
    run = services.run_start("gives_up", id="retry:nudged", actor="test")
    retry_at = drive(run.id).wake_at
    clock.advance(seconds(5))

    services.signal_send(run.id, "nudge", {}, actor="test")
    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert run.wake_at == retry_at
    assert CALLS["always_fails"] == 1


def test_a_failed_step_runs_again_exactly_when_its_back_off_ends(clock):
    run = services.run_start("gives_up", id="retry:boundary", actor="test")
    drive(run.id)  # back-off of 10 seconds before attempt 2
    clock.advance(seconds(10) - timedelta(microseconds=1))
    drive(run.id)
    assert CALLS["always_fails"] == 1

    clock.advance(timedelta(microseconds=1))
    drive(run.id)

    assert CALLS["always_fails"] == 2
    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert (entry.status, entry.attempt, entry.wake_at) == (
        EntryStatus.RETRYING,
        2,
        clock.now() + seconds(20),
    )
