"""Reads apps make of runs, without the engine's tables."""

import pytest

from durable import selectors, services
from durable.testing import drive

pytestmark = pytest.mark.django_db


def test_step_results_are_the_named_steps_results_oldest_first(clock):
    run = drive(services.run_start("step_wait_step", id="selectors:results", actor="test").id)

    assert [
        (step.name, step.position, step.result)
        for step in selectors.step_results(run.id, ["record"])
    ] == [("record", 0, "before")]
    assert selectors.step_results(run.id, ["no_such_step"]) == []


def test_a_signal_is_not_a_step_result_even_under_a_wanted_name(clock):
    run = drive(services.run_start("step_wait_step", id="selectors:signal", actor="test").id)
    services.signal_send(run.id, "go", {"ok": True}, actor="test")
    run = drive(run.id)

    assert [step.result for step in selectors.step_results(run.id, ["record", "go"])] == [
        "before",
        "after",
    ]


def test_runs_started_by_lists_a_parents_children_and_run_exists_only_live_runs(clock):
    parent = services.run_start("three_steps", 1, id="selectors:parent", actor="test")
    services.run_start("three_steps", 2, id="selectors:child-b", parent=parent.id, actor="test")
    services.run_start("three_steps", 3, id="selectors:child-a", parent=parent.id, actor="test")

    assert [run.id for run in selectors.runs_started_by(parent.id)] == [
        "selectors:child-a",
        "selectors:child-b",
    ]
    assert selectors.run_exists(parent.id) and not selectors.run_exists("selectors:nobody")


def test_a_run_s_timers_are_its_sleeps_still_to_end_never_its_waits_for_a_signal(clock):
    napping = drive(services.run_start("nap", id="timers:nap", actor="test").id)
    waiting = drive(services.run_start("step_wait_step", id="timers:wait", actor="test").id)

    assert (selectors.run_timers(napping.id), selectors.run_timers(waiting.id)) == (1, 0)

    services.run_wake(napping.id, actor="ops")

    assert selectors.run_timers(napping.id) == 0


def test_only_a_run_whose_sole_wait_is_a_signal_is_one_a_wake_cannot_change(clock):
    napping = drive(services.run_start("nap", id="wake-only:nap", actor="test").id)
    waiting = drive(services.run_start("step_wait_step", id="wake-only:wait", actor="test").id)

    assert (
        selectors.run_signal_wait_only(napping.id),
        selectors.run_signal_wait_only(waiting.id),
    ) == ("", waiting.waiting_for)
