"""Cancelling: immediate by default; graceful lets the body clean up, within a deadline."""

from datetime import timedelta

import pytest

from durable import days, hooks, hours, seconds, services, testing, workflow
from durable.features import history
from durable.models import EntryKind, EntryStatus, JournalEntry, RunStatus, WorkflowRun
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def cancelled_hooks():
    seen = []

    def receiver(sender, run_id, reason, actor, **kwargs):
        seen.append((run_id, reason, actor))

    hooks.run_cancelled.connect(receiver, weak=False, dispatch_uid="test-cancelled")
    yield seen
    hooks.run_cancelled.disconnect(dispatch_uid="test-cancelled")


def test_a_graceful_cancel_raises_cancelled_where_the_body_waits_and_its_cleanup_runs_once(
    clock, cancelled_hooks
):
    run = services.run_start("polite_cancel", "c-1", id="cancel:polite", actor="test")
    drive(run.id)

    services.run_cancel(run.id, reason="customer withdrew", actor="ops", graceful=True)
    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.result == "bye: customer withdrew (ops)"
    assert JournalEntry.objects.get(run_id=run.id, position=0).status == EntryStatus.CANCELLED
    assert CALLS["goodbye"] == 1 and CALLS["after_documents"] == 0
    assert cancelled_hooks == [(run.id, "customer withdrew", "ops")]


def test_a_gracefully_cancelled_run_replays_from_its_history(clock):
    run = services.run_start("polite_cancel", "c-2", id="cancel:replay", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="duplicate", graceful=True, actor="test")
    drive(run.id)

    report = history.history_replay(history.history_parse(history.history_export(run.id)))

    assert report.ok, report.summary


def test_a_signal_that_races_a_graceful_cancel_does_not_skip_the_cleanup(clock):
    run = services.run_start("polite_cancel", "c-3", id="cancel:race", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")
    services.signal_send(run.id, "documents", {"files": []}, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert CALLS["goodbye"] == 1 and CALLS["after_documents"] == 0


def test_cleanup_that_outlives_its_deadline_becomes_an_immediate_cancel(clock, cancelled_hooks):
    run = services.run_start("slow_cleanup", id="cancel:slow", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, cleanup=hours(1), actor="test")

    run = drive(run.id)
    assert run.status == RunStatus.WAITING  # cleaning up: sleeping a day, woken at the deadline
    assert run.wake_at <= clock.now() + hours(1)
    clock.advance(hours(1) + timedelta(seconds=1))
    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.error["note"] == "its cleanup ran out of time"
    assert CALLS["never_reached"] == 0
    assert len(cancelled_hooks) == 1


def test_a_body_can_end_its_own_run_as_cancelled(clock):
    run = services.run_start("withdraws", id="cancel:self", actor="test")
    services.signal_send(run.id, "reply", {"text": " Cancelar "}, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.error["message"] == "customer withdrew"


def test_cancel_is_immediate_unless_asked_to_be_graceful(clock):
    run = services.run_start("polite_cancel", "c-4", id="cancel:immediate", actor="test")
    drive(run.id)

    run = services.run_cancel(run.id, reason="fraud", actor="test")

    assert run.status == RunStatus.CANCELLED
    assert drive(run.id).status == RunStatus.CANCELLED
    assert CALLS["goodbye"] == 0


def test_a_graceful_cancel_of_a_run_whose_body_cannot_run_is_immediate(clock):
    run = services.run_start("withdraws", id="cancel:failed", actor="test")
    services.signal_send(
        run.id, "reply", {"nope": 1}, actor="test"
    )  # the body fails on the missing key
    assert drive(run.id).status == RunStatus.FAILED

    run = services.run_cancel(run.id, reason="clean up", graceful=True, actor="test")

    assert run.status == RunStatus.CANCELLED


def test_asking_twice_for_a_graceful_cancel_delivers_it_once(clock):
    run = services.run_start("polite_cancel", "c-5", id="cancel:twice", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="first", graceful=True, actor="test")
    services.run_cancel(run.id, reason="second", graceful=True, actor="test")

    run = drive(run.id)

    assert run.result == "bye: first (test)" and CALLS["goodbye"] == 1


def test_a_graceful_cancel_waits_for_the_body_even_after_a_crash_mid_cleanup(clock):
    run = services.run_start("slow_cleanup", id="cancel:resume", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")
    drive(run.id)  # delivered; the cleanup sleeps

    run = drive(run.id)  # a new advance (as after a crash) replays the delivered cancel

    assert run.status == RunStatus.WAITING
    assert JournalEntry.objects.filter(run_id=run.id, status=EntryStatus.CANCELLED).count() == 1


def test_a_cleanup_that_re_raises_cancelled_replays_from_its_history(clock):
    run = services.run_start("cleanup_then_reraise", id="cancel:reraise", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")
    assert drive(run.id).status == RunStatus.CANCELLED

    report = history.history_replay(history.history_parse(history.history_export(run.id)))

    assert report.ok, report.summary
    assert "ends cancelled as the run did" in report.summary


def test_a_body_that_cancelled_itself_replays_from_its_history(clock):
    run = services.run_start("withdraws", id="cancel:self-replay", actor="test")
    services.signal_send(run.id, "reply", {"text": "cancelar"}, actor="test")
    drive(run.id)

    report = history.history_replay(history.history_parse(history.history_export(run.id)))

    assert report.ok, report.summary


def test_a_cleanup_that_fails_still_ends_the_run_cancelled_and_says_why(clock):
    run = services.run_start("cleanup_fails", id="cancel:broken-cleanup", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.error["message"] == "stop"
    assert run.error["cleanup_error"]["type"] == "StepFailed"


def test_a_replayed_cancel_carries_the_same_reason_and_actor(clock):
    run = services.run_start("cleanup_after_a_nap", id="cancel:replayed", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="customer withdrew", actor="ops", graceful=True)
    assert drive(run.id).status == RunStatus.WAITING
    clock.advance(timedelta(seconds=2))

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.result == "customer withdrew / ops"


def test_cleanup_that_outlives_its_deadline_keeps_the_reason_and_who_cancelled(clock):
    run = services.run_start("slow_cleanup", id="cancel:slow-who", actor="test")
    drive(run.id)
    services.run_cancel(
        run.id, reason="customer withdrew", actor="ops", graceful=True, cleanup=hours(1)
    )
    drive(run.id)
    clock.advance(hours(1) + timedelta(seconds=1))

    run = drive(run.id)

    assert (run.error["message"], run.error["actor"]) == ("customer withdrew", "ops")


@pytest.mark.parametrize("waited", [seconds(0), seconds(11)], ids=["backing-off", "retry-due"])
def test_a_graceful_cancel_at_a_failed_step_ends_the_run_there_without_another_attempt(
    clock, waited
):
    """During the 10 s back-off, or once it is over and the second attempt is due."""
    run = services.run_start("gives_up", id="cancel:backoff", actor="test")
    drive(run.id)  # the first attempt failed
    clock.advance(waited)
    services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)

    run = drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert run.status == RunStatus.CANCELLED
    assert (entry.status, entry.attempt) == (EntryStatus.CANCELLED, 1)
    assert CALLS["always_fails"] == 1


def test_a_graceful_cancel_that_arrives_before_a_child_is_started_starts_no_child(clock):
    run = services.run_start("one_child", "e-1", id="cancel:before-child", actor="test")
    services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)

    run = drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert run.status == RunStatus.CANCELLED
    assert (entry.kind, entry.status) == (EntryKind.CHILD, EntryStatus.CANCELLED)
    assert not WorkflowRun.objects.filter(parent_id=run.id).exists()


def test_a_graceful_cancel_that_finds_a_waits_deadline_passed_cancels_there_instead_of_timing_out(
    clock,
):
    run = services.run_start("polite_cancel", "c-9", id="cancel:deadline-passed", actor="test")
    drive(run.id)
    clock.advance(days(7) + timedelta(seconds=1))
    services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)

    run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.CANCELLED, "bye: stop (ops)")
    assert JournalEntry.objects.get(run_id=run.id, position=0).status == EntryStatus.CANCELLED


def test_a_graceful_cancel_that_finds_a_sleep_over_cancels_at_the_sleep(clock):
    run = services.run_start("nap", id="cancel:nap-over", actor="test")
    drive(run.id)
    clock.advance(hours(2))
    services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert list(JournalEntry.objects.filter(run_id=run.id).values_list("kind", "status")) == [
        (EntryKind.SLEEP, EntryStatus.CANCELLED)
    ]
    assert CALLS["woke"] == 0


def patched_then_waits() -> str:
    if workflow.patched("ask-twice"):
        workflow.wait_for_signal("go", timeout=days(1))
    return "done"


def test_a_graceful_cancel_is_never_delivered_at_a_patch_marker_but_at_the_next_call(clock):
    with override_workflow(patched_then_waits, name="patched_then_waits"):
        run = services.run_start("patched_then_waits", id="cancel:patched", actor="test")
        services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)
        run = drive(run.id)

    entries = list(
        JournalEntry.objects.filter(run_id=run.id)
        .order_by("position")
        .values_list("kind", "status")
    )
    assert run.status == RunStatus.CANCELLED
    assert entries == [
        (EntryKind.PATCH, EntryStatus.COMPLETED),
        (EntryKind.SIGNAL, EntryStatus.CANCELLED),
    ]


def test_a_run_replaying_a_delivered_cancel_whose_request_is_gone_ends_cancelled_by_the_workflow(
    clock, cancelled_hooks
):
    run = services.run_start("polite_cancel", "c-12", id="cancel:request-gone", actor="test")
    drive(run.id)
    # The cancel was delivered at the wait and journaled; the request itself is no longer on the
    # run.
    JournalEntry.objects.filter(run_id=run.id, position=0).update(
        status=EntryStatus.CANCELLED,
        wake_at=None,
        error={"type": "Cancelled", "message": "customer withdrew", "actor": "ops"},
    )
    WorkflowRun.objects.filter(pk=run.id).update(wake_at=clock.now())

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert (run.error["message"], run.error["actor"]) == ("cancelled", "workflow")
    assert cancelled_hooks == [(run.id, "cancelled", "workflow")]


def test_a_gracefully_cancelled_run_says_it_was_cancelled_why_by_whom_and_gracefully(clock):
    run = services.run_start("polite_cancel", "c-9", id="cancel:error-shape", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="customer withdrew", actor="ops", graceful=True)

    run = drive(run.id)

    assert run.error == {
        "type": "Cancelled",
        "message": "customer withdrew",
        "actor": "ops",
        "graceful": True,
    }


def test_a_body_that_cancels_itself_is_cancelled_by_the_workflow_with_no_result(clock):
    run = services.run_start("withdraws", id="cancel:self-actor", actor="test")
    services.signal_send(run.id, "reply", {"text": "cancelar"}, actor="test")

    run = drive(run.id)

    assert (run.error["message"], run.error["actor"], run.result) == (
        "customer withdrew",
        "workflow",
        None,
    )


def test_a_gracefully_cancelled_run_keeps_no_pending_cancel_request(clock):
    run = services.run_start("polite_cancel", "c-10", id="cancel:request-cleared", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")

    run = drive(run.id)

    assert run.cancel_request is None


def test_the_log_says_a_run_ended_cancelled_gracefully(clock, caplog):
    run = services.run_start("polite_cancel", "c-11", id="cancel:logged", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")

    with caplog.at_level("INFO", logger="durable"):
        drive(run.id)

    assert "run cancel:logged cancelled (gracefully)" in caplog.messages


def test_the_cancelled_hook_is_sent_by_the_workflow_run_model(clock):
    seen = []

    def receiver(sender, run_id, **kwargs):
        seen.append(run_id)

    hooks.run_cancelled.connect(
        receiver, sender=WorkflowRun, weak=False, dispatch_uid="test-cancelled-sender"
    )
    run = services.run_start("polite_cancel", "c-12", id="cancel:sender", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", graceful=True, actor="test")

    try:
        drive(run.id)
    finally:
        hooks.run_cancelled.disconnect(sender=WorkflowRun, dispatch_uid="test-cancelled-sender")

    assert seen == [run.id]


def quits_without_a_reason() -> str:
    raise workflow.Cancelled("")


def test_a_body_that_cancels_itself_without_a_reason_says_cancelled(clock):
    with override_workflow(quits_without_a_reason, name="quits_without_a_reason"):
        run = services.run_start("quits_without_a_reason", id="cancel:no-reason", actor="test")
        run = drive(run.id)

    assert (run.status, run.error["message"]) == (RunStatus.CANCELLED, "cancelled")


def cleans_up_into_something_unstorable() -> object:
    try:
        workflow.wait_for_signal("documents", timeout=days(7))
    except workflow.Cancelled:
        return object()
    return "done"


def test_a_cleanup_whose_value_cannot_be_stored_ends_the_run_cancelled_with_no_result(clock):
    with override_workflow(
        cleans_up_into_something_unstorable, name="cleans_up_into_something_unstorable"
    ):
        run = services.run_start(
            "cleans_up_into_something_unstorable", id="cancel:unstorable", actor="test"
        )
        drive(run.id)
        services.run_cancel(run.id, reason="stop", graceful=True, actor="test")
        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.CANCELLED, None)


def test_a_graceful_cancel_of_a_sleeping_run_cancels_it_at_its_sleep(clock):
    run = services.run_start("nap", id="cancel:sleeping", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="no longer needed", actor="ops", graceful=True)

    run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    asleep = JournalEntry.objects.get(run_id=run.id, position=0)
    assert (asleep.kind, asleep.status) == (EntryKind.SLEEP, EntryStatus.CANCELLED)
    assert asleep.error["message"] == "no longer needed"


def uuid_then_waits() -> str:
    workflow.uuid4()
    workflow.wait_for_signal("go", timeout=days(1))
    return "done"


def test_a_graceful_cancel_is_never_delivered_at_a_deterministic_value_but_at_the_next_call(clock):
    with override_workflow(uuid_then_waits, name="uuid_then_waits"):
        run = services.run_start("uuid_then_waits", id="cancel:uuid", actor="test")
        services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)
        run = drive(run.id)

    entries = list(
        JournalEntry.objects.filter(run_id=run.id)
        .order_by("position")
        .values_list("kind", "status")
    )
    assert run.status == RunStatus.CANCELLED
    assert entries == [
        (EntryKind.UUID, EntryStatus.COMPLETED),
        (EntryKind.SIGNAL, EntryStatus.CANCELLED),
    ]


def test_a_child_cancelled_with_a_parent_cancelled_without_a_reason_says_its_parent_was_cancelled(
    clock,
):
    parent = services.run_start("one_child", "e-2", id="cancel:bare-parent", actor="test")
    drive(parent.id)

    services.run_cancel(parent.id, actor="ops")

    child = WorkflowRun.objects.get(pk="cancel:bare-parent:child:0")
    assert child.status == RunStatus.CANCELLED
    assert child.error["message"] == "its parent cancel:bare-parent was cancelled: cancelled"


def test_a_graceful_cancel_sends_the_run_to_a_worker_to_clean_up(
    clock, django_capture_on_commit_callbacks
):
    run = services.run_start("polite_cancel", "c-13", id="cancel:sent", actor="test")
    drive(run.id)

    with django_capture_on_commit_callbacks(execute=True):
        services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)

    assert testing.dispatched == [run.id]


def test_a_cancel_request_without_a_reason_or_actor_reaches_the_body_with_empty_ones(clock):
    run = services.run_start("polite_cancel", "c-14", id="cancel:bare-request", actor="test")
    drive(run.id)
    # A request that names neither (written by hand, or by an older engine), waking the run.
    WorkflowRun.objects.filter(pk=run.id).update(
        cancel_request={"deadline": (clock.now() + hours(1)).isoformat()}, wake_at=clock.now()
    )

    run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.CANCELLED, "bye:  ()")


def cleanup_that_now_steps_instead_of_napping() -> str:
    try:
        workflow.wait_for_signal("never", timeout=days(7))
        return "unreachable"
    except workflow.Cancelled:
        workflow.step(record, "cleanup")
        return "cleaned up"


def test_cleanup_whose_code_no_longer_fits_its_journal_ends_the_run_cancelled_naming_the_divergence(
    clock,
):
    run = services.run_start("cleanup_after_a_nap", id="cancel:diverged", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="stop", actor="ops", graceful=True)
    drive(run.id)  # the cleanup naps

    with override_workflow(cleanup_that_now_steps_instead_of_napping, name="cleanup_after_a_nap"):
        clock.advance(timedelta(seconds=2))
        run = drive(run.id)

    assert run.status == RunStatus.CANCELLED
    assert run.error["message"] == "stop"
    assert run.error["cleanup_error"]["type"] == "JournalMismatch"
    assert CALLS["cleanup"] == 0
