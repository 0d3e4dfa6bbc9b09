"""Routing: a case names the groups that may take it; nobody else sees, opens or takes it."""
import pytest
from django.urls import reverse

from approvals import selectors, services
from approvals.errors import NotEligible
from approvals.models import ApprovalStatus
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db


def test_a_case_is_routed_to_the_groups_its_workflow_names(senior_case):
    assert services.case_group_names(senior_case) == ["kyc-senior"]
    assert senior_case.audit.get(action="create").detail["candidate_groups"] == ["kyc-senior"]


def test_a_junior_queue_lists_cases_routed_to_kyc_and_leaves_senior_cases_out(junior, junior_case, senior_case):
    listed = list(selectors.approvals_open_for(junior))

    assert listed == [junior_case]


def test_a_senior_queue_lists_both_the_senior_case_and_the_one_routed_to_seniors_too(senior, junior_case,
                                                                                        senior_case):
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


def test_a_supervisor_outside_the_groups_opens_the_case_but_cannot_claim_it(supervisor, senior_case):
    page = signed_in(supervisor).get(reverse("approval_case", args=[senior_case.pk])).content.decode()

    assert 'data-testid="not-routed"' in page and 'data-testid="supervisor"' in page
    assert reverse("approval_claim", args=[senior_case.pk]) not in page


def test_a_junior_archive_leaves_out_closed_senior_cases(junior, senior, senior_case, supervisor):
    services.approval_cancel(senior_case.pk, actor="ops", reason="customer withdrew")

    junior_page = signed_in(junior).get(reverse("approval_archive")).content.decode()
    supervisor_page = signed_in(supervisor).get(reverse("approval_archive")).content.decode()

    assert f'data-case="{senior_case.pk}"' not in junior_page
    assert f'data-case="{senior_case.pk}"' in supervisor_page


def test_the_admin_shows_a_case_routing_read_only(admin_client, senior_case):
    page = admin_client.get(reverse("admin:approvals_approvalrequest_change", args=[senior_case.pk])).content.decode()

    assert "kyc-senior" in page
    assert 'name="candidate_groups"' not in page


def test_a_supervisor_queue_lists_every_open_case_whatever_its_groups(supervisor, junior_case, senior_case):
    page = signed_in(supervisor).get(reverse("approval_queue")).content.decode()

    assert f'data-case="{junior_case.pk}"' in page and f'data-case="{senior_case.pk}"' in page


BAD_INPUT_ON_A_CASE = {
    "an unknown outcome": ("approval_decide", {"outcome": "maybe"}),
    "a reject without a reason": ("approval_decide", {"outcome": "reject", "reason": ""}),
    "a follow-up with a date that is none": ("approval_follow_up", {"follow_up_at": "soon", "reason": "wait"}),
    "a release of someone else's claim": ("approval_release", {}),
}


@pytest.mark.parametrize("url, form", BAD_INPUT_ON_A_CASE.values(), ids=BAD_INPUT_ON_A_CASE.keys())
def test_bad_input_from_a_reviewer_outside_the_cases_groups_is_a_403_that_shows_nothing_of_the_case(
        junior, senior, senior_case, url, form):
    services.approval_claim(senior_case.pk, actor=senior)

    response = signed_in(junior).post(reverse(url, args=[senior_case.pk]), form)

    assert response.status_code == 403
    assert senior_case.title not in response.content.decode()
    assert "globex" not in response.content.decode().lower()
