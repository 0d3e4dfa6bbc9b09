"""Forking a run from a step: a new run with the source's input and its journal up to a
position, running the code deployed now from there; the source is never changed."""

import pytest

from durable import services, workflow
from durable.documents import history_parse
from durable.errors import InvalidFork, RunConflict, WorkflowNotFound
from durable.features import history
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.runtime import registry
from durable.testing import drive, override_workflow
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def charge(invoice: int, amount: int) -> str:
    Effect.objects.create(run_id=str(invoice), name="charge", idempotency_key="")
    return f"charged {amount}"


def amount_of(invoice: int) -> int:
    return invoice * 10


@workflow(name="fork_billing")
def fork_billing(invoice: int) -> dict:
    workflow.set_attributes(stage="issuing")  # 0
    amount = workflow.step(amount_of, invoice)  # 1
    receipt = workflow.step(charge, invoice, amount)  # 2
    paid = workflow.wait_for_signal("paid")  # 3
    workflow.set_attributes(stage="paid")  # 4
    return {"amount": amount, "receipt": receipt, "paid": paid}


def fixed_amount_of(invoice: int) -> int:
    return invoice * 10 - 1


def fork_billing_fixed(invoice: int) -> dict:
    """The same workflow after the amount's bug was fixed (its step keeps its name)."""
    workflow.set_attributes(stage="issuing")
    amount = workflow.step(fixed_amount_of, invoice, name="amount_of")
    receipt = workflow.step(charge, invoice, amount)
    paid = workflow.wait_for_signal("paid")
    workflow.set_attributes(stage="paid")
    return {"amount": amount, "receipt": receipt, "paid": paid}


@workflow(name="fork_parent")
def fork_parent() -> str:
    workflow.step(amount_of, 1)
    child = workflow.start_child("fork_billing", 7)
    return child.id


def charges() -> int:
    return Effect.objects.filter(name="charge").count()


@pytest.fixture
def paid_run(clock) -> WorkflowRun:
    run = drive(services.run_start(fork_billing, 4, id="invoice:4", actor="test").id)
    services.signal_send(run.id, "paid", {"by": "pix"}, dedupe_key="pix:1", actor="test")
    run = drive(run.id)
    assert run.status == RunStatus.COMPLETED
    return run


@pytest.fixture
def waiting_run(clock) -> WorkflowRun:
    run = drive(services.run_start(fork_billing, 5, id="invoice:5", actor="test").id)
    assert run.status == RunStatus.WAITING
    return run


def test_a_fork_keeps_the_entries_before_its_position_and_runs_the_rest_again(paid_run):
    fork = services.run_fork(paid_run.id, at_position=2, actor="ops:ana")

    fork = drive(fork.id)

    assert fork.status == RunStatus.COMPLETED
    assert fork.result == {"amount": 40, "receipt": "charged 40", "paid": {"by": "pix"}}
    assert charges() == 2  # the source's charge, and the fork's: position 2 ran again
    copied = JournalEntry.objects.get(run_id=fork.id, position=1)
    assert (copied.name, copied.result) == ("amount_of", 40)


def test_a_fork_runs_the_code_deployed_now_from_its_position(paid_run):
    with override_workflow(fork_billing_fixed, name="fork_billing"):
        fork = drive(services.run_fork(paid_run.id, at_position=1, actor="ops:ana").id)

    assert fork.result["amount"] == 39
    assert fork.result["receipt"] == "charged 39"


def test_the_source_is_not_changed_by_its_fork(paid_run):
    journal_before = list(
        JournalEntry.objects.filter(run_id=paid_run.id).values_list("position", "status", "result")
    )

    drive(services.run_fork(paid_run.id, at_position=2, actor="ops:ana").id)

    paid_run.refresh_from_db()
    assert paid_run.status == RunStatus.COMPLETED
    assert (
        list(
            JournalEntry.objects.filter(run_id=paid_run.id).values_list(
                "position", "status", "result"
            )
        )
        == journal_before
    )


def test_the_fork_and_its_source_name_each_other(paid_run):
    fork = services.run_fork(paid_run.id, at_position=2, actor="ops:ana")

    assert (fork.forked_from_id, fork.fork_position) == (paid_run.id, 2)
    assert list(paid_run.forks.values_list("id", flat=True)) == [fork.id]


def test_both_runs_get_an_audit_row_naming_the_actor(paid_run):
    fork = services.run_fork(paid_run.id, at_position=2, actor="ops:ana", audit={"via": "test"})

    on_source = AuditEvent.objects.filter(run_id=paid_run.id, action="fork").get()
    on_fork = AuditEvent.objects.filter(run_id=fork.id).get()
    assert (on_source.actor, on_source.detail["fork"], on_source.detail["at_position"]) == (
        "ops:ana",
        fork.id,
        2,
    )
    assert (on_fork.action, on_fork.actor, on_fork.detail["forked_from"]) == (
        "fork",
        "ops:ana",
        paid_run.id,
    )


def test_signals_the_source_took_at_or_after_the_position_are_the_forks_to_take_again(paid_run):
    fork = services.run_fork(paid_run.id, at_position=3, actor="ops:ana")

    reapplied = Signal.objects.get(run_id=fork.id)

    assert (reapplied.name, reapplied.payload, reapplied.dedupe_key) == (
        "paid",
        {"by": "pix"},
        "pix:1",
    )
    assert reapplied.consumed_position is None
    assert drive(fork.id).status == RunStatus.COMPLETED


def test_a_signal_taken_before_the_position_stays_in_the_copied_journal_only(paid_run):
    fork = services.run_fork(paid_run.id, at_position=4, actor="ops:ana")

    assert not Signal.objects.filter(run_id=fork.id).exists()
    assert drive(fork.id).result["paid"] == {"by": "pix"}


def test_the_forks_search_attributes_are_those_of_the_entries_it_kept(paid_run):
    assert paid_run.attributes == {"stage": "paid"}

    fork = services.run_fork(paid_run.id, at_position=2, actor="ops:ana")

    assert fork.attributes == {"stage": "issuing"}


def test_forking_a_run_that_is_still_waiting_leaves_it_waiting_and_both_go_on(waiting_run):
    fork = drive(services.run_fork(waiting_run.id, at_position=3, actor="ops:ana").id)
    services.signal_send(waiting_run.id, "paid", {"by": "boleto"}, actor="test")

    source = drive(waiting_run.id)

    assert source.status == RunStatus.COMPLETED
    assert fork.status == RunStatus.WAITING
    services.signal_send(fork.id, "paid", {"by": "card"}, actor="test")
    assert drive(fork.id).result["paid"] == {"by": "card"}


def test_a_position_past_the_journal_is_refused_and_creates_nothing(paid_run):
    runs_before = WorkflowRun.objects.count()

    with pytest.raises(InvalidFork, match="past"):
        services.run_fork(paid_run.id, at_position=6, actor="ops:ana")

    assert WorkflowRun.objects.count() == runs_before
    assert not AuditEvent.objects.filter(run_id=paid_run.id, action="fork").exists()


@pytest.mark.parametrize("position", [-1, "2", 2.0, True])
def test_a_position_that_is_not_a_whole_number_from_0_is_refused(paid_run, position):
    with pytest.raises(InvalidFork, match="whole number"):
        services.run_fork(paid_run.id, at_position=position, actor="ops:ana")


def test_the_end_of_the_journal_is_a_position_a_fork_may_run_on_from(paid_run):
    fork = drive(services.run_fork(paid_run.id, at_position=5, actor="ops:ana").id)

    assert fork.status == RunStatus.COMPLETED
    assert charges() == 1


def test_a_position_after_a_wait_that_has_not_ended_is_refused(waiting_run):
    with pytest.raises(InvalidFork, match="position 3 .* waiting"):
        services.run_fork(waiting_run.id, at_position=4, actor="ops:ana")


def test_a_position_after_a_child_run_was_started_is_refused(clock):
    parent = drive(services.run_start(fork_parent, id="parent:1", actor="test").id)

    with pytest.raises(InvalidFork, match="child run"):
        services.run_fork(parent.id, at_position=2, actor="ops:ana")

    fork = drive(services.run_fork(parent.id, at_position=1, actor="ops:ana").id)
    assert fork.status == RunStatus.COMPLETED
    assert fork.result == f"{fork.id}:child:1"


def test_a_run_of_a_workflow_no_code_registers_cannot_be_forked(clock):
    @workflow(name="fork_gone")
    def gone() -> int:
        return workflow.step(amount_of, 2)

    run = drive(services.run_start(gone, id="gone:1", actor="test").id)
    registry.unregister("fork_gone", 1)
    runs_before = WorkflowRun.objects.count()

    with pytest.raises(WorkflowNotFound):
        services.run_fork(run.id, at_position=0, actor="ops:ana")

    assert WorkflowRun.objects.count() == runs_before


def test_asking_for_the_same_fork_twice_returns_the_first(paid_run):
    first = services.run_fork(paid_run.id, at_position=2, actor="ops:ana", id="invoice:4:again")

    again = services.run_fork(paid_run.id, at_position=2, actor="ops:ana", id="invoice:4:again")

    assert again.pk == first.pk
    assert JournalEntry.objects.filter(run_id=first.id).count() == 2
    assert AuditEvent.objects.filter(run_id=paid_run.id, action="fork").count() == 1


def test_an_id_taken_by_another_run_is_a_conflict(paid_run):
    with pytest.raises(RunConflict):
        services.run_fork(paid_run.id, at_position=2, actor="ops:ana", id=paid_run.id)


def test_a_fork_replays_from_its_recorded_history_with_its_copied_entries(paid_run):
    with override_workflow(fork_billing_fixed, name="fork_billing"):
        fork = drive(services.run_fork(paid_run.id, at_position=1, actor="ops:ana").id)
        recorded = history_parse(history.history_export(fork.id), source="the fork")

        report = history.history_replay(recorded)

    assert report.ok, report.diff
    assert sorted(recorded.journal) == [0, 1, 2, 3, 4]
