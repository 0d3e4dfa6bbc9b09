"""The reviewer workbench in headless Chromium: routing, reassignment, an extended deadline."""

import io
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from approvals.models import ApprovalRequest, ApprovalStatus, ReviewerPreference
from durable import clock, days
from durable.models import RunStatus
from durable.testing import drive
from tests.approvals.conftest import make_user, start_routed_case
from tests.approvals.test_browser import open_page  # noqa: F401 (a fixture)
from tests.browser import browser, page_check  # noqa: F401 (a fixture)
from tests.languages import strings_of_the_other_language, visible_text

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# CI artifacts, never committed (var/ is ignored).


@pytest.fixture
def team():
    return {
        "joana": make_user("joana", reviewer=True, groups=("kyc",)),
        "jonas": make_user("jonas", reviewer=True, groups=("kyc",)),
        "sofia": make_user("sofia", reviewer=False, groups=("compliance-supervisor",)),
    }


def test_a_junior_cannot_open_a_senior_case(open_page, live_server, team):
    case = start_routed_case("globex", risk="high", groups=("kyc-senior",))

    page = open_page("joana")
    queue = page.content()
    response = page.goto(f"{live_server.url}/approvals/{case.pk}/")

    assert case.title not in queue
    assert response.status == 403
    assert case.title not in page.content()


def test_a_supervisor_reassigns_a_claimed_case_and_the_old_holder_cannot_decide_it(
    open_page, live_server, team
):
    case = start_routed_case("padaria", groups=("kyc",))
    joana = open_page("joana")
    joana.get_by_role("link", name=case.title).click()
    joana.get_by_role("button", name="Claim").click()
    joana.get_by_role("button", name="Approve").wait_for()
    # Joana's tab is stale: its live updates (polled every 2 s) have not arrived, as on a
    # laptop that slept. Left polling, the page would swap the decision away before her
    # click whenever the reassignment took longer than a poll (CI saw it once).
    joana.evaluate("document.getElementById('case-live').remove()")

    sofia = open_page("sofia")
    sofia.goto(f"{live_server.url}/approvals/team/")
    sofia.get_by_role("link", name=case.title).click()
    sofia.select_option("#reassign_to", label="jonas")
    sofia.fill("#reassign_reason", "joana is on leave this week")
    sofia.get_by_role("button", name="Reassign").click()
    notice = sofia.get_by_role("status").inner_text()

    joana.get_by_role("button", name="Approve").click()
    refused = joana.get_by_test_id("error").inner_text()

    jonas = open_page("jonas")
    jonas.goto(f"{live_server.url}/approvals/mine/")
    jonas.get_by_role("link", name=case.title).click()
    jonas.get_by_role("button", name="Approve").click()
    closed = jonas.get_by_test_id("closed").inner_text()

    assert "now with jonas" in notice
    assert "reassigned to jonas by sofia" in refused and "joana is on leave this week" in refused
    assert "approved by jonas" in closed
    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.APPROVED, "jonas")
    assert case.audit.get(action="reassign").detail == {"from": "joana", "to": "jonas"}


def test_an_extended_deadline_prevents_expiry_under_the_fake_clock(
    open_page, live_server, team, clock
):
    case = start_routed_case("tiny", groups=("kyc",))
    new_deadline = (case.due_at + days(2)).replace(second=0, microsecond=0)

    sofia = open_page("sofia")
    sofia.goto(f"{live_server.url}/approvals/{case.pk}/")
    sofia.fill(
        "#due_at",
        f"{timezone.localtime(new_deadline, ZoneInfo(settings.REVIEWER_TIME_ZONE)):%Y-%m-%dT%H:%M}",
    )
    sofia.fill("#extend_reason", "the customer's bank is on strike")
    sofia.get_by_role("button", name="Extend the deadline").click()
    notice = sofia.get_by_role("status").inner_text()
    drive(case.run_id)  # the run hears of the extension
    clock.advance(days(3) + timedelta(minutes=1))  # past the old deadline
    at_old_deadline = drive(case.run_id)
    case_at_old_deadline = ApprovalRequest.objects.get(pk=case.pk).status
    clock.advance(days(2))  # past the new one
    at_new_deadline = drive(case.run_id)

    assert f"Case #{case.pk} is now due" in notice
    assert (at_old_deadline.status, case_at_old_deadline) == (
        RunStatus.WAITING,
        ApprovalStatus.PENDING,
    )
    assert at_new_deadline.result == "expired"
    assert ApprovalRequest.objects.get(pk=case.pk).status == ApprovalStatus.EXPIRED


def test_pressing_c_on_the_case_page_claims_the_case(open_page, team):
    case = start_routed_case("keys", groups=("kyc",))
    page = open_page("joana")
    page.get_by_role("link", name=case.title).click()
    page.wait_for_url(f"**/approvals/{case.pk}/")
    page.wait_for_load_state("load")  # the deferred shortcuts script has run

    page.keyboard.press("c")
    page.wait_for_selector("[role=status]")

    case.refresh_from_db()
    assert (case.status, case.assignee.username) == (ApprovalStatus.CLAIMED, "joana")


def test_pressing_the_question_mark_shows_the_shortcuts_help_and_escape_hides_it(open_page, team):
    case = start_routed_case("help", groups=("kyc",))
    page = open_page("joana")
    page.get_by_role("link", name=case.title).click()
    page.wait_for_url(f"**/approvals/{case.pk}/")
    page.wait_for_load_state("load")  # the deferred shortcuts script has run

    page.keyboard.press("?")
    shown = page.get_by_role("dialog").inner_text()
    page.keyboard.press("Escape")

    assert "Claim the case" in shown and "Approve" in shown
    assert page.locator("#shortcuts-help").is_hidden()


@pytest.fixture
def seeded_week(team, django_capture_on_commit_callbacks):
    """The demo's week of cases (sofia keeps the test password: the seed leaves it unchanged)."""
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_approvals_demo", stdout=io.StringIO())


SUPERVISOR_PAGES = ["/approvals/dashboard/", "/approvals/team/"]


@pytest.mark.parametrize("language", ["pt-br", "en"])
@pytest.mark.parametrize("width", [1366, 390])
def test_the_supervisor_pages_fit_the_screen_and_have_no_serious_accessibility_violation(
    open_page, live_server, seeded_week, width, language
):  # noqa: F811
    ReviewerPreference.objects.update_or_create(
        user=User.objects.get(username="sofia"),
        defaults={"language": language, "updated_at": clock.now()},
    )
    page = open_page("sofia", width)
    checks, statuses = {}, {}
    for path in SUPERVISOR_PAGES:
        statuses[path] = page.goto(live_server.url + path).status
        checks[path] = page_check(page, f"{path.strip('/').replace('/', '-')}-{width}-{language}")

    assert statuses == dict.fromkeys(SUPERVISOR_PAGES, 200)
    assert checks == {
        path: {"overflow": 0, "broken words": [], "serious": []} for path in SUPERVISOR_PAGES
    }


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_the_supervisor_pages_render_with_no_string_of_the_other_language(
    open_page, live_server, seeded_week, language
):  # noqa: F811
    ReviewerPreference.objects.update_or_create(
        user=User.objects.get(username="sofia"),
        defaults={"language": language, "updated_at": clock.now()},
    )
    page = open_page("sofia")
    texts = {}
    for path in SUPERVISOR_PAGES:
        page.goto(live_server.url + path)
        texts[path] = visible_text(page)
    lang = page.evaluate("document.documentElement.lang")

    foreign = {path: strings_of_the_other_language(text, language) for path, text in texts.items()}
    assert all(found == [] for found in foreign.values()), foreign
    assert lang == language
