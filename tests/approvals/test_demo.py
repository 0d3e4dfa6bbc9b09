"""The reviewer workbench's demo data looks like a working week, and seeding twice changes nothing."""
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from approvals import figures, selectors, services
from approvals.models import ApprovalAudit, ApprovalRequest, ApprovalStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_approvals_demo", stdout=io.StringIO())


def groups_of(username: str) -> set[str]:
    return set(get_user_model().objects.get(username=username).groups.values_list("name", flat=True))


def test_the_demo_has_a_stale_claim_a_case_past_sla_and_one_waiting_on_a_follow_up(seeded):
    stale = [case for case in selectors.approvals_claimed() if case.stale]
    waiting = ApprovalRequest.objects.filter(follow_up_at__isnull=False, status=ApprovalStatus.PENDING)

    assert [case.assignee.username for case in stale] == ["bruno"]
    assert [case.risk for case in figures.past_sla()] == ["high"]
    assert waiting.count() == 1 and "bank letter" in waiting.get().audit.get(action="follow_up").reason


def test_the_demo_mixes_risks_and_groups_and_no_case_looks_like_onboarding(seeded):
    open_cases = ApprovalRequest.objects.filter(status__in=["pending", "claimed"])

    assert set(open_cases.values_list("risk", flat=True)) == {"low", "medium", "high"}
    assert {services.case_group_names(case)[0] for case in open_cases} == {"kyc", "kyc-senior"}
    assert not ApprovalRequest.objects.filter(title__icontains="account").exists()


def test_the_demo_reviewers_and_supervisor_are_in_their_groups(seeded):
    assert {"compliance", "kyc"} <= groups_of("ana")
    assert {"compliance", "kyc-senior"} <= groups_of("carla")
    assert groups_of("sofia") == {"compliance-supervisor"}


def test_the_demo_has_decided_cases_behind_the_dashboard(seeded):
    decided = sum(week.decided for week in figures.weekly_time_to_decision())

    assert decided == 5 and len(figures.decisions_per_reviewer()) == 4


def test_seeding_the_demo_twice_adds_nothing(seeded, django_capture_on_commit_callbacks):
    counts = (ApprovalRequest.objects.count(), ApprovalAudit.objects.count())

    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_approvals_demo", stdout=io.StringIO())

    assert (ApprovalRequest.objects.count(), ApprovalAudit.objects.count()) == counts
