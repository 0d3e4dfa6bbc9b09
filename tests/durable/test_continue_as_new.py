"""Continue-as-new: a run ends ``continued`` and its successor starts with new arguments and an
empty journal in the same transaction; the chain is reached through any of its ids."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from durable import current_step, services, workflow
from durable.errors import RunFinished
from durable.features import history
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.selectors import run_chain, run_current
from durable.testing import drive
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


@workflow(name="monthly_billing")
def monthly_billing(month: int, total: int) -> int:
    workflow.on_query("month", lambda: month)
    paid = workflow.wait_for_signal("paid")
    total += paid["amount"]
    if month >= 3:
        return total
    workflow.continue_as_new(month + 1, total)


@workflow(name="billing_parent")
def billing_parent() -> int:
    child = workflow.start_child(monthly_billing, 1, 0, id="child-billing")
    return workflow.wait_for_child(child)


def pay(run_id: str, amount: int, key: str | None = None) -> None:
    services.signal_send(run_id, "paid", {"amount": amount}, dedupe_key=key, actor="provider")


@pytest.fixture
def first(clock) -> WorkflowRun:
    return drive(services.run_start(monthly_billing, 1, 0, id="billing:7", actor="test").id)


def test_a_run_that_continues_ends_continued_naming_its_successor(first):
    pay(first.id, 10)

    run = drive(first.id)

    assert run.status == RunStatus.CONTINUED
    assert (run.continued_as_id, run.result) == ("billing:7~2", {"continued_as": "billing:7~2"})
    assert run.finished_at is not None


def test_the_successor_starts_with_the_new_arguments_and_an_empty_journal(first):
    pay(first.id, 10)
    drive(first.id)

    successor = WorkflowRun.objects.get(pk="billing:7~2")

    assert successor.status == RunStatus.PENDING
    assert successor.input == {"args": [2, 10], "kwargs": {}}
    assert successor.chain_root == "billing:7"
    assert not JournalEntry.objects.filter(run_id=successor.id).exists()
    assert AuditEvent.objects.get(run_id=successor.id).action == "continue_as_new"


def test_a_signal_sent_to_the_first_run_of_the_chain_reaches_the_newest(first):
    pay(first.id, 10)
    drive(first.id)

    pay("billing:7", 20)

    assert Signal.objects.filter(run_id="billing:7~2", payload={"amount": 20}).exists()
    assert drive("billing:7~2").status == RunStatus.CONTINUED


def test_the_chain_runs_to_its_end_and_every_id_names_the_newest(first):
    for amount in (10, 20, 30):
        pay("billing:7", amount)
        drive(run_current("billing:7").id)

    newest = run_current("billing:7")

    assert (newest.id, newest.status, newest.result) == ("billing:7~3", RunStatus.COMPLETED, 60)
    assert run_current("billing:7~2").id == "billing:7~3"
    assert (
        run_chain(newest)
        == run_chain(WorkflowRun.objects.get(pk="billing:7"))
        == ["billing:7", "billing:7~2", "billing:7~3"]
    )


def test_signals_the_run_had_not_taken_go_to_its_successor(first):
    pay(first.id, 10, key="pix:1")
    pay(first.id, 20, key="pix:2")  # arrives before the run continues

    drive(first.id)

    moved = Signal.objects.get(dedupe_key="pix:2")
    assert (moved.run_id, moved.consumed_position) == ("billing:7~2", None)
    assert drive("billing:7~2").status == RunStatus.CONTINUED


def test_only_the_continuing_runs_own_untaken_signals_go_to_its_successor(first, clock):
    other = drive(services.run_start(monthly_billing, 1, 0, id="billing:8", actor="test").id)
    pay(other.id, 99)
    pay(first.id, 10)
    pay(first.id, 20)

    drive(first.id)

    assert list(Signal.objects.filter(run_id="billing:8").values_list("payload", flat=True)) == [
        {"amount": 99}
    ]
    assert list(Signal.objects.filter(run_id="billing:7~2").values_list("payload", flat=True)) == [
        {"amount": 20}
    ]


def test_a_redelivered_signal_sent_to_the_first_run_is_still_one_signal(first):
    pay(first.id, 10, key="pix:1")
    pay(first.id, 20, key="pix:2")
    drive(first.id)

    pay("billing:7", 20, key="pix:2")  # the provider retries, to the id it knows

    assert Signal.objects.filter(dedupe_key="pix:2").count() == 1


def test_a_signal_a_middle_run_took_redelivered_to_the_first_id_is_still_one_signal(first):
    pay(first.id, 10)
    drive(first.id)
    pay("billing:7", 20, key="pix:2")
    drive("billing:7~2")  # took pix:2, continued as billing:7~3

    pay("billing:7", 20, key="pix:2")

    assert Signal.objects.filter(dedupe_key="pix:2").count() == 1
    assert not Signal.objects.filter(run_id="billing:7~3").exists()


def test_a_query_to_any_run_of_the_chain_is_answered_by_the_newest(first):
    pay(first.id, 10)
    drive(first.id)
    drive("billing:7~2")

    assert services.run_query("billing:7", "month") == 2


def test_a_cancel_sent_to_the_first_run_cancels_the_newest(first):
    pay(first.id, 10)
    drive(first.id)
    drive("billing:7~2")

    services.run_cancel("billing:7", reason="contract ended", actor="ops")

    assert WorkflowRun.objects.get(pk="billing:7~2").status == RunStatus.CANCELLED
    assert WorkflowRun.objects.get(pk="billing:7").status == RunStatus.CONTINUED


def test_a_cancel_of_a_chain_that_ended_says_its_newest_is_finished(first):
    for amount in (10, 20, 30):
        pay("billing:7", amount)
        drive(run_current("billing:7").id)

    with pytest.raises(RunFinished, match="billing:7~3"):
        services.run_cancel("billing:7", actor="ops")


def test_a_parent_waiting_on_a_child_that_continues_gets_the_chains_result(clock):
    parent = drive(services.run_start(billing_parent, id="parent:billing", actor="test").id)
    for amount in (1, 2, 3):
        pay("child-billing", amount)
        drive(run_current("child-billing").id)

    parent = drive(parent.id)

    assert (parent.status, parent.result) == (RunStatus.COMPLETED, 6)
    assert WorkflowRun.objects.get(pk="child-billing~3").parent_id == parent.id


def test_a_continued_run_replays_from_its_recorded_history(first):
    pay(first.id, 10)
    drive(first.id)

    report = history.history_replay(
        history.history_parse(history.history_export(first.id), source="test")
    )

    assert report.ok, report.summary
    assert "continues as new" in report.summary


def test_continuing_as_new_keeps_the_steps_done_before_it_done_once(clock):
    run = drive(services.run_start("counting_loop", 1, 0, id="count:1", actor="test").id)
    drive("count:1~2")

    last = drive("count:1~3")

    assert (last.status, last.result) == (RunStatus.COMPLETED, 6)
    assert Effect.objects.filter(name="add_n").count() == 3
    assert run.status == RunStatus.CONTINUED


def ask_to_cancel_me(n: int) -> int:
    services.run_cancel(current_step().run_id, reason="customer left", actor="ops", graceful=True)
    return n


@workflow(name="cancelled_while_continuing")
def cancelled_while_continuing(n: int) -> str:
    if n == 1:
        workflow.step(ask_to_cancel_me, n)  # the cancel lands while the run is running
        workflow.continue_as_new(2)
    try:
        workflow.wait_for_signal("never")
    except workflow.Cancelled as cancelled:
        return f"cleaned up: {cancelled.reason}"
    return "unreachable"


@workflow(name="loop_with_a_child")
def loop_with_a_child(n: int) -> str:
    if n == 1:
        workflow.start_child(monthly_billing, 1, 0, id="loop-child")
        workflow.continue_as_new(2)
    return workflow.wait_for_signal("done")


def test_a_graceful_cancel_asked_during_the_advance_that_continues_goes_to_the_successor(clock):
    first = drive(services.run_start(cancelled_while_continuing, 1, id="cwc:1", actor="test").id)

    successor = drive("cwc:1~2")

    assert first.status == RunStatus.CONTINUED
    assert (successor.status, successor.result) == (
        RunStatus.CANCELLED,
        "cleaned up: customer left",
    )


def test_a_chain_whose_first_run_was_archived_is_still_reached_by_its_first_id(first, clock):
    pay(first.id, 10)
    drive(first.id)
    clock.advance(timedelta(seconds=1))
    call_command("durable", "archive", "--finished-before", "0s", stdout=StringIO())
    assert not WorkflowRun.objects.filter(pk="billing:7").exists()

    pay("billing:7", 20)

    assert Signal.objects.filter(run_id="billing:7~2", payload={"amount": 20}).exists()
    assert services.run_query("billing:7", "month") == 2


def test_children_still_running_go_on_with_the_successor(clock):
    drive(services.run_start(loop_with_a_child, 1, id="lwc:1", actor="test").id)

    assert WorkflowRun.objects.get(pk="loop-child").parent_id == "lwc:1~2"


def test_a_successor_id_already_taken_blocks_the_run_with_the_reason(first):
    services.run_start(monthly_billing, 9, 9, id="billing:7~2", actor="someone")
    pay(first.id, 10)

    run = drive(first.id)

    assert run.status == RunStatus.BLOCKED
    assert "billing:7~2" in run.error["message"]
