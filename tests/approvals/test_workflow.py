"""request_approval inside real runs: the decision resumes the run, a timeout returns None."""

from datetime import datetime

import pytest

from approvals import services
from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.workflow import Decision, Expiry, expire_approval_request
from durable import days
from durable import services as durable_services
from durable.models import RunStatus
from durable.testing import drive
from tests.approvals.conftest import start_case
from tests.durable.workflows import CALLS

pytestmark = pytest.mark.django_db


def test_an_approval_resumes_the_run_with_a_typed_decision(case, ana):
    assert case.run.waiting_for == "signal:compliance_decision"

    services.approval_decide(case.pk, actor=ana, outcome="approve", reason="fine")
    run = drive(case.run_id)

    assert run.status == RunStatus.COMPLETED
    assert run.result["outcome"] == "approve"
    assert run.result["by"] == ["ana"]
    assert run.result["typed"] is True
    assert datetime.fromisoformat(run.result["decided_at"])
    assert CALLS["open_account"] == 1


def test_a_rejection_resumes_the_run_without_opening_the_account(case, ana):
    services.approval_decide(case.pk, actor=ana, outcome="reject", reason="fake ids")
    run = drive(case.run_id)

    assert (run.status, run.result["outcome"], run.result["reason"]) == (
        RunStatus.COMPLETED,
        "reject",
        "fake ids",
    )
    assert CALLS["open_account"] == 0


def test_a_hand_sent_decision_signal_approves_nothing(case, ana):
    durable_services.signal_send(
        case.run_id,
        "compliance_decision",
        {"approved": True, "outcome": "approve", "by": ["mallory"]},
        actor="ops",
    )
    run = drive(case.run_id)
    case.refresh_from_db()
    assert (run.status, case.status) == (RunStatus.WAITING, ApprovalStatus.PENDING)
    assert CALLS["open_account"] == 0

    services.approval_decide(case.pk, actor=ana, outcome="approve", reason="checked")
    run = drive(case.run_id)

    assert (run.status, run.result["by"]) == (RunStatus.COMPLETED, ["ana"])
    assert CALLS["open_account"] == 1


def test_nobody_deciding_in_three_days_returns_none_and_expires_the_case(case, clock):
    clock.advance(days(3))
    run = drive(case.run_id)

    case.refresh_from_db()
    assert run.result == {"outcome": "expired"}
    assert case.status == ApprovalStatus.EXPIRED
    assert CALLS["escalate"] == 1


def test_replaying_a_finished_run_opens_no_second_case(case, ana):
    services.approval_decide(case.pk, actor=ana, outcome="approve")
    drive(case.run_id)

    drive(case.run_id)

    assert ApprovalRequest.objects.filter(run_id=case.run_id).count() == 1


def test_more_documents_sends_the_process_back_and_opens_a_fresh_case(db, clock, ana):
    first = start_case("loop", workflow="approval_loop_test")
    services.approval_decide(
        first.pk, actor=ana, outcome="more_documents", reason="no address proof"
    )
    drive(first.run_id)
    durable_services.signal_send(
        first.run_id, "documents_received", {"files": ["address.pdf"]}, actor="test"
    )
    drive(first.run_id)
    second = ApprovalRequest.objects.filter(run_id=first.run_id).exclude(pk=first.pk).get()

    services.approval_decide(second.pk, actor=ana, outcome="approve")
    run = drive(first.run_id)

    assert run.result == ["more_documents", "approve"]
    assert second.signal_name == first.signal_name


def test_a_decision_that_beat_the_deadline_step_still_counts(case, ana):
    services.approval_decide(case.pk, actor=ana, outcome="approve", reason="just in time")

    expiry = expire_approval_request(case.pk)

    assert expiry == Expiry(expired=False, decision=expiry.decision)
    assert isinstance(expiry.decision, Decision)
    assert (expiry.decision.approved, expiry.decision.by) == (True, ["ana"])
    case.refresh_from_db()
    assert case.status == ApprovalStatus.APPROVED
