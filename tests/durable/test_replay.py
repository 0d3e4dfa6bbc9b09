"""Replay: recorded steps return their recorded results and never run again."""

import functools

import pytest

from durable import Retry, current_step, seconds, services, workflow
from durable.models import JournalEntry, RunStatus
from durable.runtime.executor import MAX_REPLAYS_PER_ADVANCE
from durable.testing import drive, override_workflow
from tests.durable.workflows import (
    CALLS,
    a_then_b,
    always_fails,
    b_then_a,
    record,
    three_steps,
    validate,
)
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def test_a_run_of_three_steps_completes_with_the_last_result(clock):
    run = services.run_start(three_steps, 1, id="three:1", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == 4
    assert list(JournalEntry.objects.filter(run=run).values_list("position", "name", "result")) == [
        (0, "add_one", 2),
        (1, "add_one", 3),
        (2, "add_one", 4),
    ]


def test_replay_returns_recorded_results_without_calling_the_step_again(clock):
    run = services.run_start("step_wait_step", id="replay:1", actor="test")
    drive(run.id)
    assert CALLS["before"] == 1

    services.signal_send(run.id, "go", {"value": 7}, actor="test")
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == ["before", 7, "after"]
    assert CALLS["before"] == 1
    assert CALLS["after"] == 1


def test_a_completed_run_is_not_advanced_again(clock):
    run = services.run_start(three_steps, 1, id="three:again", actor="test")
    drive(run.id)

    drive(run.id)

    assert Effect.objects.filter(run_id=run.id).count() == 3


def test_deterministic_values_are_recorded_and_replayed(clock):
    run = services.run_start("deterministic_values", id="values:1", actor="test")
    run = drive(run.id)
    recorded = [e.result for e in JournalEntry.objects.filter(run=run).order_by("position")]

    assert run.status == RunStatus.COMPLETED
    assert [e.kind for e in JournalEntry.objects.filter(run=run)] == ["now", "uuid4", "random"]
    assert run.result["uuid"] == recorded[1]
    assert run.result["random"] == recorded[2]
    assert 0 <= run.result["random"] < 1


def test_an_exception_in_the_body_fails_the_run_with_its_error(clock):
    run = services.run_start("fails_in_body", id="body:1", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "KeyError"
    assert "missing" in run.error["message"]


def test_a_steps_dataclass_result_comes_back_as_that_dataclass(clock):
    with override_workflow(
        lambda: type(workflow.step(validate, ["articles"])).__name__, name="typed_step"
    ):
        run = services.run_start("typed_step", id="typed:1", actor="test")

        run = drive(run.id)

    assert run.result == "Validation"


def reports_itself() -> list:
    info = current_step()
    return [info.name, info.position, info.attempt]


def test_a_running_step_knows_its_name_position_and_attempt(clock):
    def body():
        workflow.step(record, "first")
        return workflow.step(reports_itself, name="introspect")

    with override_workflow(body, name="introspection"):
        run = services.run_start("introspection", id="introspect:1", actor="test")

        run = drive(run.id)

    assert run.result == ["introspect", 1, 1]


def test_a_run_started_with_keyword_arguments_receives_them(clock):
    with override_workflow(lambda *, greeting: greeting, name="keywords"):
        run = services.run_start("keywords", greeting="olá", id="keywords:1", actor="test")

        run = drive(run.id)

    assert run.result == "olá"


def test_a_run_that_keeps_replaying_is_handed_back_to_the_sweep_with_a_wake_time(clock):
    no_backoff = Retry(max_attempts=1000, initial_interval=seconds(0))
    with override_workflow(lambda: workflow.step(always_fails, retry=no_backoff), name="spins"):
        run = services.run_start("spins", id="spins:1", actor="test")

        run = drive(run.id)

    assert (run.status, run.wake_at) == (RunStatus.PENDING, clock.now() + seconds(1))
    assert CALLS["always_fails"] == 2 * MAX_REPLAYS_PER_ADVANCE


def test_a_failed_run_is_logged_with_its_id(clock, caplog):
    run = services.run_start("fails_in_body", id="logged:failed", actor="test")

    drive(run.id)

    assert "run logged:failed failed: KeyError" in caplog.text


def test_a_blocked_run_is_logged_with_its_id(clock, caplog):
    with override_workflow(a_then_b, name="logged_blocked"):
        run = services.run_start("logged_blocked", id="logged:blocked", actor="test")
        drive(run.id)
    services.signal_send(run.id, "go", {}, actor="test")

    with override_workflow(b_then_a, name="logged_blocked"):
        drive(run.id)

    assert "run logged:blocked blocked: journal mismatch" in caplog.text


def test_a_fenced_advance_is_logged_with_the_runs_id(clock, caplog):
    def cancels_itself():
        services.run_cancel(current_step().run_id, reason="cancelled mid-step", actor="test")

    with override_workflow(lambda: workflow.step(cancels_itself), name="logged_fenced"):
        run = services.run_start("logged_fenced", id="logged:fenced", actor="test")

        drive(run.id)

    assert "run logged:fenced: fenced" in caplog.text


class Notifier:
    """A callable without a ``__name__``: its step is named after its class, not its repr."""

    def __call__(self, text: str) -> str:
        return text

    def __repr__(self) -> str:
        return "notifier"


def test_a_step_of_a_callable_without_a_name_is_journaled_under_its_class(clock):
    with override_workflow(lambda: workflow.step(Notifier(), "hello"), name="nameless_step"):
        run = services.run_start("nameless_step", id="nameless:1", actor="test")

        run = drive(run.id)

    assert JournalEntry.objects.get(run_id=run.id, position=0).name == "Notifier"


def test_a_step_of_a_partial_is_journaled_under_the_wrapped_function_so_any_process_replays_it(
    clock,
):
    with override_workflow(
        lambda: workflow.step(functools.partial(functools.partial(validate), ["id"])),
        name="partial_step",
    ):
        run = services.run_start("partial_step", id="partial:1", actor="test")

        run = drive(run.id)

    assert JournalEntry.objects.get(run_id=run.id, position=0).name == "validate"


def validates_then_waits():
    result = workflow.step(validate, ["articles"])
    workflow.wait_for_signal("go")
    return type(result).__name__


def test_a_steps_dataclass_result_is_that_dataclass_again_on_replay(clock):
    with override_workflow(validates_then_waits, name="typed_step_replayed"):
        run = services.run_start("typed_step_replayed", id="typed:replayed", actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)

    assert run.result == "Validation"


def uuid_and_its_type() -> str:
    token = workflow.uuid4()
    workflow.wait_for_signal("go")
    return f"{type(token).__name__} {token.hex}"


def test_a_recorded_uuid_is_a_uuid_again_after_a_replay(clock):
    with override_workflow(uuid_and_its_type, name="uuid_and_its_type"):
        run = services.run_start("uuid_and_its_type", id="values:uuid-type", actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", actor="test")
        run = drive(run.id)

    recorded = JournalEntry.objects.get(run_id=run.id, position=0)
    assert run.status == RunStatus.COMPLETED
    assert run.result == f"UUID {recorded.result.replace('-', '')}"
