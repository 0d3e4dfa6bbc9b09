"""Replay: recorded steps return their recorded results and never run again."""
import pytest

from durable import services
from durable.models import JournalEntry, RunStatus
from durable.testing import drive
from tests.durable.workflows import CALLS, three_steps
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def test_a_run_of_three_steps_completes_with_the_last_result(clock):
    run = services.run_start(three_steps, 1, id="three:1")

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == 4
    assert list(JournalEntry.objects.filter(run=run).values_list("position", "name", "result")) == [
        (0, "add_one", 2), (1, "add_one", 3), (2, "add_one", 4)]


def test_replay_returns_recorded_results_without_calling_the_step_again(clock):
    run = services.run_start("step_wait_step", id="replay:1")
    drive(run.id)
    assert CALLS["before"] == 1

    services.signal_send(run.id, "go", {"value": 7})
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == ["before", 7, "after"]
    assert CALLS["before"] == 1
    assert CALLS["after"] == 1


def test_a_completed_run_is_not_advanced_again(clock):
    run = services.run_start(three_steps, 1, id="three:again")
    drive(run.id)

    drive(run.id)

    assert Effect.objects.filter(run_id=run.id).count() == 3


def test_deterministic_values_are_recorded_and_replayed(clock):
    run = services.run_start("deterministic_values", id="values:1")
    run = drive(run.id)
    recorded = [e.result for e in JournalEntry.objects.filter(run=run).order_by("position")]

    assert run.status == RunStatus.COMPLETED
    assert [e.kind for e in JournalEntry.objects.filter(run=run)] == ["now", "uuid4", "random"]
    assert run.result["uuid"] == recorded[1]
    assert run.result["random"] == recorded[2]
    assert 0 <= run.result["random"] < 1


def test_an_exception_in_the_body_fails_the_run_with_its_error(clock):
    run = services.run_start("fails_in_body", id="body:1")

    run = drive(run.id)

    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "KeyError"
    assert "missing" in run.error["message"]
