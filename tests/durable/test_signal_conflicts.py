"""Signal dedupe keys: a redelivery is the same signal, anything else under the key is refused."""

import threading
import time

import pytest
from django.db import connection, transaction

from durable import SignalConflict, reserve_dedupe_prefix, services
from durable.models import AuditEvent, RunStatus, Signal, WorkflowRun
from durable.runtime import registry
from durable.testing import drive

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting_run(clock):
    return drive(services.run_start("collect_two", id="conflict:1", actor="test").id)


@pytest.fixture
def reserved_prefix():
    reserve_dedupe_prefix("desk:", owner="front-desk")
    yield "desk:"
    registry.release_dedupe_prefix("desk:")


def written(run_id: str) -> tuple:
    run = WorkflowRun.objects.get(pk=run_id)
    return (
        Signal.objects.filter(run_id=run_id).count(),
        AuditEvent.objects.filter(run_id=run_id, action="signal").count(),
        run.signal_seq,
    )


def test_the_same_key_with_another_payload_is_a_conflict_and_writes_nothing(waiting_run):
    services.signal_send(waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.1", actor="test")
    before = written(waiting_run.id)

    with pytest.raises(SignalConflict, match="another payload"):
        services.signal_send(waiting_run.id, "item", {"n": 2}, dedupe_key="wamid.1", actor="test")

    assert written(waiting_run.id) == before
    assert Signal.objects.get(run_id=waiting_run.id).payload == {"n": 1}


def test_the_same_key_with_another_name_is_a_conflict(waiting_run):
    services.signal_send(waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.2", actor="test")

    with pytest.raises(SignalConflict, match="refusing a 'cancel' signal"):
        services.signal_send(waiting_run.id, "cancel", {"n": 1}, dedupe_key="wamid.2", actor="test")

    assert list(Signal.objects.values_list("name", flat=True)) == ["item"]


def test_true_and_one_are_different_payloads(waiting_run):
    services.signal_send(waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.3", actor="test")

    with pytest.raises(SignalConflict):
        services.signal_send(
            waiting_run.id, "item", {"n": True}, dedupe_key="wamid.3", actor="test"
        )


def test_an_identical_redelivery_returns_the_existing_signal_whatever_the_key_order(waiting_run):
    first = services.signal_send(
        waiting_run.id, "item", {"n": 1, "text": "oi"}, dedupe_key="wamid.4", actor="test"
    )

    again = services.signal_send(
        waiting_run.id, "item", {"text": "oi", "n": 1}, dedupe_key="wamid.4", actor="test"
    )

    assert again.pk == first.pk
    assert written(waiting_run.id)[:2] == (1, 1)


def test_a_redelivery_to_a_finished_run_returns_the_existing_signal(waiting_run):
    first = services.signal_send(
        waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.late", actor="test"
    )
    services.signal_send(waiting_run.id, "item", {"n": 2}, actor="test")
    assert drive(waiting_run.id).status == RunStatus.COMPLETED

    again = services.signal_send(
        waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.late", actor="test"
    )

    assert again.pk == first.pk


@pytest.mark.django_db(transaction=True)
def test_a_redelivery_outside_a_transaction_returns_the_signal_and_writes_nothing():
    run = services.run_start("collect_two", id="conflict:autocommit", actor="test")
    first = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.auto", actor="test")
    before = written(run.id)

    again = services.signal_send(run.id, "item", {"n": 1}, dedupe_key="wamid.auto", actor="test")
    with pytest.raises(SignalConflict):
        services.signal_send(run.id, "item", {"n": 2}, dedupe_key="wamid.auto", actor="test")

    assert again.pk == first.pk
    assert written(run.id) == before


def test_a_conflict_inside_the_callers_transaction_leaves_it_usable(waiting_run):
    services.signal_send(waiting_run.id, "item", {"n": 1}, dedupe_key="wamid.5", actor="test")

    with transaction.atomic():
        with pytest.raises(SignalConflict):
            services.signal_send(
                waiting_run.id, "item", {"n": 2}, dedupe_key="wamid.5", actor="test"
            )
        services.signal_send(waiting_run.id, "item", {"n": 3}, actor="test")

    assert sorted(Signal.objects.values_list("payload__n", flat=True)) == [1, 3]


def test_a_reserved_prefix_is_refused_to_other_senders_naming_its_owner(
    waiting_run, reserved_prefix
):
    with pytest.raises(SignalConflict, match="reserved by 'front-desk'"):
        services.signal_send(waiting_run.id, "item", {"n": 1}, dedupe_key="desk:7", actor="test")

    assert not Signal.objects.exists()


def test_the_owner_of_a_reserved_prefix_sends_with_reserved_by(waiting_run, reserved_prefix):
    services.signal_send(
        waiting_run.id,
        "item",
        {"n": 1},
        dedupe_key="desk:7",
        reserved_by="front-desk",
        actor="test",
    )

    assert Signal.objects.get().dedupe_key == "desk:7"


def test_claiming_a_reservation_the_key_is_not_under_is_an_error(waiting_run, reserved_prefix):
    with pytest.raises(ValueError, match="under no prefix reserved"):
        services.signal_send(
            waiting_run.id,
            "item",
            {"n": 1},
            dedupe_key="other:7",
            reserved_by="front-desk",
            actor="test",
        )

    assert not Signal.objects.exists()


def test_a_prefix_overlapping_another_owners_reservation_cannot_be_reserved(reserved_prefix):
    with pytest.raises(ValueError, match="reserved by 'front-desk'"):
        reserve_dedupe_prefix("desk:vip:", owner="sales")


def test_the_approval_prefix_is_reserved_by_the_approvals_app():
    assert registry.dedupe_reservation("approval:7") == ("approval:", "approvals")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sends_with_one_key_and_two_payloads_leave_one_signal_and_one_conflict():
    run = services.run_start("collect_two", id="conflict:race", actor="test")
    barrier = threading.Barrier(2)
    outcomes = []

    def send(n: int):
        try:
            barrier.wait(timeout=10)
            with transaction.atomic():
                services.signal_send(
                    run.id, "item", {"n": n}, dedupe_key="wamid.race", actor="test"
                )
                time.sleep(0.3)  # hold the row: the other sender has checked the key and waits
            outcomes.append("sent")
        except SignalConflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["conflict", "sent"]
    assert Signal.objects.filter(run_id=run.id).count() == 1
    assert AuditEvent.objects.filter(run_id=run.id, action="signal").count() == 1
    assert WorkflowRun.objects.get(pk=run.id).signal_seq == 1
    assert drive(run.id).status == RunStatus.WAITING
