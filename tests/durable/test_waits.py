"""Waits for real conversations: one of several signals, everything buffered, a batch."""

from dataclasses import dataclass
from datetime import timedelta

import pytest

from durable import days, seconds, services, workflow
from durable.features import history
from durable.models import EntryKind, EntryStatus, JournalEntry, RunStatus, Signal
from durable.testing import drive, override_workflow
from tests.durable.crashed import as_if_its_worker_died

pytestmark = pytest.mark.django_db


def test_wait_for_any_returns_whichever_signal_came_first(clock):
    run = services.run_start("paid_or_voided", id="any:first", actor="test")
    drive(run.id)
    services.signal_send(run.id, "voided", {"amount": 0}, actor="test")
    services.signal_send(run.id, "paid", {"amount": 100}, actor="test")

    run = drive(run.id)

    assert run.result == {"name": "voided", "amount": 0}
    assert Signal.objects.get(run=run, name="paid").consumed_position is None  # left buffered


def test_wait_for_any_leaves_signals_of_other_names_buffered(clock):
    run = services.run_start("paid_or_voided", id="any:other", actor="test")
    services.signal_send(run.id, "reminder_opened", {}, actor="test")
    services.signal_send(run.id, "paid", {"amount": 7}, actor="test")

    run = drive(run.id)

    assert run.result == {"name": "paid", "amount": 7}
    assert Signal.objects.get(run=run, name="reminder_opened").consumed_position is None


def test_wait_for_any_returns_none_at_its_deadline(clock):
    run = services.run_start("paid_or_voided", id="any:deadline", actor="test")
    drive(run.id)
    clock.advance(days(3) + timedelta(seconds=1))

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED and run.result is None


def test_wait_for_any_replays_to_the_same_received_signal(clock):
    run = services.run_start("paid_or_voided", id="any:replay", actor="test")
    services.signal_send(run.id, "paid", {"amount": 5}, actor="test")
    drive(run.id)

    report = history.history_replay(history.history_parse(history.history_export(run.id)))

    assert report.ok, report.summary
    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert (entry.name, entry.result["name"]) == ("paid|voided", "paid")


def test_drain_takes_every_buffered_signal_in_order_in_one_entry(clock):
    run = services.run_start("drain_then_wait", id="drain:1", actor="test")
    for n in (1, 2, 3):
        services.signal_send(run.id, "item", {"n": n}, actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    drained = JournalEntry.objects.get(run_id=run.id, position=0)
    assert drained.kind == EntryKind.DRAIN and len(drained.result["payloads"]) == 3
    assert set(Signal.objects.filter(run=run).values_list("consumed_position", flat=True)) == {0}

    services.signal_send(
        run.id, "item", {"n": 4}, actor="test"
    )  # after the drain: the next wait takes it
    run = drive(run.id)

    assert run.result == {"early": [1, 2, 3], "later": 4}


def test_drain_with_nothing_buffered_is_an_empty_list_and_never_waits(clock):
    run = services.run_start("drain_then_wait", id="drain:empty", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.WAITING and run.waiting_for == "signal:item"
    assert JournalEntry.objects.get(run_id=run.id, position=0).result["payloads"] == []


@dataclass
class Item:
    n: int


def drains_items() -> list:
    return [item.n * 10 for item in workflow.drain_signals("item", type=Item)]


def test_drain_decodes_each_payload_to_the_type_asked_for(clock):
    with override_workflow(drains_items, name="drains_items"):
        run = services.run_start("drains_items", id="drain:typed", actor="test")
        services.signal_send(run.id, "item", {"n": 1}, actor="test")
        services.signal_send(run.id, "item", {"n": 2}, actor="test")

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, [10, 20])


def drains_items_then_waits() -> list:
    items = workflow.drain_signals("item", type=Item)
    workflow.wait_for_signal("go")
    return [[type(item).__name__, item.n] for item in items]


def test_a_replayed_drain_decodes_its_recorded_payloads_to_the_type_asked_for(clock):
    with override_workflow(drains_items_then_waits, name="drains_items_then_waits"):
        run = services.run_start("drains_items_then_waits", id="drain:typed-replay", actor="test")
        services.signal_send(run.id, "item", {"n": 1}, actor="test")
        services.signal_send(run.id, "item", {"n": 2}, actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)  # replays the drain from its journal entry

    assert (run.status, run.result) == (RunStatus.COMPLETED, [["Item", 1], ["Item", 2]])


def test_a_drains_journal_entry_names_the_signals_it_took(clock):
    with override_workflow(drains_items_then_waits, name="drains_items_then_waits"):
        run = services.run_start("drains_items_then_waits", id="drain:names-signals", actor="test")
        first = services.signal_send(run.id, "item", {"n": 1}, actor="test")
        second = services.signal_send(run.id, "item", {"n": 2}, actor="test")

        drive(run.id)

    entry = JournalEntry.objects.get(run_id=run.id, position=0)
    assert entry.kind == EntryKind.DRAIN
    assert entry.result["signal_ids"] == [first.pk, second.pk]


def collects_items() -> list:
    batch = workflow.collect_signals("item", quiet=seconds(30), timeout=days(1), type=Item)
    return [[type(item).__name__, item.n] for item in batch]


def test_a_collected_batch_is_decoded_to_the_type_asked_for_from_its_first_signal(clock):
    with override_workflow(collects_items, name="collects_items"):
        run = services.run_start("collects_items", id="collect:typed", actor="test")
        services.signal_send(run.id, "item", {"n": 1}, actor="test")
        drive(run.id)
        services.signal_send(run.id, "item", {"n": 2}, actor="test")
        drive(run.id)
        clock.advance(seconds(31))

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, [["Item", 1], ["Item", 2]])


def waits_for_names(names) -> str:  # no hint: the input arrives as it was given
    workflow.wait_for_any(names)
    return "waited"


@pytest.mark.parametrize("names", [["paid", ""], ["paid", 3], [], "paid"])
def test_wait_for_any_refuses_anything_but_a_list_of_signal_names(clock, names):
    with override_workflow(waits_for_names, name="waits_for_names"):
        run = drive(
            services.run_start("waits_for_names", names, id=f"any:names:{names!r}", actor="test").id
        )

    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "TypeError"
    assert (
        run.error["message"] == "wait_for_any takes a list of signal names, e.g. ['paid', 'voided']"
    )


def test_collect_takes_what_came_together_and_leaves_a_later_signal_for_the_next_batch(clock):
    run = services.run_start("two_batches", id="collect:quiet", actor="test")
    drive(run.id)
    services.signal_send(run.id, "doc", {"n": 1}, actor="test")
    drive(run.id)
    clock.advance(seconds(10))
    services.signal_send(run.id, "doc", {"n": 2}, actor="test")
    drive(run.id)
    clock.advance(seconds(31))  # quiet for 30 s: the first batch is [1, 2]
    drive(run.id)
    clock.advance(seconds(9))
    services.signal_send(run.id, "doc", {"n": 3}, actor="test")  # 40 s after the second
    drive(run.id)
    clock.advance(seconds(31))

    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == [[1, 2], [3]]


def test_collect_counts_its_quiet_period_from_when_the_signals_arrived(clock):
    run = services.run_start("two_batches", id="collect:buffered", actor="test")
    services.signal_send(run.id, "doc", {"n": 1}, actor="test")
    clock.advance(seconds(5))
    services.signal_send(run.id, "doc", {"n": 2}, actor="test")
    clock.advance(seconds(60))  # both arrived long ago: no need to wait another 30 s

    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert JournalEntry.objects.filter(run_id=run.id, result__timed_out=True).count() == 1
    services.signal_send(run.id, "doc", {"n": 3}, actor="test")
    drive(run.id)
    clock.advance(seconds(31))
    assert drive(run.id).result == [[1, 2], [3]]


def test_collect_returns_none_when_nothing_came_before_its_timeout(clock):
    run = services.run_start("two_batches", id="collect:nothing", actor="test")
    drive(run.id)
    clock.advance(days(7) + timedelta(seconds=1))
    drive(run.id)
    clock.advance(days(7) + timedelta(seconds=1))

    run = drive(run.id)

    assert run.result == [None, None]


def test_a_drain_is_journalled_as_completed_at_once(clock):
    run = services.run_start("drain_then_wait", id="drain:completed", actor="test")

    drive(run.id)

    drained = JournalEntry.objects.get(run_id=run.id, position=0)
    assert drained.status == EntryStatus.COMPLETED


def test_a_crash_loop_at_a_new_drain_names_the_drain_in_its_reason(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start("drain_then_wait", id="drain:crash-loop", actor="test")
    as_if_its_worker_died(run, takeovers=2, at=0)

    run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at drain 'item' (position 0)")


def waits_for_a_typed_item() -> list:
    got = workflow.wait_for_any(["item", "other"], type=Item)
    return [got.name, type(got.payload).__name__, got.payload.n]


def test_wait_for_any_decodes_the_payload_to_the_type_asked_for(clock):
    with override_workflow(waits_for_a_typed_item, name="waits_for_a_typed_item"):
        run = services.run_start("waits_for_a_typed_item", id="any:typed", actor="test")
        services.signal_send(run.id, "item", {"n": 7}, actor="test")

        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, ["item", "Item", 7])


def test_a_batch_recovered_after_a_crash_keeps_its_quiet_period_from_the_last_arrival(clock):
    run = services.run_start("two_batches", id="collect:recovered", actor="test")
    drive(run.id)
    services.signal_send(run.id, "doc", {"n": 1}, actor="test")
    arrived = clock.now()
    drive(run.id)
    # the worker died after recording the first signal, before recording the quiet wait
    JournalEntry.objects.filter(run_id=run.id, position=1).delete()
    clock.advance(seconds(10))

    run = drive(run.id)

    assert run.status == RunStatus.WAITING
    assert run.wake_at == arrived + seconds(30)
