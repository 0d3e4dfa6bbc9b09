"""Every transition and rule of an approval request, through the services."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django_fsm import ConcurrentTransition

from approvals import services
from approvals.errors import (
    AlreadyClosed,
    ClaimedByOther,
    FourEyes,
    InvalidOutcome,
    NotAllowed,
    ReasonRequired,
    RunEnded,
)
from approvals.models import AppendOnly, ApprovalAudit, ApprovalRequest, ApprovalStatus
from approvals.receivers import cancel_cases_of_cancelled_run
from durable import SignalConflict
from durable import services as durable_services
from durable.hooks import run_cancelled
from durable.models import Signal
from durable.testing import drive
from tests.approvals.conftest import make_user, start_case

pytestmark = pytest.mark.django_db

META = services.RequestMeta(ip="10.1.2.3", user_agent="pytest-browser", path="/approvals/1/decide/")


def signals_of(case):
    return list(Signal.objects.filter(run_id=case.run_id, name=case.signal_name))


def test_request_create_is_idempotent_on_its_key(case):
    again = services.approval_request_create(
        run_id=case.run_id,
        signal_name=case.signal_name,
        idempotency_key=case.idempotency_key,
        title="another title",
        due_at=case.due_at,
        actor="test",
    )

    assert again.pk == case.pk
    assert ApprovalRequest.objects.count() == 1


def test_a_new_case_is_pending_with_one_approval_required_and_a_three_day_deadline(case, clock):
    assert case.status == ApprovalStatus.PENDING
    assert case.required_approvals == 1
    assert case.due_at == clock.now() + timedelta(days=3)
    assert (case.subject_type, case.subject_id, case.signal_name) == (
        "company",
        "acme",
        "compliance_decision",
    )
    assert case.audit.get().action == "create"


def test_high_risk_needs_two_approvals(high_risk_case):
    assert high_risk_case.required_approvals == 2


def test_claim_assigns_the_case_and_is_audited_with_the_request_metadata(case, ana):
    services.approval_claim(case.pk, actor=ana, meta=META)

    case.refresh_from_db()
    assert (case.status, case.assignee) == (ApprovalStatus.CLAIMED, ana)
    row = case.audit.get(action="claim")
    assert (row.actor, row.from_status, row.to_status, row.ip, row.user_agent, row.path) == (
        "ana",
        "pending",
        "claimed",
        "10.1.2.3",
        "pytest-browser",
        "/approvals/1/decide/",
    )


def test_claiming_your_own_claim_again_changes_nothing(case, ana):
    services.approval_claim(case.pk, actor=ana)
    services.approval_claim(case.pk, actor=ana)

    assert case.audit.filter(action="claim").count() == 1


def test_a_case_claimed_by_someone_else_cannot_be_claimed_and_names_the_holder(case, ana, bruno):
    services.approval_claim(case.pk, actor=ana)

    with pytest.raises(ClaimedByOther, match="claimed by ana"):
        services.approval_claim(case.pk, actor=bruno)


def test_release_puts_the_case_back_in_the_queue(case, ana):
    services.approval_claim(case.pk, actor=ana)

    services.approval_release(case.pk, actor=ana)

    case.refresh_from_db()
    assert (case.status, case.assignee) == (ApprovalStatus.PENDING, None)


def test_only_the_holder_can_release_a_claim(case, ana, bruno):
    services.approval_claim(case.pk, actor=ana)

    with pytest.raises(ClaimedByOther, match="only they can release it"):
        services.approval_release(case.pk, actor=bruno)


def test_approve_closes_the_case_and_sends_exactly_one_signal_with_the_decision(case, ana):
    services.approval_decide(case.pk, actor=ana, outcome="approve", reason="all good", meta=META)

    case.refresh_from_db()
    assert (case.status, case.outcome, case.closed_by) == (
        ApprovalStatus.APPROVED,
        "approve",
        "ana",
    )
    [signal] = signals_of(case)
    assert signal.dedupe_key == f"approval:{case.pk}"
    assert signal.payload | {"decided_at": None} == {
        "request_id": case.pk,
        "approved": True,
        "outcome": "approve",
        "by": ["ana"],
        "reason": "all good",
        "customer_message": "",
        "decided_at": None,
    }
    assert case.audit.get(action="approve").ip == "10.1.2.3"


def test_a_hand_sent_signal_with_the_cases_key_is_refused_so_the_decision_still_resumes_the_run(
    case, ana
):
    with pytest.raises(SignalConflict, match="reserved by 'approvals'"):
        durable_services.signal_send(
            case.run_id,
            case.signal_name,
            {"approved": True},
            dedupe_key=f"approval:{case.pk}",
            actor="operator",
        )

    services.approval_decide(case.pk, actor=ana, outcome="approve")

    [signal] = signals_of(case)
    assert (signal.dedupe_key, signal.payload["by"]) == (f"approval:{case.pk}", ["ana"])


def test_a_claimed_case_can_be_decided_by_its_holder(case, ana):
    services.approval_claim(case.pk, actor=ana)

    services.approval_decide(case.pk, actor=ana, outcome="reject", reason="fake documents")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.REJECTED


def test_a_case_claimed_by_someone_else_cannot_be_decided(case, ana, bruno):
    services.approval_claim(case.pk, actor=ana)

    with pytest.raises(ClaimedByOther):
        services.approval_decide(case.pk, actor=bruno, outcome="approve")
    assert signals_of(case) == []


@pytest.mark.parametrize("outcome", ["reject", "more_documents"])
def test_reject_and_more_documents_need_a_reason_and_write_nothing_without_one(case, ana, outcome):
    with pytest.raises(ReasonRequired):
        services.approval_decide(case.pk, actor=ana, outcome=outcome, reason="   ")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING
    assert (case.decisions.count(), signals_of(case)) == (0, [])


def test_an_unknown_outcome_is_refused(case, ana):
    with pytest.raises(InvalidOutcome):
        services.approval_decide(case.pk, actor=ana, outcome="maybe")


def test_more_documents_sends_the_case_back_with_its_reason(case, ana):
    services.approval_decide(
        case.pk, actor=ana, outcome="more_documents", reason="selfie is blurred"
    )

    case.refresh_from_db()
    assert case.status == ApprovalStatus.RETURNED
    [signal] = signals_of(case)
    assert (signal.payload["approved"], signal.payload["outcome"], signal.payload["reason"]) == (
        False,
        "more_documents",
        "selfie is blurred",
    )


def test_a_decided_case_is_read_only_and_the_late_reviewer_learns_who_decided(case, ana, bruno):
    services.approval_decide(case.pk, actor=ana, outcome="approve")

    with pytest.raises(AlreadyClosed, match="already approved by ana"):
        services.approval_decide(case.pk, actor=bruno, outcome="reject", reason="too late")
    with pytest.raises(AlreadyClosed):
        services.approval_claim(case.pk, actor=bruno)
    assert len(signals_of(case)) == 1


def test_first_of_two_approvals_sends_no_signal_and_waits_for_another_reviewer(high_risk_case, ana):
    services.approval_claim(high_risk_case.pk, actor=ana)

    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")

    high_risk_case.refresh_from_db()
    assert (high_risk_case.status, high_risk_case.assignee) == (ApprovalStatus.PENDING, None)
    assert signals_of(high_risk_case) == []


def test_the_same_reviewer_cannot_give_both_approvals(high_risk_case, ana):
    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")

    with pytest.raises(FourEyes):
        services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")
    with pytest.raises(FourEyes):
        services.approval_claim(high_risk_case.pk, actor=ana)
    assert signals_of(high_risk_case) == []


def test_two_different_reviewers_approve_a_high_risk_case(high_risk_case, ana, bruno):
    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")
    services.approval_decide(high_risk_case.pk, actor=bruno, outcome="approve")

    high_risk_case.refresh_from_db()
    assert (high_risk_case.status, high_risk_case.closed_by) == (
        ApprovalStatus.APPROVED,
        "ana, bruno",
    )
    [signal] = signals_of(high_risk_case)
    assert signal.payload["by"] == ["ana", "bruno"]


def test_a_second_reviewer_may_reject_after_a_first_approval(high_risk_case, ana, bruno):
    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")
    services.approval_decide(
        high_risk_case.pk, actor=bruno, outcome="reject", reason="sanctions hit"
    )

    high_risk_case.refresh_from_db()
    assert high_risk_case.status == ApprovalStatus.REJECTED
    [signal] = signals_of(high_risk_case)
    assert (signal.payload["approved"], signal.payload["by"]) == (False, ["bruno"])


def test_users_outside_compliance_can_neither_claim_nor_decide(case, outsider):
    with pytest.raises(NotAllowed):
        services.approval_claim(case.pk, actor=outsider)
    with pytest.raises(NotAllowed):
        services.approval_decide(case.pk, actor=outsider, outcome="approve")
    assert signals_of(case) == []


def test_expire_closes_an_open_case_and_a_late_decision_is_refused(case, ana):
    services.approval_expire(case.pk, actor="test")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.EXPIRED
    with pytest.raises(AlreadyClosed, match="expired"):
        services.approval_decide(case.pk, actor=ana, outcome="approve")


def test_expire_leaves_a_decided_case_as_it_is(case, ana):
    services.approval_decide(case.pk, actor=ana, outcome="approve")

    assert services.approval_expire(case.pk, actor="test").status == ApprovalStatus.APPROVED


def test_cancel_closes_an_open_case_without_a_signal(case, ana):
    services.approval_cancel(case.pk, actor="admin:root", reason="customer withdrew")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.CANCELLED
    assert signals_of(case) == []
    with pytest.raises(AlreadyClosed, match="cancelled by admin:root"):
        services.approval_decide(case.pk, actor=ana, outcome="approve")


def test_cancelling_the_run_cancels_its_open_case(case, ana):
    durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="ops")

    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.CANCELLED, "ops")
    assert case.audit.filter(
        action="cancel", reason="the process was cancelled: customer withdrew"
    ).exists()
    with pytest.raises(AlreadyClosed):
        services.approval_decide(case.pk, actor=ana, outcome="approve")


@pytest.mark.parametrize(
    "outcome, reason, decided",
    [("approve", "", "approved"), ("reject", "documents do not match", "rejected")],
)
def test_a_decision_the_cancelled_run_never_acted_on_is_superseded_with_its_votes_kept(
    case, ana, outcome, reason, decided
):
    services.approval_decide(
        case.pk, actor=ana, outcome=outcome, reason=reason
    )  # the run has not read it

    durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="customer")

    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.SUPERSEDED, "customer")
    assert case.decisions.get().reviewer == ana  # the vote stays, as it was given
    row = case.audit.get(action="supersede")
    assert (row.from_status, row.to_status, row.reason) == (
        decided,
        "superseded",
        "the process was cancelled: customer withdrew",
    )
    with pytest.raises(AlreadyClosed, match="before it acted on the decision"):
        services.approval_decide(case.pk, actor=ana, outcome="approve")


def test_a_decision_the_run_read_and_acted_on_stays_decided_when_the_run_is_cancelled_after(
    db, clock, ana
):
    case = start_case("initech", workflow="approval_acted_then_waits")
    services.approval_decide(case.pk, actor=ana, outcome="approve")
    drive(case.run_id)  # read it, opened the account

    durable_services.run_cancel(case.run_id, reason="operator stopped it", actor="ops")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.APPROVED


def test_a_case_sent_back_for_documents_stays_returned_when_the_run_is_cancelled_later(case, ana):
    services.approval_decide(
        case.pk, actor=ana, outcome="more_documents", reason="send the contract"
    )

    durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="customer")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.RETURNED


def test_superseded_cases_are_in_the_archive_apart_and_not_in_the_time_to_decision(
    case, ana, clock
):
    from approvals.figures import weekly_time_to_decision
    from approvals.selectors import approvals_archive

    services.approval_decide(case.pk, actor=ana, outcome="approve")
    durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="customer")

    assert list(approvals_archive(status="superseded")) == [case]
    assert list(approvals_archive(status="approved")) == []
    assert sum(week.decided for week in weekly_time_to_decision(clock.now())) == 0


def test_a_decision_for_a_run_that_ended_is_refused_and_writes_nothing(case, ana):
    # A run can also end without a cancel (it failed); keep the case open to show that.
    run_cancelled.disconnect(dispatch_uid="approvals.cancel_cases_of_cancelled_run")
    try:
        durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="test")
    finally:
        run_cancelled.connect(
            cancel_cases_of_cancelled_run, dispatch_uid="approvals.cancel_cases_of_cancelled_run"
        )

    with pytest.raises(RunEnded):
        services.approval_decide(case.pk, actor=ana, outcome="approve")

    case.refresh_from_db()
    assert (case.status, case.decisions.count(), case.audit.count()) == (
        ApprovalStatus.PENDING,
        0,
        1,
    )


def test_a_stale_copy_of_a_case_cannot_overwrite_a_decision(case, ana):
    stale = ApprovalRequest.objects.get(pk=case.pk)
    services.approval_decide(case.pk, actor=ana, outcome="approve")

    stale.reject()
    with pytest.raises(ConcurrentTransition):
        stale.save()


def test_audit_rows_are_append_only(case):
    row = case.audit.get()

    with pytest.raises(AppendOnly):
        row.save()
    with pytest.raises(AppendOnly):
        row.delete()
    assert ApprovalAudit.objects.filter(pk=row.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_once_make_one_decision_and_one_signal():
    case = start_case("race")
    reviewers = [make_user("ana", reviewer=True), make_user("bruno", reviewer=True)]
    barrier, outcomes = threading.Barrier(2), {}

    def decide(user):
        barrier.wait()
        try:
            services.approval_decide(case.pk, actor=user, outcome="approve")
            outcomes[user.username] = "won"
        except AlreadyClosed as exc:
            outcomes[user.username] = str(exc)
        finally:
            connection.close()  # this thread's own connection, so the test database can be dropped

    threads = [threading.Thread(target=decide, args=(user,)) for user in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    [winner] = [name for name, outcome in outcomes.items() if outcome == "won"]
    [loser_message] = [outcome for outcome in outcomes.values() if outcome != "won"]
    assert f"already approved by {winner}" in loser_message
    assert Signal.objects.filter(run_id=case.run_id).count() == 1
    assert ApprovalRequest.objects.get(pk=case.pk).decisions.count() == 1


def test_the_dashboard_counts_votes_on_superseded_cases_apart_and_metrics_keep_each_vote(case, ana):
    from approvals.figures import decisions_per_reviewer

    services.approval_decide(case.pk, actor=ana, outcome="approve")
    durable_services.run_cancel(case.run_id, reason="customer withdrew", actor="customer")

    (tally,) = decisions_per_reviewer()
    assert (tally.by_outcome["approve"], tally.by_outcome["superseded"]) == (0, 1)
    (vote,) = decisions_per_reviewer(superseded_apart=False)
    assert vote.by_outcome["approve"] == 1 and "superseded" not in vote.by_outcome
