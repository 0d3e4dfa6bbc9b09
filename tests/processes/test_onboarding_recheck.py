"""A CNPJ written while a compliance case is open re-checks that case (issue 13, item 6), played
through the signed WhatsApp webhook and the company admin, driven in-process."""

import pytest
from django.contrib.auth import get_user_model

from approvals.errors import ApprovalHeld
from approvals.models import ApprovalAudit, ApprovalRequest
from approvals.services import approval_decide, approval_hold_override
from durable import days
from durable.models import RunStatus
from durable.testing import drive
from processes.onboarding.models import Account, Company
from processes.onboarding.workflow import DECISION_DEADLINE
from tests.approvals.test_segregation import change_company_in_the_admin
from tests.processes.conftest import ADDRESS, CNPJ, CONTRACT, SELFIE
from tests.processes.test_onboarding import decide, open_case
from tests.processes.test_onboarding_conversations import NO_CNPJ_HELLO, says

pytestmark = pytest.mark.django_db


@pytest.fixture
def high_risk_case(customer, clock):
    """A customer who sent every document but no CNPJ: asked once, never answered, so the
    case opened high risk (two approvals)."""
    customer(NO_CNPJ_HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    clock.advance(days(1))
    drive(run.id)
    case = open_case(run.id)
    assert (case.risk, case.summary["cnpj"]) == ("high", "not given")
    return case


def test_a_cnpj_written_during_the_review_re_checks_the_open_case_at_once(customer, high_risk_case):
    customer(says(f"desculpe, o CNPJ: {CNPJ}"))

    case = ApprovalRequest.objects.get(pk=high_risk_case.pk)
    assert (case.risk, case.required_approvals, case.summary["cnpj"]) == ("low", 1, CNPJ)
    assert CNPJ in case.title and case.summary["risk"].startswith("low")
    recheck = ApprovalAudit.objects.get(request=case, action="recheck")
    assert recheck.actor == f"whatsapp:{CONTRACT['from']}"
    assert recheck.detail["changed"]["cnpj"] == ["not given", CNPJ]
    assert sorted(case.candidate_groups.values_list("name", flat=True)) == [
        "kyc",
        "kyc-senior",
    ]  # routed anew
    assert recheck.detail["changed"]["candidate_groups"] == [["kyc-senior"], ["kyc", "kyc-senior"]]


def test_after_the_re_check_one_approval_opens_the_account(customer, high_risk_case, ana):
    customer(says(f"o CNPJ é {CNPJ}"))

    run = decide(ana, high_risk_case.run_id, "approve")

    assert run.status == RunStatus.COMPLETED
    assert Account.objects.get(company__cnpj=CNPJ).approved_by == "ana"


def test_an_approval_given_before_the_cnpj_came_no_longer_counts(
    customer, high_risk_case, ana, bruno, sofia
):
    approval_hold_override(high_risk_case.pk, actor=sofia, reason="confirmed by phone")
    approval_decide(high_risk_case.pk, actor=ana, outcome="approve")  # one of two

    customer(says(f"o CNPJ é {CNPJ}"))
    run = decide(bruno, high_risk_case.run_id, "approve")

    assert ApprovalAudit.objects.get(request=high_risk_case, action="recheck").detail[
        "voided_approvals"
    ] == ["ana"]
    assert run.status == RunStatus.COMPLETED
    assert Account.objects.get().approved_by == "bruno"


def test_a_cnpj_changed_in_the_admin_re_checks_the_open_case(in_review):
    case = open_case(in_review.id)
    assert case.risk == "low"
    company = Company.objects.get(customer_id=case.subject_id)
    operator = get_user_model().objects.create_user("ops", password="pw-unused-123")

    change_company_in_the_admin(operator, company, cnpj="11.222.333/0001-82")  # wrong check digits

    case.refresh_from_db()
    assert (case.risk, case.required_approvals, case.summary["cnpj"]) == (
        "high",
        2,
        "11.222.333/0001-82",
    )
    assert ApprovalAudit.objects.get(request=case, action="recheck").actor == "ops"


def test_a_case_that_shows_another_cnpj_than_the_company_has_cannot_be_approved(in_review, ana):
    case = open_case(in_review.id)
    Company.objects.filter(customer_id=case.subject_id).update(
        cnpj=""
    )  # written past every service

    with pytest.raises(
        ApprovalHeld, match=f"CNPJ is now not given, but this case was checked with {CNPJ}"
    ):
        approval_decide(case.pk, actor=ana, outcome="approve")

    assert drive(in_review.id).status == RunStatus.WAITING and not Account.objects.exists()


def test_an_escalated_case_opened_on_facts_read_before_the_change_is_re_checked_at_opening(
    high_risk_case, clock
):
    Company.objects.filter(customer_id=high_risk_case.subject_id).update(
        cnpj=CNPJ
    )  # no re-check ran

    clock.advance(DECISION_DEADLINE)
    drive(high_risk_case.run_id)

    escalated = open_case(high_risk_case.run_id)
    assert escalated.summary["escalation_level"] == 1
    assert (escalated.risk, escalated.summary["cnpj"], escalated.required_approvals) == (
        "low",
        CNPJ,
        1,
    )
    assert "(escalated, level 1)" in escalated.title


def test_the_reviewer_sees_why_approve_is_disabled_while_the_cnpj_is_not_checked(
    in_review, client, ana
):
    case = open_case(in_review.id)
    Company.objects.filter(customer_id=case.subject_id).update(cnpj="")
    client.force_login(ana)

    page = client.get(f"/approvals/{case.pk}/").content.decode()

    assert 'value="approve" class="primary" disabled' in page
    assert f"but this case was checked with {CNPJ}: it must be re-checked first" in page


def test_a_cnpj_written_during_review_is_asked_of_the_registry_and_an_inactive_one_stays_high_risk(
    customer, high_risk_case, settings
):
    settings.ONBOARDING_FAKE_REGISTRY = {
        "11222333000181": {"legal_name": "PADARIA BOA MASSA LTDA", "status": "BAIXADA"}
    }

    customer(says(f"o CNPJ é {CNPJ}"))

    case = ApprovalRequest.objects.get(pk=high_risk_case.pk)
    assert (case.risk, case.summary["cnpj"]) == ("high", CNPJ)
    assert "the CNPJ registry lists the company as BAIXADA, not ATIVA" in case.summary["risk"]
    assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]
    assert [f["result"] for f in case.summary["findings"] if f["check"] == "CNPJ registry"] == [
        "BAIXADA — PADARIA BOA MASSA LTDA"
    ]
