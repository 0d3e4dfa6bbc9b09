"""Determinism: a journal that no longer matches the code blocks the run; patched() branches."""

import pytest

from durable import services, workflow
from durable.models import JournalEntry, RunStatus
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, a_then_b, b_then_a, record

pytestmark = pytest.mark.django_db


def test_reordered_steps_block_the_run_with_a_message_naming_both(clock):
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id="reorder:1", actor="test")
        drive(run.id)
    services.signal_send(run.id, "go", {}, actor="test")

    with override_workflow(b_then_a, name="reorder"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["type"] == "JournalMismatch"
    assert "position 0" in run.error["message"]
    assert "step 'b'" in run.error["message"] and "step 'a'" in run.error["message"]
    assert CALLS["b"] == 0


def a_then_return() -> str:
    return workflow.step(record, "a", name="a")


def test_code_that_now_finishes_before_its_journal_does_blocks_the_run_naming_what_was_recorded(
    clock,
):
    with override_workflow(a_then_b, name="shrinks"):
        run = services.run_start("shrinks", id="shrinks:1", actor="test")
        drive(run.id)  # journal: step 'a', then the wait for "go"
    services.signal_send(run.id, "go", {}, actor="test")

    with override_workflow(a_then_return, name="shrinks"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert (
        "the code has finished but the journal recorded signal 'go' there" in run.error["message"]
    )


def test_a_blocked_run_resumes_after_the_code_is_restored_and_retried(clock):
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id="reorder:2", actor="test")
        drive(run.id)
    services.signal_send(run.id, "go", {}, actor="test")
    with override_workflow(b_then_a, name="reorder"):
        drive(run.id)

    with override_workflow(a_then_b, name="reorder"):
        services.run_retry(run.id, actor="test")
        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert (CALLS["a"], CALLS["b"]) == (1, 1)


def test_code_that_stops_short_of_the_journal_blocks_the_run(clock):
    with override_workflow(a_then_b, name="shorter"):
        run = services.run_start("shorter", id="shorter:1", actor="test")
        drive(run.id)

    with override_workflow(lambda: workflow.step(record, "a", name="a"), name="shorter"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert "has finished" in run.error["message"]


def before_patch():
    workflow.step(record, "a", name="a")
    workflow.step(record, "old", name="old")
    workflow.wait_for_signal("go")
    return "finished"


def after_patch():
    workflow.step(record, "a", name="a")
    if workflow.patched("new-greeting"):
        workflow.step(record, "new", name="new")
    else:
        workflow.step(record, "old", name="old")
    workflow.wait_for_signal("go")
    return "finished"


def test_patched_is_false_when_replaying_a_journal_recorded_before_the_patch(clock):
    with override_workflow(before_patch, name="greeting"):
        old = services.run_start("greeting", id="greeting:old", actor="test")
        drive(old.id)
    services.signal_send(old.id, "go", {}, actor="test")

    with override_workflow(after_patch, name="greeting"):
        old = drive(old.id)

    assert old.status == RunStatus.COMPLETED
    assert list(JournalEntry.objects.filter(run=old).values_list("name", flat=True)) == [
        "a",
        "old",
        "go",
    ]
    assert CALLS["new"] == 0


def test_patched_is_true_for_new_runs(clock):
    with override_workflow(after_patch, name="greeting"):
        new = services.run_start("greeting", id="greeting:new", actor="test")
        services.signal_send(new.id, "go", {}, actor="test")
        new = drive(new.id)

    assert new.status == RunStatus.COMPLETED
    assert list(JournalEntry.objects.filter(run=new).values_list("kind", "name")) == [
        ("step", "a"),
        ("patch", "new-greeting"),
        ("step", "new"),
        ("signal", "go"),
    ]
    assert CALLS["old"] == 0


def test_a_run_of_an_unregistered_version_is_blocked_not_lost(clock):
    with override_workflow(a_then_b, name="gone", version=1):
        run = services.run_start("gone", id="gone:1", actor="test")

    run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert "no workflow named 'gone'" in run.error["message"]


def test_a_run_whose_input_no_longer_fits_the_code_is_blocked_with_the_reason(clock):
    from tests.durable.workflows import Validation

    def takes_a_validation(result: Validation):
        return result.ok

    with override_workflow(lambda text: text, name="input_change"):
        run = services.run_start("input_change", "plain text", id="input:1", actor="test")
    with override_workflow(takes_a_validation, name="input_change"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["type"] == "InputMismatch"
    assert "expected an object for Validation" in run.error["message"]


def test_a_run_that_took_the_patched_path_keeps_it_on_replay(clock):
    with override_workflow(after_patch, name="greeting"):
        run = services.run_start("greeting", id="greeting:replayed", actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {}, actor="test")

        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert (CALLS["new"], CALLS["old"]) == (1, 0)


def test_a_run_of_an_unregistered_version_is_blocked_as_workflow_not_found(clock):
    with override_workflow(a_then_b, name="gone", version=1):
        run = services.run_start("gone", id="gone:type", actor="test")

    run = drive(run.id)

    assert run.error["type"] == "WorkflowNotFound"


def after_another_patch():
    workflow.step(record, "a", name="a")
    if workflow.patched("newer-greeting"):
        workflow.step(record, "newer", name="newer")
    else:
        workflow.step(record, "old", name="old")
    workflow.wait_for_signal("go")
    return "finished"


def test_a_patch_marker_of_another_change_is_not_taken_for_this_one(clock):
    with override_workflow(after_patch, name="greeting"):
        run = services.run_start("greeting", id="greeting:other-patch", actor="test")
        drive(run.id)
    services.signal_send(run.id, "go", {}, actor="test")

    with override_workflow(after_another_patch, name="greeting"):
        run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert CALLS["newer"] == 0
