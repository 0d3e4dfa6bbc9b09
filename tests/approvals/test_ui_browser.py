"""The reviewer pages in headless Chromium at a laptop's and a phone's width: no sideways
scroll, no serious accessibility violation (axe-core), no untranslated string, live updates.

Screenshots of every page at both widths go to var/screenshots/ (CI keeps them as artifacts).
"""
from pathlib import Path

import pytest
from django.conf import settings
from django.test.utils import override_settings

from approvals import services
from approvals.models import ReviewerPreference
from durable import clock
from durable.testing import drive
from tests.approvals.conftest import make_user, start_case
from tests.approvals.test_browser import onboarding_waiting_for_compliance, open_page  # noqa: F401
from tests.browser import browser  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent.parent / "assets" / "axe-4.14.1.min.js"
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
WIDTHS = {"laptop": 1366, "phone": 390}
PAGES = ["queue", "case", "mine", "archive"]


@pytest.fixture
def workbench():
    """ana (reading Portuguese, in kyc: onboarding routes its cases there) holds an onboarding case
    (documents, validator, conversation); one case waits in the queue; one is closed, for the archive."""
    ana = make_user("ana", reviewer=True, groups=("kyc",))
    ReviewerPreference.objects.create(user=ana, language="pt-br", updated_at=clock.now())  # Portuguese first
    make_user("bruno", reviewer=True)
    onboarding = onboarding_waiting_for_compliance()
    services.approval_claim(onboarding.pk, actor=ana)
    start_case("globex", risk="high")
    closed = start_case("initech")
    services.approval_decide(closed.pk, actor=ana, outcome="reject", reason="CNPJ inativo na Receita")
    return {"queue": "/approvals/", "case": f"/approvals/{onboarding.pk}/", "mine": "/approvals/mine/",
            "archive": "/approvals/archive/"}


def visible_text(page) -> str:
    """The page's words, without what people and processes wrote (marked translate="no": a
    customer's caption, a validator's finding), which is data, not the UI's language."""
    return page.evaluate("""() => { const body = document.body.cloneNode(true);
        body.querySelectorAll('[translate=no]').forEach(el => el.remove()); return body.innerText; }""")


def strings_of_the_other_language(text: str, language: str) -> list[str]:
    """The catalog's strings of the language not chosen that appear in ``text``: every entry
    whose two languages differ (long enough not to be a word both share)."""
    from django.utils import translation

    catalog = translation.trans_real.translation("pt-br")._catalog
    pairs = [(key, value) for key, value in catalog.items() if isinstance(key, str) and key
             and "\x04" not in key and "%" not in key and key != value and len(key) > 12]
    return [english if language == "pt-br" else portuguese for english, portuguese in pairs
            if (english if language == "pt-br" else portuguese) in text]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_a_reviewer_page_fits_the_screen_and_has_no_serious_accessibility_violation(
        open_page, live_server, workbench, name, width):
    page = open_page("ana")
    page.set_viewport_size({"width": WIDTHS[width], "height": 900})
    page.goto(live_server.url + workbench[name])
    page.wait_for_load_state("networkidle")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-{WIDTHS[width]}.png"), full_page=True)

    serious = [(v["id"], v["impact"], [node["target"] for node in v["nodes"]][:3])
               for v in result["violations"] if v["impact"] in ("serious", "critical")]
    assert widths[0] <= widths[1], f"{name} is {widths[0]} px wide in a {widths[1]} px window"
    assert serious == []


def test_on_a_phone_the_decision_panel_comes_before_the_evidence(open_page, live_server, workbench):
    page = open_page("ana")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(live_server.url + workbench["case"])

    decision_top = page.get_by_test_id("decide").bounding_box()["y"]
    documents_top = page.get_by_test_id("documents").bounding_box()["y"]

    assert decision_top < documents_top < 3000


def test_on_a_laptop_the_decision_panel_stays_in_view_while_the_evidence_scrolls(open_page, live_server, workbench):
    page = open_page("ana")
    page.set_viewport_size({"width": 1366, "height": 700})
    page.goto(live_server.url + workbench["case"])

    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)
    box = page.get_by_test_id("decide").bounding_box()

    assert page.evaluate("window.scrollY") > 500
    assert 0 <= box["y"] < 700


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_every_reviewer_page_renders_with_no_string_of_the_other_language(open_page, live_server, workbench, language):
    """Every catalog entry whose two languages differ: none of the other language's text shows."""
    ReviewerPreference.objects.filter(user__username="ana").update(language=language)
    page = open_page("ana")
    texts = {}
    for name in PAGES:
        page.goto(live_server.url + workbench[name])
        texts[name] = visible_text(page)

    foreign = {name: strings_of_the_other_language(text, language) for name, text in texts.items()}
    assert all(found == [] for found in foreign.values()), foreign
    assert page.evaluate("document.documentElement.lang") == language


def test_a_colleagues_claim_and_decision_reach_an_open_case_page_without_a_reload(open_page, live_server):
    ana, bruno = make_user("ana", reviewer=True), make_user("bruno", reviewer=True)
    case = start_case("acme")
    page = open_page("ana")
    page.goto(f"{live_server.url}/approvals/{case.pk}/")
    page.evaluate("window.notReloaded = true")
    rows_before = page.locator("[data-testid=timeline] tbody tr").count()

    services.approval_claim(case.pk, actor=bruno)
    page.get_by_text("Claimed by bruno").wait_for(timeout=3000)
    services.approval_decide(case.pk, actor=bruno, outcome="approve")
    drive(case.run_id)
    page.get_by_test_id("closed").wait_for(timeout=3000)
    page.wait_for_function(f"document.querySelectorAll('[data-testid=timeline] tbody tr').length > {rows_before}",
                           timeout=3000)

    assert "approved by bruno" in page.get_by_test_id("closed").inner_text()
    assert page.get_by_test_id("status").inner_text() == "Approved"
    assert page.evaluate("window.notReloaded") is True


def test_a_claim_in_another_browser_shows_in_the_queue_within_3_seconds(open_page, live_server):
    make_user("ana", reviewer=True)
    make_user("bruno", reviewer=True)
    case = start_case("acme")
    ana, bruno = open_page("ana"), open_page("bruno")
    ana.evaluate("window.notReloaded = true")

    bruno.goto(f"{live_server.url}/approvals/{case.pk}/")
    bruno.get_by_role("button", name="Claim").click()
    ana.locator(f"tr[data-case='{case.pk}'] [data-testid=assignee]").wait_for(timeout=3000)

    assert "bruno" in ana.locator(f"tr[data-case='{case.pk}']").inner_text()
    assert ana.evaluate("window.notReloaded") is True


def test_a_new_case_shows_in_the_queue_with_its_count_without_a_reload(open_page, live_server):
    make_user("ana", reviewer=True)
    start_case("acme")
    ana = open_page("ana")
    ana.evaluate("window.notReloaded = true")
    before = ana.locator("#case-count").inner_text()

    case = start_case("globex")
    ana.locator(f"tr[data-case='{case.pk}']").wait_for(timeout=4000)
    ana.wait_for_function("document.querySelector('#case-count').innerText.includes('2')", timeout=4000)

    assert (before, ana.locator("#case-count").inner_text()) == ("(1)", "(2)")
    assert ana.evaluate("window.notReloaded") is True


@override_settings(ONBOARDING_DOCUMENTS_QUIET_SECONDS=0)
def test_the_case_links_to_its_run_in_the_admin_and_the_run_back_to_the_case(open_page, live_server):
    from django.contrib.auth.models import Permission

    ana = make_user("ana", reviewer=True)
    ana.is_staff = True
    ana.save(update_fields=["is_staff"])
    ana.user_permissions.add(*Permission.objects.filter(content_type__app_label="durable",
                                                       codename="view_workflowrun"))
    case = start_case("acme")
    page = open_page("ana")
    page.goto(f"{live_server.url}/approvals/{case.pk}/")

    page.get_by_test_id("run-admin").click()
    page.wait_for_load_state()
    page.get_by_test_id("run-links").get_by_role("link").first.click()
    page.wait_for_load_state()

    assert page.url == f"{live_server.url}/approvals/{case.pk}/"
