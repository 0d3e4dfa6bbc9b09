"""Timers: deadlines and sleeps are recorded once and fire on the (fake) clock."""
from datetime import timedelta

import pytest

from durable import days, minutes, services, testing
from durable.models import JournalEntry, RunStatus
from durable.testing import drive
from durable.timers import sweep_due
from tests.durable.workflows import CALLS

pytestmark = pytest.mark.django_db


def test_wait_for_signal_returns_none_after_its_deadline(clock):
    run = services.run_start("wait_with_deadline", id="deadline:1")
    run = drive(run.id)
    assert run.status == RunStatus.WAITING
    assert run.wake_at == clock.now() + days(7)

    clock.advance(days(7))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == "expired"
    assert CALLS["close_case"] == 1


def test_a_wait_before_its_deadline_keeps_waiting(clock):
    run = services.run_start("wait_with_deadline", id="deadline:2")
    drive(run.id)

    clock.advance(days(6))
    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert CALLS["close_case"] == 0


def test_the_deadline_is_recorded_at_the_first_encounter(clock):
    run = services.run_start("wait_with_deadline", id="deadline:3")
    drive(run.id)
    deadline = JournalEntry.objects.get(run=run, position=0).wake_at

    clock.advance(days(3))
    drive(run.id)

    assert JournalEntry.objects.get(run=run, position=0).wake_at == deadline


def test_sleep_wakes_after_its_duration(clock):
    run = services.run_start("nap", id="nap:1")
    run = drive(run.id)
    assert run.status == RunStatus.WAITING

    clock.advance(minutes(59))
    assert drive(run.id).status == RunStatus.WAITING
    clock.advance(minutes(1))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert CALLS["woke"] == 1


def test_the_sweep_dispatches_runs_whose_wake_time_has_passed(clock, settings):
    waiting = services.run_start("nap", id="nap:sweep")
    drive(waiting.id)
    early = services.run_start("wait_with_deadline", id="deadline:sweep")
    drive(early.id)

    clock.advance(minutes(61))
    picked = sweep_due()

    assert picked == ["nap:sweep"]
    assert sweep_due() == []  # not again while its message is in flight



def test_a_timer_due_before_the_next_tick_is_sent_now_with_a_countdown(
        clock, django_capture_on_commit_callbacks):
    run = services.run_start("nap", id="nap:lookahead")
    drive(run.id)
    clock.advance(minutes(60) - timedelta(milliseconds=400))

    with django_capture_on_commit_callbacks(execute=True):
        picked = sweep_due(lookahead=1.0)

    assert picked == ["nap:lookahead"]
    assert testing.dispatch_delays["nap:lookahead"] == pytest.approx(0.4)
