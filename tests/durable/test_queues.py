"""Queues: a step that asks for another Celery queue hands its run there, and back after it."""

from datetime import timedelta

import pytest

from durable import services, testing
from durable.models import RunStatus, WorkflowRun
from durable.testing import drive
from tests.durable.limited import LLM_QUEUE, all_on_llm, llm_in_the_middle
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db

DEFAULT = "celery"


def marks(run_id: str) -> list[str]:
    return list(Effect.objects.filter(run_id=run_id).order_by("id").values_list("name", flat=True))


def test_a_step_on_another_queue_hands_the_run_to_that_queue(
    clock, django_capture_on_commit_callbacks
):
    run = services.run_start(llm_in_the_middle, id="queue:1", actor="test")

    with django_capture_on_commit_callbacks(execute=True):
        handed = drive(run.id, queue=DEFAULT)

    assert (handed.status, handed.waiting_for) == (RunStatus.PENDING, f"queue:{LLM_QUEUE}")
    assert marks(run.id) == ["before"]
    assert testing.dispatch_queues[run.id] == LLM_QUEUE


def test_the_step_after_it_goes_back_to_the_default_queue(
    clock, django_capture_on_commit_callbacks
):
    run = services.run_start(llm_in_the_middle, id="queue:2", actor="test")
    drive(run.id, queue=DEFAULT)

    with django_capture_on_commit_callbacks(execute=True):
        back = drive(run.id, queue=LLM_QUEUE)

    assert (back.status, back.waiting_for) == (RunStatus.PENDING, f"queue:{DEFAULT}")
    assert marks(run.id) == ["before", "checked"]
    assert testing.dispatch_queues[run.id] == DEFAULT


def test_a_step_done_on_its_queue_is_replayed_anywhere_without_a_hand_off(clock):
    run = services.run_start(llm_in_the_middle, id="queue:3", actor="test")
    drive(run.id, queue=DEFAULT)
    drive(run.id, queue=LLM_QUEUE)

    done = drive(run.id, queue=DEFAULT)

    assert done.status == RunStatus.COMPLETED
    assert done.result == ["before", "checked", "after"]
    assert marks(run.id) == ["before", "checked", "after"]


def test_an_in_process_driver_runs_every_step_whatever_its_queue(clock):
    run = services.run_start(llm_in_the_middle, id="queue:4", actor="test")

    assert drive(run.id).status == RunStatus.COMPLETED


def test_a_workflow_with_a_queue_is_started_on_that_queue(
    clock, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(all_on_llm, id="queue:5", actor="test")

    assert testing.dispatch_queues[run.id] == LLM_QUEUE
    assert drive(run.id, queue=LLM_QUEUE).status == RunStatus.COMPLETED


def test_a_workflow_with_a_queue_reached_on_the_default_queue_is_handed_to_its_own(clock):
    run = services.run_start(all_on_llm, id="queue:6", actor="test")

    handed = drive(run.id, queue=DEFAULT)

    assert handed.waiting_for == f"queue:{LLM_QUEUE}"
    assert marks(run.id) == []


def test_runs_that_name_no_queue_are_dispatched_without_one(
    clock, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.run_start("three_steps", 1, id="queue:7", actor="test")

    assert testing.dispatch_queues["queue:7"] == DEFAULT
    assert WorkflowRun.objects.get(pk="queue:7").waiting_for == ""


def test_a_handed_on_run_is_swept_back_only_after_the_dispatch_grace_period(clock, settings):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 30
    run = services.run_start(llm_in_the_middle, id="queue:grace", actor="test")

    handed = drive(run.id, queue=DEFAULT)

    assert handed.wake_at == clock.now() + timedelta(seconds=30)
