"""Retries: a failing step backs off on durable timers, then fails into the body."""

from datetime import timedelta

import pytest

from durable import Retry, StepFailed, seconds, services, workflow
from durable.models import EntryStatus, JournalEntry, RunStatus
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, Flaky, always_fails, effect

pytestmark = pytest.mark.django_db


def test_a_failing_step_backs_off_then_raises_step_failed_into_the_body(clock):
    run = services.run_start("gives_up", id="gives_up:1", actor="test")
    start = clock.now()

    run = drive(run.id)
    assert run.status == RunStatus.WAITING
    assert run.wake_at == start + timedelta(seconds=10)
    clock.advance(timedelta(seconds=9))
    assert drive(run.id).status == RunStatus.WAITING
    assert CALLS["always_fails"] == 1

    clock.advance(timedelta(seconds=1))
    run = drive(run.id)
    assert run.wake_at == clock.now() + timedelta(seconds=20)
    clock.advance(timedelta(seconds=20))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == "gave up after 3: Flaky: the provider is down"
    assert CALLS["always_fails"] == 3
    entry = JournalEntry.objects.get(run=run, position=0)
    assert (entry.status, entry.attempt, entry.error["type"]) == (EntryStatus.FAILED, 3, "Flaky")


def fails_once_then_waits():
    try:
        workflow.step(always_fails, retry=Retry(max_attempts=1))
    except StepFailed as failure:
        caught = failure.error_type
    workflow.wait_for_signal("go")
    return caught


def test_a_run_backing_off_says_which_step_it_will_retry(clock):
    run = drive(services.run_start("gives_up", id="gives_up:waiting-for", actor="test").id)

    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "retry:always_fails")


def test_a_failed_step_replays_as_the_same_failure_without_running_again(clock):
    with override_workflow(fails_once_then_waits, name="fails_then_waits"):
        run = services.run_start("fails_then_waits", id="fails_then_waits:1", actor="test")
        assert drive(run.id).status == RunStatus.WAITING
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)  # replays the failed entry: StepFailed again, from the journal

    assert (run.status, run.result) == (RunStatus.COMPLETED, "Flaky")
    assert CALLS["always_fails"] == 1


def test_an_operator_retry_gives_a_failed_step_a_fresh_budget(clock):
    run = services.run_start("fails_in_body", id="retry:body", actor="test")
    assert drive(run.id).status == RunStatus.FAILED

    services.run_retry(run.id, actor="ops@example.com")
    run = drive(run.id)

    assert run.status == RunStatus.FAILED  # the body still raises: the code was not fixed
    assert CALLS["before"] == 1
    assert run.audit_events.filter(action="retry", actor="ops@example.com").exists()


def fails_once() -> str:
    effect("fails_once")
    if CALLS["fails_once"] == 1:
        raise Flaky("the provider is down")
    return "sent"


def succeeds_on_retry_then_waits():
    sent = workflow.step(fails_once, retry=Retry(max_attempts=2, initial_interval=seconds(5)))
    workflow.wait_for_signal("go")
    return sent


def test_a_step_that_succeeds_on_its_retry_is_not_run_again_on_replay(clock):
    with override_workflow(succeeds_on_retry_then_waits, name="succeeds_on_retry"):
        run = services.run_start("succeeds_on_retry", id="retry:then-replay", actor="test")
        drive(run.id)
        clock.advance(seconds(5))
        drive(run.id)  # attempt 2 succeeds; the run waits for "go"
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "sent")
    assert CALLS["fails_once"] == 2


def fails_then_reports_after_a_wait():
    try:
        workflow.step(always_fails, retry=Retry(max_attempts=1))
    except StepFailed as failure:
        caught = (
            f"{failure.step_name}: {failure.error_type}: {failure.message} after {failure.attempts}"
        )
    workflow.wait_for_signal("go")
    return caught


def test_a_replayed_failure_carries_the_recorded_message(clock):
    with override_workflow(fails_then_reports_after_a_wait, name="reports_failure"):
        run = services.run_start("reports_failure", id="retry:message", actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)

    assert run.result == "always_fails: Flaky: the provider is down after 1"


def test_a_failed_steps_entry_keeps_the_traceback(clock):
    run = services.run_start("gives_up", id="retry:traceback", actor="test")
    drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)

    assert "Flaky: the provider is down" in entry.error["traceback"]
    assert "in always_fails" in entry.error["traceback"]


def test_a_failed_steps_traceback_reads_as_python_prints_it(clock):
    run = services.run_start("gives_up", id="retry:traceback-format", actor="test")
    drive(run.id)

    traceback = JournalEntry.objects.get(run_id=run.id, position=0).error["traceback"]

    assert traceback.startswith("Traceback (most recent call last):\n  File ")
    assert traceback.endswith("Flaky: the provider is down\n")


def fails_with_a_long_message() -> None:
    raise Flaky("x" * 5000)


def test_a_long_traceback_is_cut_to_its_last_4000_characters(clock):
    body = lambda: workflow.step(fails_with_a_long_message, retry=Retry(max_attempts=1))  # noqa: E731
    with override_workflow(body, name="long_failure"):
        run = services.run_start("long_failure", id="retry:long-traceback", actor="test")
        drive(run.id)

    traceback = JournalEntry.objects.get(run_id=run.id, position=0).error["traceback"]

    assert traceback == "x" * 3999 + "\n"
