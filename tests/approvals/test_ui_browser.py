"""The reviewer pages in headless Chromium at a laptop's and a phone's width: no sideways
scroll, no serious accessibility violation (axe-core), no untranslated string, live updates.

Screenshots of every page at both widths and in both languages go to var/screenshots/.
"""

import pytest
from django.test.utils import override_settings

from approvals import services
from approvals.models import ReviewerPreference
from durable import clock
from durable.testing import drive
from processes.whatsapp.models import OutboundMessage
from processes.whatsapp.services import inbound_process, webhook_receive
from tests.approvals.conftest import make_user, start_case
from tests.approvals.test_browser import onboarding_waiting_for_compliance, open_page  # noqa: F401
from tests.browser import browser, page_check  # noqa: F401 (a fixture)
from tests.languages import strings_of_the_other_language, visible_text
from tests.processes.conftest import ADDRESS, CNPJ, HELLO, PHONE, whatsapp_message, whatsapp_webhook

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WIDTHS = {"laptop": 1366, "phone": 390}
PAGES = ["queue", "case", "mine", "archive"]


@pytest.fixture
def workbench():
    """ana (reading Portuguese, in kyc: onboarding routes its cases there) holds an onboarding case
    (documents, validator, conversation); one case waits in the queue; one is closed, for the
    archive."""
    ana = make_user("ana", reviewer=True, groups=("kyc",))
    ReviewerPreference.objects.create(
        user=ana, language="pt-br", updated_at=clock.now()
    )  # Portuguese first
    make_user("bruno", reviewer=True)
    onboarding = onboarding_waiting_for_compliance()
    customer_changes_during_the_review()
    services.approval_claim(onboarding.pk, actor=ana)
    start_case("globex", risk="high")
    closed = start_case("initech")
    services.approval_decide(
        closed.pk, actor=ana, outcome="reject", reason="CNPJ inativo na Receita"
    )
    return {
        "queue": "/approvals/",
        "case": f"/approvals/{onboarding.pk}/",
        "mine": "/approvals/mine/",
        "archive": "/approvals/archive/",
    }


def customer_changes_during_the_review():
    """What a customer does on WhatsApp while the case is open, as the case page shows it: the
    greeting edited, the proof of address deleted (a finding, a hold, the document marked), a
    sentence that may mean a withdrawal answered with buttons, and "Continuar" tapped."""

    def deliver(message):
        for message_id in webhook_receive(whatsapp_webhook(message)).new_message_ids:
            inbound_process(message_id)

    deliver(
        {
            "from": PHONE,
            "id": "wamid.EDIT-HELLO",
            "timestamp": "1767225700",
            "type": "edit",
            "edit": {
                "original_message_id": HELLO["id"],
                "message": {
                    "type": "text",
                    "text": {"body": f"Oi, é a Padaria Boa Massa, CNPJ {CNPJ}"},
                },
            },
        }
    )
    deliver(
        {
            "from": PHONE,
            "id": "wamid.REVOKE-ADDRESS",
            "timestamp": "1767225710",
            "type": "revoke",
            "revoke": {"original_message_id": ADDRESS["id"]},
        }
    )
    deliver(whatsapp_message("wamid.MAYBE", wa_id=PHONE, text="desisto, quero cancelar"))
    question = OutboundMessage.objects.get(idempotency_key="confirm-withdrawal:wamid.MAYBE")
    deliver(
        {
            "from": PHONE,
            "id": "wamid.TAP",
            "timestamp": "1767225720",
            "type": "interactive",
            "context": {"from": "551130000000", "id": question.provider_message_id},
            "interactive": {
                "type": "button_reply",
                "button_reply": {"id": "withdraw:continue", "title": "Continuar"},
            },
        }
    )


@pytest.mark.parametrize("language", ["pt-br", "en"])
@pytest.mark.parametrize("width", WIDTHS)
def test_every_reviewer_page_fits_the_screen_and_has_no_serious_accessibility_violation(
    open_page, live_server, workbench, width, language
):
    ReviewerPreference.objects.filter(user__username="ana").update(language=language)
    page = open_page("ana")
    page.set_viewport_size({"width": WIDTHS[width], "height": 900})
    checks = {}
    for name in PAGES:
        page.goto(live_server.url + workbench[name])
        checks[name] = page_check(page, f"{name}-{WIDTHS[width]}-{language}")

    assert checks == {name: {"overflow": 0, "broken words": [], "serious": []} for name in PAGES}


def test_on_a_phone_the_decision_panel_comes_before_the_evidence(open_page, live_server, workbench):
    page = open_page("ana")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(live_server.url + workbench["case"])

    decision_top = page.get_by_test_id("decide").bounding_box()["y"]
    documents_top = page.get_by_test_id("documents").bounding_box()["y"]

    assert decision_top < documents_top < 3000


def test_on_a_laptop_the_decision_panel_stays_in_view_while_the_evidence_scrolls(
    open_page, live_server, workbench
):
    page = open_page("ana")
    page.set_viewport_size({"width": 1366, "height": 700})
    page.goto(live_server.url + workbench["case"])

    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(200)
    box = page.get_by_test_id("decide").bounding_box()

    assert page.evaluate("window.scrollY") > 500
    assert 0 <= box["y"] < 700


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_every_reviewer_page_renders_with_no_string_of_the_other_language(
    open_page, live_server, workbench, language
):
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


def test_a_colleagues_claim_and_decision_reach_an_open_case_page_without_a_reload(
    open_page, live_server
):
    make_user("ana", reviewer=True)
    bruno = make_user("bruno", reviewer=True)
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
    page.wait_for_function(
        f"document.querySelectorAll('[data-testid=timeline] tbody tr').length > {rows_before}",
        timeout=3000,
    )

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
    ana.wait_for_function(
        "document.querySelector('#case-count').innerText.includes('2')", timeout=4000
    )

    assert (before, ana.locator("#case-count").inner_text()) == ("(1)", "(2)")
    assert ana.evaluate("window.notReloaded") is True


@override_settings(ONBOARDING_DOCUMENTS_QUIET_SECONDS=0)
def test_the_case_links_to_its_run_in_the_admin_and_the_run_back_to_the_case(
    open_page, live_server
):
    from django.contrib.auth.models import Permission

    ana = make_user("ana", reviewer=True)
    ana.is_staff = True
    ana.save(update_fields=["is_staff"])
    ana.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename="view_workflowrun")
    )
    case = start_case("acme")
    page = open_page("ana")
    page.goto(f"{live_server.url}/approvals/{case.pk}/")

    page.get_by_test_id("run-admin").click()
    page.wait_for_load_state()
    page.get_by_test_id("run-links").get_by_role("link").first.click()
    page.wait_for_load_state()

    assert page.url == f"{live_server.url}/approvals/{case.pk}/"
