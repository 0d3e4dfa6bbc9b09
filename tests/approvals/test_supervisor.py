"""The supervisor's actions: reassign, unclaim a stale claim, team page; each audited with a
reason."""

from datetime import timedelta

import pytest
from django.urls import reverse

from approvals import selectors, services
from approvals.errors import ClaimRevoked, NotAllowed, NotEligible, ReasonRequired
from approvals.models import ApprovalStatus
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(junior_case, junior):
    return services.approval_claim(junior_case.pk, actor=junior)


def test_a_reassignment_hands_the_case_over_and_the_audit_says_who_from_whom_to_whom_why(
    claimed, supervisor, junior2
):
    case = services.approval_reassign(
        claimed.pk, actor=supervisor, to_user=junior2, reason="joana is on leave"
    )

    row = case.audit.get(action="reassign")
    assert (case.status, case.assignee) == (ApprovalStatus.CLAIMED, junior2)
    assert (row.actor, row.detail, row.reason) == (
        "sofia",
        {"from": "joana", "to": "jonas"},
        "joana is on leave",
    )


def test_the_previous_holder_deciding_after_a_reassignment_is_told_who_took_the_case(
    claimed, supervisor, junior, junior2
):
    services.approval_reassign(
        claimed.pk, actor=supervisor, to_user=junior2, reason="joana is on leave"
    )

    with pytest.raises(ClaimRevoked, match="reassigned to jonas by sofia .*joana is on leave"):
        services.approval_decide(claimed.pk, actor=junior, outcome="approve")


def test_after_a_supervisor_releases_a_claim_its_holder_cannot_decide_without_claiming_again(
    claimed, supervisor, junior
):
    services.approval_unclaim(claimed.pk, actor=supervisor, reason="stale since Monday")

    with pytest.raises(ClaimRevoked, match="released by sofia .*stale since Monday"):
        services.approval_decide(claimed.pk, actor=junior, outcome="approve")


def test_claiming_again_after_an_unclaim_lets_the_holder_decide(claimed, supervisor, junior):
    services.approval_unclaim(claimed.pk, actor=supervisor, reason="stale since Monday")
    services.approval_claim(claimed.pk, actor=junior)

    case = services.approval_decide(claimed.pk, actor=junior, outcome="approve")

    assert case.status == ApprovalStatus.APPROVED


def test_an_unclaim_is_audited_with_the_previous_holder(claimed, supervisor):
    case = services.approval_unclaim(claimed.pk, actor=supervisor, reason="stale since Monday")

    row = case.audit.get(action="unclaim")
    assert (case.status, case.assignee) == (ApprovalStatus.PENDING, None)
    assert (row.actor, row.detail["from"], row.from_status, row.to_status) == (
        "sofia",
        "joana",
        "claimed",
        "pending",
    )


def test_a_reassignment_to_a_reviewer_outside_the_case_groups_is_refused(
    senior_case, supervisor, junior
):
    with pytest.raises(NotEligible):
        services.approval_reassign(
            senior_case.pk, actor=supervisor, to_user=junior, reason="balance the queue"
        )


def test_a_reviewer_who_is_no_supervisor_may_not_reassign(claimed, junior2, junior):
    with pytest.raises(NotAllowed, match="compliance-supervisor"):
        services.approval_reassign(claimed.pk, actor=junior2, to_user=junior2, reason="mine now")


def test_an_unclaim_without_a_reason_is_refused(claimed, supervisor):
    with pytest.raises(ReasonRequired):
        services.approval_unclaim(claimed.pk, actor=supervisor, reason="  ")


def test_a_claim_older_than_the_setting_is_flagged_stale(claimed, clock, settings):
    settings.APPROVALS_STALE_CLAIM_HOURS = 4
    clock.advance(timedelta(hours=3, minutes=59))
    fresh = selectors.approvals_claimed().get().stale

    clock.advance(timedelta(minutes=1))

    assert (fresh, selectors.approvals_claimed().get().stale) == (False, True)


def test_the_team_page_flags_the_stale_claim_for_the_supervisor(claimed, clock, supervisor):
    clock.advance(timedelta(hours=5))

    page = signed_in(supervisor).get(reverse("approval_team")).content.decode()

    assert f'data-case="{claimed.pk}"' in page and 'data-testid="stale"' in page


def test_a_reviewer_gets_403_on_the_team_page_and_the_dashboard(junior):
    client = signed_in(junior)

    assert [
        client.get(reverse(name)).status_code for name in ("approval_team", "approval_dashboard")
    ] == [403, 403]


def test_the_reassign_form_posts_through_and_the_old_holder_sees_the_refusal(
    claimed, supervisor, junior, junior2
):
    response = signed_in(supervisor).post(
        reverse("approval_reassign", args=[claimed.pk]),
        {"to": junior2.pk, "reason": "joana is on leave"},
    )
    refused = signed_in(junior).post(
        reverse("approval_decide", args=[claimed.pk]), {"outcome": "approve"}
    )

    assert response.status_code == 302
    assert refused.status_code == 409
    assert "was reassigned to jonas by sofia" in refused.content.decode()


def test_a_reassignment_without_a_chosen_reviewer_is_a_clear_400(claimed, supervisor):
    response = signed_in(supervisor).post(
        reverse("approval_reassign", args=[claimed.pk]), {"to": "", "reason": "balance"}
    )

    assert response.status_code == 400
    assert "Choose the reviewer" in response.content.decode()


def test_the_case_page_offers_the_supervisor_only_eligible_reviewers(
    claimed, supervisor, junior2, senior
):
    page = signed_in(supervisor).get(reverse("approval_case", args=[claimed.pk])).content.decode()

    assert f'<option value="{junior2.pk}">jonas</option>' in page
    assert f'<option value="{senior.pk}">sara</option>' in page
    assert ">joana</option>" not in page  # already holds it


def test_the_case_audit_trail_shows_from_whom_to_whom_a_case_was_reassigned(
    claimed, supervisor, junior2
):
    services.approval_reassign(
        claimed.pk, actor=supervisor, to_user=junior2, reason="joana is on leave"
    )

    page = signed_in(supervisor).get(reverse("approval_case", args=[claimed.pk])).content.decode()

    assert "from joana to jonas" in page and "joana is on leave" in page
