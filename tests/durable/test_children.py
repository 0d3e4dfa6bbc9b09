"""Child runs: started once with the parent's journal, waited on, cancelled with the parent."""

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from durable import Retry, services, workflow
from durable.errors import RunConflict, SignalConflict
from durable.features import history
from durable.models import AuditEvent, EntryKind, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.runtime import children
from durable.runtime.store import live
from durable.runtime.store.live import Settlement
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, LEDGER_UNLOCKED
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def drive_children(parent_id: str) -> None:
    for child in WorkflowRun.objects.filter(parent_id=parent_id):
        drive(child.id)


def test_fan_out_and_fan_in_returns_each_childs_result_in_order(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 10), ("e2", 20), ("e3", 30)], id="recon:d1", actor="test"
    )
    drive(parent.id)

    drive_children(parent.id)
    parent = drive(parent.id)

    assert parent.status == RunStatus.COMPLETED
    assert parent.result == ["e1=10", "e2=20", "e3=30"]
    assert sorted(WorkflowRun.objects.filter(parent_id=parent.id).values_list("id", flat=True)) == [
        "recon:d1:child:0",
        "recon:d1:child:1",
        "recon:d1:child:2",
    ]


def test_a_parent_that_replays_in_the_same_advance_finds_its_child_started_and_waits_for_it(clock):
    tries = []

    def fails_the_first_time() -> str:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("the provider was busy")
        return "sent"

    def starts_a_child_then_sends() -> int:
        handle = workflow.start_child("three_steps", 1)
        workflow.step(
            fails_the_first_time, retry=Retry(initial_interval=0)
        )  # retried at once: a replay
        return workflow.wait_for_child(handle)

    with override_workflow(starts_a_child_then_sends, name="child_then_send"):
        parent = drive(services.run_start("child_then_send", id="replays", actor="test").id)

    assert len(tries) == 2
    assert parent.status == RunStatus.WAITING
    assert parent.waiting_for == f"signal:{children.signal_name('replays:child:0')}"
    assert list(WorkflowRun.objects.filter(parent_id=parent.id).values_list("id", flat=True)) == [
        "replays:child:0"
    ]


def test_a_child_that_finishes_before_the_parent_waits_is_not_missed(clock):
    parent = services.run_start("reconcile_disputes", [("e1", 1)], id="recon:early", actor="test")
    drive(parent.id)  # starts the child and waits
    drive("recon:early:child:0")  # the child ends while the parent is parked

    parent = drive(parent.id)

    assert parent.result == ["e1=1"]


def test_the_parents_wait_returns_the_childs_typed_result(clock):
    parent = services.run_start("one_child", "e9", id="typed", actor="test")
    drive(parent.id)
    child_id = "typed:child:0"
    drive(child_id)

    services.signal_send(child_id, "decision", "approved", actor="test")
    drive(child_id)
    parent = drive(parent.id)

    assert parent.status == RunStatus.COMPLETED
    assert parent.result == "e9: approved"


def test_a_failed_child_raises_child_failed_in_the_parent_with_its_type_and_message(clock):
    parent = services.run_start(
        "reconcile_disputes", [("good", 1), ("bad", -5)], id="recon:fail", actor="test"
    )
    drive(parent.id)

    drive_children(parent.id)
    parent = drive(parent.id)

    assert parent.status == RunStatus.COMPLETED
    assert parent.result == [
        "failed: recon:fail:child:1: StepFailed: step 'correct' failed after "
        "1 attempt(s): ValueError: entry bad cannot be corrected by -5"
    ]
    assert WorkflowRun.objects.get(pk="recon:fail:child:1").status == RunStatus.FAILED


def test_one_timeout_bounds_the_wait_for_all_children_not_each_child(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 1), ("e2", 2), ("e3", 3)], id="recon:late", actor="test"
    )
    drive(parent.id)
    drive("recon:late:child:0")
    clock.advance(12 * 3600)
    drive(parent.id)  # takes the first result, then waits for the second

    clock.advance(12 * 3600 + 1)  # a day after the wait began, half a day after the second's
    parent = drive(parent.id)

    assert parent.status == RunStatus.COMPLETED
    assert parent.result == ["e1=1", None, None]


def _parent_past_its_wait_for_the_child(clock, parent_id: str) -> WorkflowRun:
    """The one_child parent started, its child waiting for a decision, the parent's five
    days gone by: the parent is driven past its wait and returned."""
    parent = services.run_start("one_child", "e1", id=parent_id, actor="test")
    drive(parent.id)
    drive(f"{parent_id}:child:0")
    clock.advance(5 * 24 * 3600 + 1)
    return drive(parent.id)


def test_the_wait_for_a_child_returns_none_at_its_deadline_and_the_child_goes_on(clock):
    parent = _parent_past_its_wait_for_the_child(clock, "late")

    assert parent.result == "no decision in time"
    assert WorkflowRun.objects.get(pk="late:child:0").status == RunStatus.WAITING


def test_a_child_that_outlives_its_parent_finishes_without_error(clock):
    parent = _parent_past_its_wait_for_the_child(clock, "gone")

    services.signal_send("gone:child:0", "decision", "late yes", actor="test")
    child = drive("gone:child:0")

    assert child.status == RunStatus.COMPLETED
    assert not Signal.objects.filter(
        run_id=parent.id, name__startswith=children.SIGNAL_PREFIX
    ).exists()


def test_cancelling_the_parent_cancels_its_unfinished_children(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 1), ("e2", 2)], id="recon:cancel", actor="test"
    )
    drive(parent.id)
    drive("recon:cancel:child:0")  # this one completes; the other has not run yet

    services.run_cancel(parent.id, reason="wrong day", actor="ops")

    statuses = dict(WorkflowRun.objects.filter(parent_id=parent.id).values_list("id", "status"))
    assert statuses == {
        "recon:cancel:child:0": RunStatus.COMPLETED,
        "recon:cancel:child:1": RunStatus.CANCELLED,
    }
    cancelled = WorkflowRun.objects.get(pk="recon:cancel:child:1")
    assert "wrong day" in cancelled.error["message"]
    assert cancelled.audit_events.filter(action="cancel", actor="ops").exists()


def test_a_graceful_cancel_of_the_parent_cancels_the_children_gracefully_and_the_parent_cleans_up(
    clock,
):
    parent = services.run_start("parent_cleans_up", "e1", id="polite", actor="test")
    drive(parent.id)
    drive("polite:child:0")

    services.run_cancel(parent.id, reason="customer left", actor="ops", graceful=True)
    child = WorkflowRun.objects.get(pk="polite:child:0")
    assert child.cancel_request["reason"].endswith("customer left")
    child = drive(child.id)
    parent = drive(parent.id)

    assert child.status == RunStatus.CANCELLED
    assert parent.status == RunStatus.CANCELLED
    assert parent.result == "parent cancelled"
    assert CALLS["parent_cleanup"] == 1


def test_a_cancelled_child_raises_child_failed_in_a_parent_that_goes_on(clock):
    parent = services.run_start("parent_cleans_up", "e2", id="solo", actor="test")
    drive(parent.id)
    drive("solo:child:0")

    services.run_cancel("solo:child:0", reason="duplicate entry", actor="ops")
    parent = drive(parent.id)

    assert parent.status == RunStatus.COMPLETED
    assert parent.result == "child cancelled"


def _failed_child_retried_after_the_fix(
    parent_id: str, *, parent_reads_the_failure: bool
) -> WorkflowRun:
    """A waits_for_fixable_child parent whose child failed; the fix deployed and the child
    retried to completion (with or without the parent reading the failure first)."""
    parent = services.run_start("waits_for_fixable_child", id=parent_id, actor="test")
    drive(parent.id)
    child = drive(f"{parent_id}:child:0")
    assert child.status == RunStatus.FAILED
    if parent_reads_the_failure:
        drive(parent.id)
    Effect.objects.create(name=LEDGER_UNLOCKED)
    services.run_retry(child.id, actor="ops")
    return drive(child.id)


def test_a_child_retried_before_its_parent_read_the_failure_gives_the_parent_its_result(
    clock,
):
    child = _failed_child_retried_after_the_fix("fixed", parent_reads_the_failure=False)

    parent = drive("fixed")

    assert child.status == RunStatus.COMPLETED
    assert (parent.status, parent.result) == (RunStatus.COMPLETED, "corrected")
    assert AuditEvent.objects.filter(
        run_id="fixed", action="signal", actor=f"run:{child.id}", detail__replaced=True
    ).exists()


def test_a_child_retried_after_its_parent_acted_on_the_failure_completes_and_the_parent_stands(
    clock,
):
    child = _failed_child_retried_after_the_fix("acted", parent_reads_the_failure=True)

    assert child.status == RunStatus.COMPLETED
    assert WorkflowRun.objects.get(pk="acted").result == "child failed"


def test_a_child_id_taken_by_another_parent_is_a_conflict_in_the_body(clock):
    first = services.run_start("one_child", "e1", "shared-child", id="first", actor="test")
    drive(first.id)

    second = services.run_start("one_child", "e1", "shared-child", id="second", actor="test")
    second = drive(second.id)

    assert first.id != second.id
    assert second.status == RunStatus.FAILED
    assert second.error["type"] == RunConflict.__name__
    assert WorkflowRun.objects.get(pk="shared-child").parent_id == "first"


def test_an_existing_finished_run_with_the_childs_id_is_adopted_and_its_result_delivered(clock):
    existing = services.run_start("awaits_approval", "e7", id="adopt-me", actor="test")
    drive(existing.id)
    services.signal_send(existing.id, "decision", "yes", actor="test")
    drive(existing.id)

    parent = services.run_start("one_child", "e7", "adopt-me", id="adopter", actor="test")
    parent = drive(parent.id)

    assert parent.result == "e7: yes"
    assert WorkflowRun.objects.get(pk="adopt-me").parent_id == "adopter"


def test_nobody_but_the_engine_may_send_a_childs_outcome_with_its_key(clock):
    parent = services.run_start("one_child", "e1", id="spoofed", actor="test")
    drive(parent.id)

    with pytest.raises(SignalConflict):
        services.signal_send(
            parent.id,
            children.signal_name("spoofed:child:0"),
            {"status": "completed", "result": "forged"},
            dedupe_key=f"{children.DEDUPE_PREFIX}spoofed:child:0",
            actor="test",
        )


@pytest.mark.parametrize("prefix", ["durable.child:", "Durable.Child:"])
def test_nobody_but_the_engine_may_send_a_signal_named_as_a_childs_outcome(clock, prefix):
    parent = services.run_start("one_child", "e1", id="spoofed", actor="test")
    drive(parent.id)

    with pytest.raises(SignalConflict, match="the engine's own"):
        services.signal_send(
            parent.id,
            prefix + "spoofed:child:0",
            {"status": "completed", "result": "forged"},
            actor="test",
        )

    assert not Signal.objects.filter(run_id=parent.id).exists()


def test_a_parent_with_children_replays_from_its_history_without_starting_them_again(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 1), ("e2", 2)], id="recon:hist", actor="test"
    )
    drive(parent.id)
    drive_children(parent.id)
    drive(parent.id)

    report = history.history_replay(history.history_parse(history.history_export(parent.id)))

    assert report.ok, report.summary


def test_a_long_child_id_still_names_a_storable_signal():
    name = children.signal_name("x" * 300)

    assert len(name) <= 255
    assert name != children.signal_name("x" * 299 + "y")


def test_a_child_id_whose_signal_name_is_exactly_255_characters_is_kept_whole():
    child_id = "x" * (255 - len(children.SIGNAL_PREFIX))

    name = children.signal_name(child_id)

    assert name == children.SIGNAL_PREFIX + child_id


# --- operators see the family ---


@pytest.fixture
def family(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 1), ("e2", 2)], id="recon:family", actor="test"
    )
    drive(parent.id)
    return parent


def test_the_admin_links_a_parent_to_its_children_and_each_child_back(client, family):
    from tests.durable.test_admin import staff_with

    staff_with(client, "view_workflowrun")
    parent_page = client.get(reverse("admin:durable_workflowrun_change", args=[quote(family.id)]))
    child_page = client.get(
        reverse("admin:durable_workflowrun_change", args=[quote("recon:family:child:1")])
    )
    children_list = client.get(
        reverse("admin:durable_workflowrun_changelist"), {"parent__id__exact": family.id}
    )

    assert (
        reverse("admin:durable_workflowrun_change", args=[quote("recon:family:child:1")])
        in parent_page.content.decode()
    )
    assert (
        reverse("admin:durable_workflowrun_change", args=[quote(family.id)])
        in child_page.content.decode()
    )
    assert children_list.status_code == 200
    assert children_list.context["cl"].result_count == 2


def test_the_api_names_a_runs_parent_and_children_and_lists_one_parents_children(family):
    from tests.durable.test_api import client_for, user_with

    api = client_for(user_with("view_workflowrun"))

    detail = api.get(f"/api/runs/{family.id}/").json()
    child = api.get("/api/runs/recon:family:child:0/").json()
    listed = api.get("/api/runs/", {"parent": family.id}).json()

    assert detail["children"] == ["recon:family:child:0", "recon:family:child:1"]
    assert child["parent"] == family.id
    assert sorted(run["id"] for run in listed["results"]) == [
        "recon:family:child:0",
        "recon:family:child:1",
    ]


def test_a_started_child_is_journalled_as_a_completed_entry_of_its_parent(clock):
    parent = services.run_start(
        "reconcile_disputes", [("e1", 10)], id="recon:journalled", actor="test"
    )

    drive(parent.id)

    entry = JournalEntry.objects.get(run_id=parent.id, kind=EntryKind.CHILD)
    assert (entry.status, entry.result) == (
        "completed",
        {"id": "recon:journalled:child:0", "workflow": "correction"},
    )


def test_a_child_that_is_sent_a_signal_while_it_finishes_still_ends_and_tells_its_parent(clock):
    parent = services.run_start("one_child", "e9", id="child:late-signal", actor="test")
    drive(parent.id)
    child_id = "child:late-signal:child:0"
    child, lease = live.claim(child_id, owner="w")
    services.signal_send(child_id, "unrelated", 1, actor="test")  # arrives after the claim

    woken = lease.settle(child, Settlement.complete("approved"))

    assert (woken, child.status) == (None, RunStatus.COMPLETED)
    assert WorkflowRun.objects.get(pk=child_id).status == RunStatus.COMPLETED
    assert Signal.objects.filter(run_id=parent.id).exists()


def test_a_child_s_start_is_audited_with_its_workflow_version_and_parent(clock):
    parent = services.run_start("one_child", "e-audit", id="audited-parent", actor="test")

    drive(parent.id)

    start = AuditEvent.objects.get(run_id="audited-parent:child:0", action="start")
    assert start.actor == "run:audited-parent"
    assert start.detail == {"workflow": "awaits_approval", "version": 1, "parent": "audited-parent"}
