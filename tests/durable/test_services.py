"""Services: idempotent start, cancel, retry rules, audit rows, dispatch on commit."""

from datetime import timedelta

import pytest
from django.db import transaction

from durable import RunConflict, RunFinished, services, testing
from durable.errors import Fenced, InvalidTransition, RunNotFound
from durable.models import AuditEvent, JournalEntry, RunStatus, WorkflowRun
from durable.runtime.store import live
from durable.testing import drive
from tests.durable.workflows import three_steps

pytestmark = pytest.mark.django_db


def test_starting_an_existing_id_returns_the_existing_run(clock):
    first = services.run_start(three_steps, 1, id="same:1", actor="test")

    second = services.run_start(three_steps, 1, id="same:1", actor="test")

    assert second.pk == first.pk
    assert WorkflowRun.objects.count() == 1
    assert AuditEvent.objects.filter(action="start").count() == 1


def test_a_start_is_audited_with_the_workflow_and_version_it_runs(clock):
    run = services.run_start(three_steps, 1, id="start:audited", actor="ops")

    assert AuditEvent.objects.get(run_id=run.id, action="start").detail == {
        "workflow": "three_steps",
        "version": 1,
    }


def test_starting_an_existing_id_with_other_input_is_a_conflict(clock):
    services.run_start(three_steps, 1, id="same:2", actor="test")

    with pytest.raises(RunConflict, match="already exists"):
        services.run_start(three_steps, 2, id="same:2", actor="test")


def test_start_accepts_the_workflow_name_and_records_the_version(clock):
    run = services.run_start("three_steps", 5, id="byname:1", actor="test")

    assert (run.workflow_name, run.workflow_version, run.input) == (
        "three_steps",
        1,
        {"args": [5], "kwargs": {}},
    )


def test_a_run_is_dispatched_only_when_the_callers_transaction_commits(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.run_start(three_steps, 1, id="commit:1", actor="test")
        assert testing.dispatched == []

    assert testing.dispatched == ["commit:1"]


def test_a_rolled_back_start_leaves_nothing_behind():
    with pytest.raises(RuntimeError), transaction.atomic():
        services.run_start(three_steps, 1, id="rollback:1", actor="test")
        raise RuntimeError("the caller's request failed")

    assert not WorkflowRun.objects.filter(pk="rollback:1").exists()


def test_cancel_ends_a_waiting_run_and_refuses_later_signals(clock):
    run = services.run_start("collect_two", id="cancel:1", actor="test")
    drive(run.id)

    run = services.run_cancel(run.id, reason="customer withdrew", actor="ops")

    assert run.status == RunStatus.CANCELLED
    assert run.error == {"type": "Cancelled", "message": "customer withdrew"}
    with pytest.raises(RunFinished):
        services.signal_send(run.id, "item", {"n": 1}, actor="test")


def test_a_signal_to_a_completed_run_is_refused_naming_its_status(clock):
    run = drive(services.run_start(three_steps, 1, id="signal:done", actor="test").id)

    with pytest.raises(RunFinished) as refused:
        services.signal_send(run.id, "item", {"n": 1}, actor="test")

    assert str(refused.value) == "run 'signal:done' is completed and takes no more signals"


def test_cancelling_a_run_that_does_not_exist_names_the_id(clock):
    with pytest.raises(RunNotFound) as refused:
        services.run_cancel("cancel:missing", reason="typo", actor="ops")

    assert str(refused.value) == "no run with id 'cancel:missing'"


def test_cancel_fences_the_worker_that_is_running_the_run(clock):
    run = services.run_start(three_steps, 1, id="cancel:2", actor="test")
    _, lease = live.claim(run.id, owner="worker-a")
    entry = JournalEntry(run_id=run.id, position=0, kind="step", name="add_one", status="completed")

    services.run_cancel(run.id, reason="stop", actor="test")

    with pytest.raises(Fenced):
        lease.record(entry)
    assert not JournalEntry.objects.filter(run_id=run.id).exists()
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.CANCELLED


def test_only_failed_or_blocked_runs_can_be_retried(clock):
    run = services.run_start("collect_two", id="retry:waiting", actor="test")
    drive(run.id)

    with pytest.raises(InvalidTransition, match="waiting"):
        services.run_retry(run.id, actor="test")


def test_the_retried_run_returned_is_pending_again_and_due_within_the_dispatch_grace(
    clock, settings
):
    failed = drive(services.run_start("fails_in_body", id="retry:returned", actor="test").id)
    clock.advance(timedelta(minutes=5))

    run = services.run_retry(failed.id, actor="ops")

    assert (run.status, run.error, run.finished_at) == (RunStatus.PENDING, None, None)
    assert run.updated_at == clock.now()
    assert run.wake_at == clock.now() + timedelta(seconds=settings.DURABLE_DISPATCH_GRACE_SECONDS)


def test_waking_a_finished_run_is_refused_naming_the_statuses_that_can_be_woken(clock):
    run = drive(services.run_start(three_steps, 1, id="wake:finished", actor="test").id)

    with pytest.raises(
        InvalidTransition, match="is completed; only pending or waiting runs can be woken"
    ):
        services.run_wake(run.id, actor="test")


def test_the_status_cannot_be_set_directly():
    run = services.run_start(three_steps, 1, id="protected:1", actor="test")

    with pytest.raises(AttributeError, match="Direct status modification is not allowed"):
        run.status = RunStatus.COMPLETED


def test_run_lock_names_a_run_that_does_not_exist():
    with transaction.atomic(), pytest.raises(RunNotFound, match="no run with id 'lock:missing'"):
        services.run_lock("lock:missing")


@pytest.mark.django_db(transaction=True)
def test_run_lock_outside_a_transaction_is_refused_as_it_would_hold_nothing():
    run = services.run_start("three_steps", 1, id="lock:outside", actor="test")

    with pytest.raises(RuntimeError) as refused:
        services.run_lock(run.id)

    assert str(refused.value) == (
        "run_lock holds the row until the transaction ends: call it inside one"
    )


def test_waking_a_sleeping_run_sends_it_to_a_worker_once_the_wake_commits(
    clock, django_capture_on_commit_callbacks
):
    run = drive(services.run_start("nap", id="wake:sent", actor="test").id)
    testing.dispatched.clear()

    with django_capture_on_commit_callbacks(execute=True):
        services.run_wake(run.id, actor="ops")

    assert testing.dispatched == [run.id]


def test_waking_a_sleeping_run_marks_the_run_changed_now(clock, settings):
    run = drive(services.run_start("nap", id="wake:updated", actor="test").id)
    clock.advance(timedelta(minutes=5))

    services.run_wake(run.id, actor="ops")

    woken = WorkflowRun.objects.get(pk=run.id)
    assert woken.updated_at == clock.now()
    assert woken.wake_at == clock.now() + timedelta(seconds=settings.DURABLE_DISPATCH_GRACE_SECONDS)


def test_a_graceful_cancel_is_audited_as_graceful_under_the_name_of_who_asked(clock):
    run = drive(
        services.run_start("polite_cancel", "c-audit", id="cancel:audited", actor="test").id
    )

    services.run_cancel(
        run.id, reason="customer withdrew", actor="ops", graceful=True, audit={"ticket": "T-1"}
    )

    event = AuditEvent.objects.get(run_id=run.id, action="cancel")
    assert event.actor == "ops"
    assert event.detail == {
        "reason": "customer withdrew",
        "graceful": True,
        "cleanup_until": WorkflowRun.objects.get(pk=run.id).cancel_request["deadline"],
        "ticket": "T-1",
    }
