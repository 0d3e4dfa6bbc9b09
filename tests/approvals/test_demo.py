"""The reviewer workbench's demo data looks like a working week, and seeding twice changes
nothing."""

import io
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from approvals import figures, selectors, services
from approvals.models import ApprovalAudit, ApprovalRequest, ApprovalStatus
from tests.languages import strings_of_the_other_language

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_approvals_demo", stdout=io.StringIO())


def groups_of(username: str) -> set[str]:
    return set(
        get_user_model().objects.get(username=username).groups.values_list("name", flat=True)
    )


def test_the_demo_has_a_stale_claim_a_case_past_sla_and_one_waiting_on_a_follow_up(seeded):
    stale = [case for case in selectors.approvals_claimed() if case.stale]
    waiting = ApprovalRequest.objects.filter(
        follow_up_at__isnull=False, status=ApprovalStatus.PENDING
    )

    assert [case.assignee.username for case in stale] == ["bruno"]
    assert [case.risk for case in figures.past_sla()] == ["high"]
    assert (
        waiting.count() == 1
        and "carta do banco" in waiting.get().audit.get(action="follow_up").reason
    )


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


class _Text(HTMLParser):
    """A page's text as a reader sees it, data included (a demo is judged by all it shows)."""

    def __init__(self):
        super().__init__()
        self.parts, self._skipping = [], 0

    def handle_starttag(self, tag, attrs):
        self._skipping += tag in ("script", "style", "template")

    def handle_endtag(self, tag):
        self._skipping -= tag in ("script", "style", "template")

    def handle_data(self, data):
        if not self._skipping:
            self.parts.append(data)


def text_of(html: str) -> str:
    reader = _Text()
    reader.feed(html)
    return " ".join(reader.parts)


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings_in(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings_in(item)]
    return []


def test_what_the_demo_wrote_is_portuguese(seeded):
    """Findings, what customers said, reviewers' reasons: the team's own words, in Portuguese."""
    written = [
        text
        for summary in ApprovalRequest.objects.values_list("summary", flat=True)
        for text in strings_in(summary)
    ]
    written += [
        reason for reason in ApprovalAudit.objects.values_list("reason", flat=True) if reason
    ]

    assert len(written) > 20
    assert {
        text: found for text in written if (found := strings_of_the_other_language(text, "pt-br"))
    } == {}


@pytest.mark.parametrize("username", ["ana", "carla", "sofia"])
def test_the_demo_pages_read_in_portuguese_only(seeded, client, settings, username):
    """Every page a demo login opens, data included, for a reader of Portuguese (the default)."""
    settings.LANGUAGE_CODE = "pt-br"
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    if username == "sofia":
        paths = ["/approvals/team/", "/approvals/dashboard/"]
    else:
        paths = [
            "/approvals/",
            "/approvals/mine/",
            "/approvals/archive/",
            *(f"/approvals/{case.pk}/" for case in selectors.approvals_open_for(user)),
        ]
    pages = {path: client.get(path) for path in paths}

    assert {path: page.status_code for path, page in pages.items()} == dict.fromkeys(paths, 200)
    foreign = {
        path: strings_of_the_other_language(text_of(page.content.decode()), "pt-br")
        for path, page in pages.items()
    }
    assert foreign == dict.fromkeys(paths, [])


def test_the_demo_operator_is_staff_with_the_operators_permissions_not_a_superuser(seeded, client):
    ops = get_user_model().objects.get(username="ops")
    client.force_login(ops)
    answers = {
        path: client.get(path).status_code
        for path in (
            "/admin/durable/workflowrun/",
            "/admin/durable/schedule/",
            "/admin/processes/invoice/",
            "/admin/auth/user/",
            "/approvals/",
        )
    }

    assert ops.is_staff and not ops.is_superuser and groups_of("ops") == {"operators"}
    assert ops.has_perms(
        ["durable.operate_workflowrun", "durable.view_workflowrun", "processes.view_document"]
    )
    assert not ops.has_perm("approvals.decide_approvalrequest") and not ops.has_perm(
        "processes.change_document"
    )
    assert answers == {
        "/admin/durable/workflowrun/": 200,
        "/admin/durable/schedule/": 200,
        "/admin/processes/invoice/": 200,
        "/admin/auth/user/": 403,
        "/approvals/": 403,
    }
