"""Signals: kept until a wait takes them, in order, once per dedupe key."""

from dataclasses import dataclass
from datetime import timedelta

import pytest

from durable import RunFinished, RunNotFound, services, workflow
from durable import clock as durable_clock
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.testing import drive, override_workflow
from tests.durable.workflows import three_steps

pytestmark = pytest.mark.django_db


def test_signals_sent_before_the_wait_are_consumed_in_order(clock):
    run = services.run_start("collect_two", id="collect:1", actor="test")
    services.signal_send(run.id, "item", {"n": 1}, actor="test")
    services.signal_send(run.id, "item", {"n": 2}, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == [1, 2]
    assert list(Signal.objects.filter(run=run).values_list("consumed_position", flat=True)) == [
        0,
        1,
    ]


def test_a_redelivered_signal_with_the_same_dedupe_key_is_one_signal(clock):
    run = services.run_start("collect_two", id="collect:dedupe", actor="test")

    first = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.1", actor="test")
    again = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.1", actor="test")
    run = drive(run.id)

    assert first.pk == again.pk
    assert Signal.objects.filter(run=run).count() == 1
    assert run.status == RunStatus.WAITING
    assert run.waiting_for == "signal:item"


def test_a_signal_resumes_a_waiting_run(clock):
    run = services.run_start("collect_two", id="collect:resume", actor="test")
    drive(run.id)
    services.signal_send(run.id, "item", {"n": 10}, actor="test")
    drive(run.id)

    services.signal_send(run.id, "item", {"n": 20}, actor="test")
    run = drive(run.id)

    assert run.result == [10, 20]


def test_a_signal_to_a_completed_run_is_a_clear_error(clock):
    run = services.run_start(three_steps, 1, id="three:done", actor="test")
    drive(run.id)

    with pytest.raises(RunFinished, match="completed"):
        services.signal_send(run.id, "late", {}, actor="test")

    assert not Signal.objects.filter(run_id=run.id).exists()


def test_a_signal_to_a_run_parked_without_a_deadline_makes_it_due_for_the_sweep_within_the_grace(
    clock, settings
):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 10
    run = drive(services.run_start("collect_two", id="collect:grace", actor="test").id)
    assert (run.status, run.wake_at) == (RunStatus.WAITING, None)

    services.signal_send(run.id, "item", {"n": 1}, actor="test")

    run.refresh_from_db()
    assert run.wake_at == durable_clock.now() + timedelta(seconds=10)  # if its message is lost
    assert run.signal_seq == 1


def test_a_signal_brings_a_later_deadline_forward_to_the_grace(clock, settings):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 10
    run = drive(services.run_start("wait_with_deadline", id="deadline:later", actor="test").id)

    services.signal_send(run.id, "documents_received", {}, actor="test")

    run.refresh_from_db()
    assert run.wake_at == durable_clock.now() + timedelta(seconds=10)


def test_a_signal_never_pushes_a_sooner_deadline_back(clock, settings):
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 10
    run = drive(services.run_start("wait_with_deadline", id="deadline:sooner", actor="test").id)
    deadline = run.wake_at
    clock.advance(timedelta(days=7) - timedelta(seconds=5))

    services.signal_send(run.id, "documents_received", {}, actor="test")

    run.refresh_from_db()
    assert run.wake_at == deadline


def test_a_signal_to_an_unknown_run_is_a_clear_error():
    with pytest.raises(RunNotFound, match="nope"):
        services.signal_send("nope", "go", {}, actor="test")


def test_the_payload_reads_as_keys_and_as_attributes(clock):
    run = services.run_start("step_wait_step", id="attr:1", actor="test")
    services.signal_send(run.id, "go", {"value": {"approved": True}}, actor="test")

    run = drive(run.id)

    assert run.result[1] == {"approved": True}


def signal_own_run(name: str) -> None:
    services.signal_send(
        workflow.id, name, {"from": "a webhook that landed mid-advance"}, actor="test"
    )


def waits_signals_itself_then_waits():
    workflow.wait_for_signal("first")  # loads the run's pending signals
    workflow.step(signal_own_run, "second")
    return workflow.wait_for_signal("second")["from"]


def test_a_signal_sent_while_the_run_is_advancing_is_taken_before_it_parks(clock):
    with override_workflow(waits_signals_itself_then_waits, name="signal_mid_advance"):
        run = services.run_start("signal_mid_advance", id="signals:mid-advance", actor="test")
        services.signal_send(run.id, "first", {}, actor="test")

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "a webhook that landed mid-advance")


def test_the_wait_that_consumed_a_signal_records_which_signal_it_was(clock):
    run = services.run_start("collect_two", id="signals:recorded", actor="test")
    signal = services.signal_send(run.id, "item", {"n": 1}, actor="test")

    drive(run.id)

    assert JournalEntry.objects.get(run_id=run.id, position=0).result == {
        "signal_id": signal.pk,
        "name": "item",
        "payload": {"n": 1},
        "at": signal.created_at.isoformat(),
    }


@dataclass
class Decision:
    approved: bool


def waits_for_a_typed_decision():
    decision = workflow.wait_for_signal("decision", type=Decision)
    return [type(decision).__name__, decision.approved]


def test_a_typed_wait_returns_the_dataclass_on_the_first_delivery(clock):
    with override_workflow(waits_for_a_typed_decision, name="typed_decision"):
        run = services.run_start("typed_decision", id="signals:typed", actor="test")
        services.signal_send(run.id, "decision", {"approved": True}, actor="test")

        run = drive(run.id)

    assert run.result == ["Decision", True]


def waits_for_a_typed_decision_then_for_go():
    decision = workflow.wait_for_signal("decision", type=Decision)
    workflow.wait_for_signal("go")
    return [type(decision).__name__, decision.approved]


def test_a_typed_wait_returns_the_dataclass_again_on_replay(clock):
    with override_workflow(waits_for_a_typed_decision_then_for_go, name="typed_decision_replayed"):
        run = services.run_start("typed_decision_replayed", id="signals:typed-replay", actor="test")
        services.signal_send(run.id, "decision", {"approved": True}, actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)

    assert run.result == ["Decision", True]


def test_a_consumed_signal_records_when_it_was_taken(clock):
    run = services.run_start("collect_two", id="collect:consumed-at", actor="test")
    services.signal_send(run.id, "item", {"n": 1}, actor="test")

    drive(run.id)

    assert Signal.objects.get(run=run).consumed_at == clock.now()


def test_a_signal_and_its_audit_row_name_the_same_signal_and_wake_the_run_once(clock):
    run = services.run_start(three_steps, 1, id="three:audited", actor="test")
    before = WorkflowRun.objects.get(pk=run.id).signal_seq

    signal = services.signal_send(run.id, "go", {"n": 1}, actor="alice")

    assert Signal.objects.get(pk=signal.pk).name == "go"
    assert (
        AuditEvent.objects.filter(run_id=run.id, action="signal").get().detail["signal_id"]
        == signal.pk
    )
    assert WorkflowRun.objects.get(pk=run.id).signal_seq == before + 1


def test_a_refused_signal_wakes_nothing(clock):
    run = services.run_start(three_steps, 1, id="three:refused", actor="test")
    drive(run.id)
    finished = WorkflowRun.objects.get(pk=run.id)

    with pytest.raises(RunFinished):
        services.signal_send(run.id, "late", {}, actor="test")

    after = WorkflowRun.objects.get(pk=run.id)
    assert (after.signal_seq, after.wake_at, after.updated_at) == (
        finished.signal_seq,
        finished.wake_at,
        finished.updated_at,
    )
