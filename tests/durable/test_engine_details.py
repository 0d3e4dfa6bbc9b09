"""Details of the engine that operators and bodies rely on: error texts, typed results, the
kinds of failures an atomic step can have."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.models import ReviewerPreference
from durable import Retry, seconds, services, workflow
from durable import clock as durable_clock
from durable.models import EntryStatus, JournalEntry, RunStatus, WorkflowRun
from durable.runtime.context import check_attribute_name
from durable.runtime.current import current
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, Correction, effect
from tests.effects.models import Once

pytestmark = pytest.mark.django_db


def test_a_bad_attribute_name_is_refused_with_the_rule_it_broke():
    with pytest.raises(
        ValueError,
        match="must be an identifier of at most 64 characters without a double underscore",
    ):
        check_attribute_name("not an identifier")


def test_a_delivered_graceful_cancel_is_journaled_as_a_cancelled_error_with_its_reason_and_actor(
    clock,
):
    run = services.run_start("polite_cancel", "c-9", id="cancel:entry", actor="test")
    drive(run.id)
    services.run_cancel(run.id, reason="customer withdrew", actor="ops", graceful=True)

    drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert entry.status == EntryStatus.CANCELLED
    assert entry.error == {"type": "Cancelled", "message": "customer withdrew", "actor": "ops"}


def duplicate_booking(idempotency_key: str) -> int:
    effect("duplicate_booking")
    Once.objects.create(key="taken")
    return Once.objects.create(key="taken").pk  # the step's own IntegrityError


def test_an_atomic_steps_own_integrity_error_is_a_step_failure_not_a_lost_lease(clock):
    def books_twice():
        return workflow.step(duplicate_booking, atomic=True, retry=Retry(max_attempts=1))

    with override_workflow(books_twice, name="books_twice"):
        run = drive(services.run_start("books_twice", id="atomic:integrity", actor="test").id)

    assert run.status == RunStatus.FAILED
    assert "IntegrityError" in run.error["message"]
    assert not Once.objects.exists()  # the failed attempt's first write rolled back too
    assert CALLS["duplicate_booking"] == 1


def prefer_for_nobody(idempotency_key: str) -> int:
    effect("prefer_for_nobody")
    # A user that does not exist: the foreign key is checked at commit (deferred), not here.
    return ReviewerPreference.objects.create(
        user_id=987654321, language="pt-br", updated_at=timezone.now()
    ).pk


@pytest.mark.django_db(transaction=True)  # a real COMMIT, where the deferred key is checked
def test_an_atomic_steps_foreign_key_refused_at_commit_is_a_step_failure_not_a_lost_lease(clock):
    def prefers_for_nobody():
        return workflow.step(prefer_for_nobody, atomic=True, retry=Retry(max_attempts=1))

    with override_workflow(prefers_for_nobody, name="prefers_for_nobody"):
        run = drive(
            services.run_start("prefers_for_nobody", id="atomic:deferred-fk", actor="test").id
        )

    assert run.status == RunStatus.FAILED, run.error
    assert "IntegrityError" in run.error["message"]
    assert not ReviewerPreference.objects.exists()
    assert CALLS["prefer_for_nobody"] == 1


def slow_lookup(idempotency_key: str) -> str:
    effect("slow_lookup")
    return "found"


def died_inside_the_first_attempt(run_id: str) -> None:
    """A worker claimed the run, journaled slow_lookup's attempt as started (30 s timeout),
    then died inside it."""
    WorkflowRun.objects.filter(pk=run_id).update(advances=1)
    JournalEntry.objects.create(
        run_id=run_id,
        position=0,
        kind="step",
        name="slow_lookup",
        status=EntryStatus.STARTED,
        attempt=1,
        started_at=durable_clock.now(),
        wake_at=durable_clock.now() + timedelta(seconds=30),
        created_at=durable_clock.now(),
        updated_at=durable_clock.now(),
    )


def test_an_attempt_found_running_past_its_timeout_counts_as_failed_and_is_retried(clock):
    def looks_up():
        return workflow.step(slow_lookup, timeout=seconds(30), retry=Retry(max_attempts=3))

    with override_workflow(looks_up, name="looks_up"):
        run = services.run_start("looks_up", id="timeout:found", actor="test")
        died_inside_the_first_attempt(run.id)
        clock.advance(seconds(31))

        run = drive(run.id)
        entry = JournalEntry.objects.get(run_id=run.id, position=0)
        assert (run.status, entry.status, entry.attempt) == (
            RunStatus.WAITING,
            EntryStatus.RETRYING,
            1,
        )
        assert entry.error["type"] == "StepTimeout"
        assert "was still running 0:00:30 after it started (attempt 1)" in entry.error["message"]

        clock.advance(seconds(5))
        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert (run.result, CALLS["slow_lookup"]) == ("found", 1)


def outlasts_its_timeout(idempotency_key: str) -> str:
    durable_clock.sleep(10)  # on the test's fake clock: ten seconds pass inside the step
    return "too late"


def test_a_step_that_runs_past_its_timeout_is_recorded_as_a_timed_out_attempt(clock):
    def looks_up_slowly():
        return workflow.step(outlasts_its_timeout, timeout=seconds(5), retry=Retry(max_attempts=1))

    with override_workflow(looks_up_slowly, name="looks_up_slowly"):
        run = drive(services.run_start("looks_up_slowly", id="timeout:inside", actor="test").id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert (run.status, entry.status) == (RunStatus.FAILED, EntryStatus.FAILED)
    assert entry.error["type"] == "StepTimeout"
    assert "took longer than its timeout of 0:00:05" in entry.error["message"]


def deadline_left_on_the_lease() -> bool:
    """Whether the heartbeat would still see a step deadline (and stop extending the lease)."""
    return current().store.step_deadline is not None


def test_a_step_after_a_timed_one_runs_with_no_deadline_left_on_its_lease(clock):
    def timed_then_untimed():
        workflow.step(slow_lookup, timeout=seconds(30))
        return workflow.step(deadline_left_on_the_lease)

    with override_workflow(timed_then_untimed, name="timed_then_untimed"):
        run = drive(services.run_start("timed_then_untimed", id="timeout:cleared", actor="test").id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, False)


def test_a_childs_result_reaches_the_parent_as_the_type_the_child_declares(clock):
    def checks_type():
        handle = workflow.start_child("correction", "e1", 5)
        result = workflow.wait_for_child(handle)
        return [type(result).__name__, isinstance(result, Correction)]

    with override_workflow(checks_type, name="checks_child_type"):
        parent = drive(services.run_start("checks_child_type", id="typed:child", actor="test").id)
        drive(f"{parent.id}:child:0")
        parent = drive(parent.id)

    assert parent.result == ["Correction", True]


def test_a_run_whose_arguments_the_new_code_no_longer_takes_is_blocked_saying_why(clock):
    with override_workflow(lambda text: text, name="input_error_type"):
        run = services.run_start("input_error_type", "plain text", id="input:type", actor="test")
    with override_workflow(lambda: "no arguments now", name="input_error_type"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["type"] == "InputMismatch"
    assert "TypeError: too many positional arguments" in run.error["message"]


def test_an_attempt_found_past_its_timeout_under_a_graceful_cancel_ends_cancelled_at_that_step(
    clock,
):
    def looks_up():
        return workflow.step(slow_lookup, timeout=seconds(30), retry=Retry(max_attempts=3))

    with override_workflow(looks_up, name="looks_up"):
        run = services.run_start("looks_up", id="timeout:cancelled", actor="test")
        died_inside_the_first_attempt(run.id)
        services.run_cancel(run.id, reason="customer withdrew", actor="ops", graceful=True)
        clock.advance(seconds(31))

        run = drive(run.id)

    entries = list(
        JournalEntry.objects.filter(run_id=run.id).values_list(
            "position", "name", "status", "error"
        )
    )
    assert run.status == RunStatus.CANCELLED
    assert entries == [
        (
            0,
            "slow_lookup",
            EntryStatus.CANCELLED,
            {"type": "Cancelled", "message": "customer withdrew", "actor": "ops"},
        )
    ]
    assert CALLS["slow_lookup"] == 0


def returns_something_unstorable() -> object:
    return object()


def test_a_body_that_returns_a_value_the_journal_cannot_store_fails_its_run_saying_so(clock):
    with override_workflow(returns_something_unstorable, name="returns_something_unstorable"):
        run = drive(
            services.run_start(
                "returns_something_unstorable", id="result:unstorable", actor="test"
            ).id
        )

    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "PayloadError"
