"""Routing: a case names the groups that may take it; nobody else sees, opens or takes it."""

import pytest
from django.urls import resolve, reverse

from approvals import selectors, services
from approvals import urls as approvals_urls
from approvals.errors import NotEligible
from approvals.models import ApprovalStatus
from durable import days
from processes.onboarding.models import Company
from processes.onboarding.services import onboarding_start
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db


def test_a_case_is_routed_to_the_groups_its_workflow_names(senior_case):
    assert services.case_group_names(senior_case) == ["kyc-senior"]
    assert senior_case.audit.get(action="create").detail["candidate_groups"] == ["kyc-senior"]


def test_a_junior_queue_lists_cases_routed_to_kyc_and_leaves_senior_cases_out(
    junior, junior_case, senior_case
):
    listed = list(selectors.approvals_open_for(junior))

    assert listed == [junior_case]


def test_a_senior_queue_lists_both_the_senior_case_and_the_one_routed_to_seniors_too(
    senior, junior_case, senior_case
):
    assert set(selectors.approvals_open_for(senior)) == {junior_case, senior_case}


def test_a_case_routed_to_nobody_in_particular_is_open_to_every_reviewer(junior, case):
    assert list(selectors.approvals_open_for(junior)) == [case]


def test_a_junior_opening_a_senior_case_gets_403(junior, senior_case):
    response = signed_in(junior).get(reverse("approval_case", args=[senior_case.pk]))

    assert response.status_code == 403
    assert senior_case.title not in response.content.decode()


def test_a_junior_claiming_a_senior_case_gets_403_and_the_case_stays_pending(junior, senior_case):
    response = signed_in(junior).post(reverse("approval_claim", args=[senior_case.pk]))

    senior_case.refresh_from_db()
    assert response.status_code == 403
    assert senior_case.status == ApprovalStatus.PENDING


def test_a_junior_deciding_a_senior_case_is_refused_naming_its_groups(junior, senior_case):
    with pytest.raises(NotEligible, match="routed to kyc-senior"):
        services.approval_decide(senior_case.pk, actor=junior, outcome="approve")


def test_a_supervisor_outside_the_groups_opens_the_case_but_cannot_claim_it(
    supervisor, senior_case
):
    page = (
        signed_in(supervisor).get(reverse("approval_case", args=[senior_case.pk])).content.decode()
    )

    assert 'data-testid="not-routed"' in page and 'data-testid="supervisor"' in page
    assert reverse("approval_claim", args=[senior_case.pk]) not in page


def test_a_junior_archive_leaves_out_closed_senior_cases(junior, senior, senior_case, supervisor):
    services.approval_cancel(senior_case.pk, actor="ops", reason="customer withdrew")

    junior_page = signed_in(junior).get(reverse("approval_archive")).content.decode()
    supervisor_page = signed_in(supervisor).get(reverse("approval_archive")).content.decode()

    assert f'data-case="{senior_case.pk}"' not in junior_page
    assert f'data-case="{senior_case.pk}"' in supervisor_page


def test_the_admin_shows_a_case_routing_read_only(admin_client, senior_case):
    page = admin_client.get(
        reverse("admin:approvals_approvalrequest_change", args=[senior_case.pk])
    ).content.decode()

    assert "kyc-senior" in page
    assert 'name="candidate_groups"' not in page


def test_a_supervisor_queue_lists_every_open_case_whatever_its_groups(
    supervisor, junior_case, senior_case
):
    page = signed_in(supervisor).get(reverse("approval_queue")).content.decode()

    assert f'data-case="{junior_case.pk}"' in page and f'data-case="{senior_case.pk}"' in page


# --- every URL naming a case decides who may see it before reading the request ---


def case_urls() -> list[str]:
    """The names of approvals/urls.py's routes that take a case id."""
    return [
        pattern.name for pattern in approvals_urls.urlpatterns if "<int:pk>" in str(pattern.pattern)
    ]


# Input each route refuses with a 400 or 409 when someone who may see the case sends it.
BAD_INPUT = {
    "outcome": "maybe",
    "reason": "",
    "follow_up_at": "soon",
    "due_at": "9999-12-31T23:59",
    "to": "nobody",
    "case": "stale",
    "run": "stale",
}
COMPANY, CNPJ = "Padaria Boa Massa", "11.222.333/0001-81"


@pytest.fixture
def senior_onboarding_case(db, clock, senior):
    """A company's onboarding case routed to kyc-senior only, claimed by a senior reviewer."""
    company = Company.objects.create(name=COMPANY, cnpj=CNPJ, wa_id="5511988887777")
    run = onboarding_start(company, actor="whatsapp:5511988887777")
    case = services.approval_request_create(
        run_id=run.id,
        signal_name="compliance_decision",
        idempotency_key=f"{run.id}:case",
        title=f"Open a business account for {company.name}",
        subject_type="company",
        subject_id=company.customer_id,
        risk="high",
        candidate_groups=["kyc-senior"],
        due_at=clock.now() + days(3),
        actor="test",
    )
    return services.approval_claim(case.pk, actor=senior)


def test_the_senior_case_page_shows_the_company_and_its_cnpj(senior, senior_onboarding_case):
    page = (
        signed_in(senior)
        .get(reverse("approval_case", args=[senior_onboarding_case.pk]))
        .content.decode()
    )

    assert COMPANY in page and CNPJ in page


@pytest.mark.parametrize("url", case_urls())
def test_bad_input_from_a_reviewer_outside_the_cases_groups_is_a_403_that_shows_nothing_of_the_case(
    junior, senior_onboarding_case, url
):
    view = resolve(reverse(url, args=[senior_onboarding_case.pk])).func.view_class
    method = "post" if hasattr(view, "post") else "get"

    response = getattr(signed_in(junior), method)(
        reverse(url, args=[senior_onboarding_case.pk]), BAD_INPUT
    )

    page = response.content.decode()
    assert response.status_code == 403
    assert COMPANY not in page and CNPJ not in page and "11222333000181" not in page
