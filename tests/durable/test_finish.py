"""What the run row says once an advance ends: when it ended, what it waits for, who holds it."""

import logging
import threading
import time
from datetime import timedelta

import pytest

from durable import services, workflow
from durable.errors import Fenced
from durable.models import RunStatus, WorkflowRun
from durable.runtime import heartbeat
from durable.runtime.store import live
from durable.runtime.store.live import Settlement
from durable.testing import drive, override_workflow
from tests.durable.workflows import three_steps

pytestmark = pytest.mark.django_db


def test_a_completed_run_records_when_it_finished(clock):
    run = services.run_start(three_steps, 1, id="finish:completed", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.finished_at == clock.now()


def test_a_run_parked_at_a_wait_has_not_finished(clock):
    run = services.run_start("collect_two", id="finish:waiting", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert run.finished_at is None


def test_a_cancelled_run_records_when_it_finished(clock):
    run = drive(services.run_start("collect_two", id="finish:cancelled", actor="test").id)
    clock.advance(timedelta(minutes=5))

    services.run_cancel(run.id, reason="customer withdrew", actor="ops")

    assert WorkflowRun.objects.get(pk=run.id).finished_at == clock.now()


def test_a_run_that_waited_and_then_completed_waits_for_nothing(clock):
    run = services.run_start("step_wait_step", id="finish:waited", actor="test")
    assert drive(run.id).waiting_for == "signal:go"
    services.signal_send(run.id, "go", {"value": 1}, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.waiting_for == ""


def test_a_finished_run_was_last_changed_when_it_finished_not_when_it_was_claimed(clock):
    def five_minutes_pass() -> None:
        clock.advance(timedelta(minutes=5))

    def a_step_that_takes_five_minutes() -> str:
        workflow.step(five_minutes_pass)
        return "done"

    with override_workflow(a_step_that_takes_five_minutes, name="finish_slow_step"):
        run = services.run_start("finish_slow_step", id="finish:updated", actor="test")
        claimed_at = clock.now()

        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.updated_at == claimed_at + timedelta(minutes=5)


def test_a_stale_holder_cannot_park_the_run_even_when_no_signal_came(clock, settings):
    run = services.run_start("collect_two", id="finish:stale-park", actor="test")
    stale_run, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")

    with pytest.raises(Fenced):
        stale.settle(stale_run, Settlement.park(None, "signal:item"))

    assert WorkflowRun.objects.get(pk=run.id).lease_owner == "b"


def test_a_stale_holder_that_sees_a_new_signal_is_fenced_rather_than_told_to_look_again(
    clock, settings
):
    run = services.run_start("collect_two", id="finish:stale-signal", actor="test")
    stale_run, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")
    services.signal_send(run.id, "item", {"n": 1}, actor="test")

    with pytest.raises(Fenced):
        stale.settle(stale_run, Settlement.park(None, "signal:item"))


def test_a_holder_that_sees_a_new_signal_reads_its_own_runs_sequence(clock):
    run = services.run_start("collect_two", id="finish:race", actor="test")
    clock.advance(timedelta(seconds=1))
    other = services.run_start(
        "collect_two", id="finish:race-newer", actor="test"
    )  # listed first (newest first)
    claimed_run, lease = live.claim(run.id, owner="a")
    live.claim(other.id, owner="a")  # the same fencing token: both runs' first claim
    services.signal_send(other.id, "item", {"n": 1}, actor="test")
    services.signal_send(other.id, "item", {"n": 2}, actor="test")
    services.signal_send(run.id, "item", {"n": 1}, actor="test")

    woken = lease.settle(claimed_run, Settlement.park(None, "signal:item"))

    assert woken is not None  # a signal came since the claim: look again, do not park
    assert lease.signal_seq == woken.signal_seq == WorkflowRun.objects.get(pk=run.id).signal_seq
    assert claimed_run.status == RunStatus.RUNNING


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_does_not_warn_of_a_lost_lease_for_a_run_its_advance_has_finished(caplog):
    finished = services.run_start(three_steps, 1, id="finish:beat-done", actor="test")
    lost = services.run_start(three_steps, 2, id="finish:beat-lost", actor="test")
    finished_run, done = live.claim(finished.id, owner="a", lease_seconds=0.6)
    _, taken = live.claim(lost.id, owner="a", lease_seconds=0.6)
    beat, threads_before = heartbeat.Heartbeat(), set(threading.enumerate())
    beat.IDLE_EXIT_SECONDS = 0

    with caplog.at_level(logging.WARNING, logger="durable"), beat.hold(done), beat.hold(taken):
        done.settle(finished_run, Settlement.complete(4))  # still held: the advance is ending
        WorkflowRun.objects.filter(pk=lost.id).update(lease_owner="someone else", fencing_token=99)
        give_up = time.monotonic() + 5
        while time.monotonic() < give_up and lost.id not in caplog.text:
            time.sleep(0.05)
        time.sleep(0.6)  # a whole lease more: the finished one had its ticks too
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=5)

    warned = [r.getMessage() for r in caplog.records if "lease lost" in r.getMessage()]
    assert warned  # the heartbeat did tick: it warned of the lease another worker took
    assert set(warned) == {f"run {lost.id}: lease lost while a step was running"}
