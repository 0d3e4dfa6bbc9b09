"""Who may decide a case: members of compliance only (superuser or not), and never someone
who acted on the case's process (segregation of duties)."""

import io

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from approvals import services
from approvals.errors import NotAllowed, SegregationOfDuties
from approvals.models import ApprovalDecision, ApprovalRequest, ApprovalStatus
from durable import services as durable_services
from durable.models import RunStatus, Signal
from durable.testing import drive
from processes.onboarding.models import Company
from processes.onboarding.services import onboarding_start
from tests.approvals.conftest import PASSWORD, start_case

pytestmark = pytest.mark.django_db


def decision_signals(case):
    return list(Signal.objects.filter(run_id=case.run_id, name=case.signal_name))


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator(db):
    """The demo's operator: a superuser, not in the compliance group."""
    return get_user_model().objects.create_superuser("ops", password=PASSWORD)


def act_on_run(action: str, case, username: str) -> ApprovalRequest:
    """Take ``action`` on the case's run as ``username``, the way the admin and the API do."""
    if action == "wake":
        durable_services.run_wake(case.run_id, actor=username)
    elif action == "signal":
        durable_services.signal_send(
            case.run_id, "note", {"text": "checked by phone"}, actor=username
        )
    elif action == "cancel":
        durable_services.run_cancel(case.run_id, reason="duplicate?", actor=username, graceful=True)
    return case


def case_retried_by(username: str) -> ApprovalRequest:
    """A run that failed on its first step, retried by ``username``, then opened its case."""
    run = durable_services.run_start(
        "approval_after_retry_test", "initech", id="approval_after_retry_test:initech", actor="test"
    )
    assert drive(run.id).status == RunStatus.FAILED
    durable_services.run_retry(run.id, actor=username)
    drive(run.id)
    return ApprovalRequest.objects.get(run_id=run.id)


def test_a_superuser_outside_compliance_can_neither_claim_nor_decide(case, operator):
    with pytest.raises(NotAllowed, match="compliance group"):
        services.approval_claim(case.pk, actor=operator)
    with pytest.raises(NotAllowed, match="compliance group"):
        services.approval_decide(case.pk, actor=operator, outcome="approve")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING and case.assignee is None
    assert decision_signals(case) == []


@pytest.mark.parametrize("name", ["approval_case", "approval_claim", "approval_decide"])
def test_a_superuser_outside_compliance_gets_403_from_the_reviewer_pages(case, operator, name):
    client = signed_in(operator)

    response = (
        client.get(reverse(name, args=[case.pk]))
        if name == "approval_case"
        else client.post(reverse(name, args=[case.pk]), {"outcome": "approve"})
    )

    assert response.status_code == 403
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING and case.assignee is None


def test_a_superuser_in_compliance_is_a_reviewer_like_any_other(case):
    lead = get_user_model().objects.create_superuser("lead", password=PASSWORD)
    lead.groups.add(services.compliance_group_ensure())

    services.approval_decide(case.pk, actor=lead, outcome="approve")

    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.APPROVED, "lead")


@pytest.mark.parametrize(
    "action, verb", [("wake", "woke"), ("signal", "signalled"), ("cancel", "cancelled")]
)
def test_a_reviewer_who_acted_on_the_run_cannot_approve_its_case_and_is_told_why(
    case, ana, clock, action, verb
):
    act_on_run(action, case, "ana")

    with pytest.raises(SegregationOfDuties) as refusal:
        services.approval_decide(case.pk, actor=ana, outcome="approve")

    assert str(refusal.value) == (
        f"You {verb} this case's run at {clock.now():%Y-%m-%d %H:%M} UTC; "
        f"case #{case.pk} needs a reviewer who did not act on it."
    )
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING
    assert not ApprovalDecision.objects.filter(request=case).exists()
    assert decision_signals(case) == []


def test_a_reviewer_who_retried_the_run_cannot_approve_its_case(db, clock, ana):
    case = case_retried_by("ana")

    with pytest.raises(SegregationOfDuties, match="You retried this case's run at"):
        services.approval_decide(case.pk, actor=ana, outcome="approve")

    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING


def test_the_refusal_names_the_latest_action_and_counts_the_others(case, ana, clock):
    durable_services.signal_send(case.run_id, "note", {"text": "first"}, actor="ana")
    clock.advance(3600)
    durable_services.run_wake(case.run_id, actor="ana")

    with pytest.raises(SegregationOfDuties) as refusal:
        services.approval_decide(case.pk, actor=ana, outcome="approve")

    assert (
        f"You woke this case's run at {clock.now():%Y-%m-%d %H:%M} UTC (and 1 other action)"
        in str(refusal.value)
    )


def test_another_reviewer_approves_a_case_whose_run_a_colleague_woke(case, ana, bruno):
    durable_services.run_wake(case.run_id, actor="ana")

    services.approval_decide(case.pk, actor=bruno, outcome="approve")

    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.APPROVED, "bruno")


@pytest.mark.parametrize("outcome", ["reject", "more_documents"])
def test_a_reviewer_who_acted_on_the_run_may_not_reject_it_or_send_it_back_either(
    case, ana, outcome
):
    durable_services.run_wake(case.run_id, actor="ana")

    with pytest.raises(SegregationOfDuties, match="You woke this case's run"):
        services.approval_decide(
            case.pk, actor=ana, outcome=outcome, reason="the address does not exist"
        )

    case.refresh_from_db()
    assert (case.status, case.decisions.count()) == (ApprovalStatus.PENDING, 0)


def test_deciding_an_earlier_case_of_the_same_run_is_no_conflict(db, clock, ana):
    first = start_case("loop", workflow="approval_loop_test")
    services.approval_decide(
        first.pk, actor=ana, outcome="more_documents", reason="the contract is unsigned"
    )
    drive(first.run_id)
    durable_services.signal_send(
        first.run_id,
        "documents_received",
        {"files": ["contract.pdf"]},
        actor="whatsapp:5511999990000",
    )
    drive(first.run_id)
    second = ApprovalRequest.objects.filter(run_id=first.run_id).exclude(pk=first.pk).get()

    services.approval_decide(second.pk, actor=ana, outcome="approve")

    second.refresh_from_db()
    assert second.status == ApprovalStatus.APPROVED


def test_an_operator_action_does_not_stop_two_distinct_reviewers_completing_a_high_risk_case(
    high_risk_case, operator, ana, bruno
):
    durable_services.run_wake(high_risk_case.run_id, actor=operator.get_username())

    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")
    services.approval_decide(high_risk_case.pk, actor=bruno, outcome="approve")

    high_risk_case.refresh_from_db()
    assert high_risk_case.status == ApprovalStatus.APPROVED
    assert [signal.payload["by"] for signal in decision_signals(high_risk_case)] == [
        ["ana", "bruno"]
    ]


def test_one_reviewer_who_acted_leaves_the_second_approval_of_a_high_risk_case_to_someone_else(
    high_risk_case, ana, bruno
):
    services.approval_decide(high_risk_case.pk, actor=ana, outcome="approve")
    durable_services.run_wake(high_risk_case.run_id, actor="bruno")

    with pytest.raises(SegregationOfDuties, match="You woke this case's run"):
        services.approval_decide(high_risk_case.pk, actor=bruno, outcome="approve")

    high_risk_case.refresh_from_db()
    assert high_risk_case.status == ApprovalStatus.PENDING
    assert decision_signals(high_risk_case) == []


# --- changing the company in the admin ---


@pytest.fixture
def onboarding_case(db, clock):
    """An onboarding run and its case about a company (opened directly: only the link matters)."""
    company = Company.objects.create(
        name="Padaria Boa Massa", cnpj="11.222.333/0001-81", wa_id="5511988887777"
    )
    run = onboarding_start(company, actor="whatsapp:5511988887777")
    return services.approval_request_create(
        run_id=run.id,
        signal_name="compliance_decision",
        idempotency_key=f"{run.id}:case",
        title=f"Open a business account for {company.name}",
        subject_type="company",
        subject_id=company.customer_id,
        due_at=clock.now(),
        actor="test",
    )


def change_company_in_the_admin(user, company: Company, **changes) -> None:
    """POST the company's change form as ``user`` (staff, allowed to change companies)."""
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="processes", codename__in=["view_company", "change_company"]
        )
    )
    fields = {
        "name": company.name,
        "cnpj": company.cnpj,
        "wa_id": company.wa_id or "",
        "user_id": company.user_id or "",
        "status": company.status,
        "status_reason": company.status_reason,
        "escalations": company.escalations,
        **changes,
    }
    response = signed_in(user).post(
        reverse("admin:processes_company_change", args=[company.pk]), fields
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_reviewer_who_changed_the_company_in_the_admin_cannot_approve_its_case(
    onboarding_case, ana
):
    company = Company.objects.get(customer_id=onboarding_case.subject_id)
    change_company_in_the_admin(ana, company, name="Padaria Boa Massa Ltda")

    with pytest.raises(
        SegregationOfDuties, match=r"You changed company Padaria Boa Massa Ltda in the admin at "
    ):
        services.approval_decide(onboarding_case.pk, actor=ana, outcome="approve")

    assert LogEntry.objects.filter(user=ana, action_flag=CHANGE, object_id=str(company.pk)).exists()
    onboarding_case.refresh_from_db()
    assert onboarding_case.status == ApprovalStatus.PENDING


def test_a_change_to_another_company_is_no_conflict(onboarding_case, ana):
    other = Company.objects.create(name="Outra", wa_id="5511900000000")
    change_company_in_the_admin(ana, other, name="Outra Ltda")

    services.approval_decide(onboarding_case.pk, actor=ana, outcome="approve")

    onboarding_case.refresh_from_db()
    assert onboarding_case.status == ApprovalStatus.APPROVED


# --- the reviewer UI ---


def test_the_case_page_of_a_refused_reviewer_shows_why_and_disables_approve(case, ana):
    durable_services.run_wake(case.run_id, actor="ana")

    page = signed_in(ana).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert "You woke this case&#x27;s run at" in page and 'data-testid="approve-refused"' in page
    assert 'value="approve" class="primary" disabled' in page


def test_approving_anyway_gets_403_with_the_reason_and_changes_nothing(case, ana):
    durable_services.signal_send(case.run_id, "note", {"text": "called the customer"}, actor="ana")

    response = signed_in(ana).post(
        reverse("approval_decide", args=[case.pk]), {"outcome": "approve"}
    )

    assert response.status_code == 403
    assert 'data-testid="error"' in response.content.decode()
    assert "You signalled this case&#x27;s run at" in response.content.decode()
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING
    assert decision_signals(case) == []


def test_a_reviewer_with_no_earlier_action_sees_approve_enabled(case, ana):
    page = signed_in(ana).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert 'data-testid="approve-refused"' not in page
    assert 'value="approve" class="primary">' in page


def test_the_demo_operator_is_no_reviewer(db):
    call_command("seed_approvals_demo", stdout=io.StringIO())
    ops = get_user_model().objects.get(username="ops")

    assert ops.is_staff and not ops.is_superuser and not services.is_reviewer(ops)
    assert services.is_reviewer(get_user_model().objects.get(username="ana"))
