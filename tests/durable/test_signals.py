"""Signals: kept until a wait takes them, in order, once per dedupe key."""
import pytest

from durable import RunFinished, RunNotFound, services
from durable.models import RunStatus, Signal
from durable.testing import drive
from tests.durable.workflows import three_steps

pytestmark = pytest.mark.django_db


def test_signals_sent_before_the_wait_are_consumed_in_order(clock):
    run = services.run_start("collect_two", id="collect:1")
    services.signal_send(run.id, "item", {"n": 1})
    services.signal_send(run.id, "item", {"n": 2})

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == [1, 2]
    assert list(Signal.objects.filter(run=run).values_list("consumed_position", flat=True)) == [0, 1]


def test_a_redelivered_signal_with_the_same_dedupe_key_is_one_signal(clock):
    run = services.run_start("collect_two", id="collect:dedupe")

    first = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.1")
    again = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.1")
    run = drive(run.id)

    assert first.pk == again.pk
    assert Signal.objects.filter(run=run).count() == 1
    assert run.status == RunStatus.WAITING
    assert run.waiting_for == "signal:item"


def test_a_signal_resumes_a_waiting_run(clock):
    run = services.run_start("collect_two", id="collect:resume")
    drive(run.id)
    services.signal_send(run.id, "item", {"n": 10})
    drive(run.id)

    services.signal_send(run.id, "item", {"n": 20})
    run = drive(run.id)

    assert run.result == [10, 20]


def test_a_signal_to_a_completed_run_is_a_clear_error(clock):
    run = services.run_start(three_steps, 1, id="three:done")
    drive(run.id)

    with pytest.raises(RunFinished, match="completed"):
        services.signal_send(run.id, "late", {})

    assert not Signal.objects.filter(run_id=run.id).exists()


def test_a_signal_to_an_unknown_run_is_a_clear_error():
    with pytest.raises(RunNotFound, match="nope"):
        services.signal_send("nope", "go", {})


def test_the_payload_reads_as_keys_and_as_attributes(clock):
    run = services.run_start("step_wait_step", id="attr:1")
    services.signal_send(run.id, "go", {"value": {"approved": True}})

    run = drive(run.id)

    assert run.result[1] == {"approved": True}
