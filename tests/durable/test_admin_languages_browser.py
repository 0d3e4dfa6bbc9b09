"""The whole admin in the operator's language, in headless Chromium: every page of the engine, the
approvals and the processes (the WhatsApp messages and webhook deliveries too) reads in Portuguese
for a pt-BR user and in English for an en user, with data (run ids, workflow and step names, JSON,
what the intake wrote about a delivery) left as it was written.

On the run list and a run's page, also: no sideways scroll at 390 and 1366 px and no serious
accessibility violation (axe-core). Screenshots go to var/screenshots/admin-*.png.
"""

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from durable import services
from durable.features import schedules
from durable.surfaces.admin import paging
from durable.testing import drive
from processes.onboarding.models import Company, Document, DocumentKind
from processes.webhooks.models import QuarantinedItem
from processes.whatsapp.backends import ReplyButton
from processes.whatsapp.models import AccountEvent, InboundMessage, InboundStatus, WhatsAppTemplate
from processes.whatsapp.services import message_send, webhook_receive
from tests.approvals.conftest import start_case
from tests.browser import admin_page, browser  # noqa: F401  (the fixture)
from tests.languages import AXE, strings_of_the_other_language, visible_text
from tests.processes.conftest import document, whatsapp_message, whatsapp_webhook

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-admin-languages-1"
LANGUAGES = ["pt-br", "en"]
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


@pytest.fixture
def admin_data(clock):
    """A superuser; runs that finished 100 days ago (archived), one that failed, one waiting for a
    signal, one asleep, and one that completed with a journal; a schedule, a case, a company and
    its WhatsApp traffic."""
    User.objects.create_superuser("admin-languages", password=PASSWORD)
    for n in range(2):
        drive(services.run_start("three_steps", n, id=f"old:{n}", actor="test").id)
    clock.advance(timedelta(days=100))
    call_command("durable", "archive", "--finished-before", "90d", stdout=open("/dev/null", "w"))
    runs = {
        "waiting": drive(services.run_start("step_wait_step", id="orders:c-42", actor="test").id),
        "failed": drive(services.run_start("fails_in_body", id="orders:c-43", actor="test").id),
        "asleep": drive(services.run_start("nap", id="orders:c-44", actor="test").id),
        "completed": drive(services.run_start("three_steps", 1, id="orders:c-45", actor="test").id),
    }
    schedule = schedules.schedule_create(
        "report-daily",
        "three_steps",
        cron_expression="30 0 * * *",
        id_template="report:{date}",
        args=[1],
        actor="test",
    )
    case = start_case("acme")
    company = Company.objects.create(
        name="Padaria Pão Quente", cnpj="11222333000181", wa_id="5511999990000"
    )
    return {
        "runs": runs,
        "schedule": schedule,
        "case": case,
        "company": company,
        "whatsapp": whatsapp_traffic(company),
    }


def whatsapp_traffic(company) -> dict:
    """One WhatsApp delivery as the intake stores it (a document and a text from the company, a
    message without an id, quarantined, and a status for a message we never sent, kept), the text
    failed in routing, and our reply."""
    nameless = whatsapp_message("wamid.NO-ID", wa_id=company.wa_id)
    del nameless["id"]
    webhook_receive(
        whatsapp_webhook(
            document(
                "wamid.DOC-1", "contrato social", wa_id=company.wa_id, filename="contrato.pdf"
            ),
            whatsapp_message("wamid.TEXT-1", wa_id=company.wa_id),
            nameless,
            statuses=[
                {
                    "id": "wamid.SENT-BY-SOMEONE-ELSE",
                    "status": "delivered",
                    "timestamp": "1767225700",
                    "recipient_id": company.wa_id,
                }
            ],
        )
    )
    InboundMessage.objects.filter(company__isnull=True).update(company=company)
    InboundMessage.objects.filter(wamid="wamid.TEXT-1").update(
        status=InboundStatus.FAILED, note="RuntimeError: the router broke"
    )
    reply = message_send(
        company=company, body="Recebemos o contrato social.", idempotency_key="onboarding:docs:1"
    )
    question = message_send(
        company=company,
        body="Quer cancelar o seu pedido?",
        idempotency_key="confirm:1",
        buttons=(
            ReplyButton("withdraw:confirm", "Confirmar"),
            ReplyButton("withdraw:continue", "Continuar"),
        ),
        purpose="generic",
    )
    # What Meta says of a template and of the account, and a change field nothing acts on.
    for field, value in [
        (
            "message_template_status_update",
            {
                "event": "REJECTED",
                "message_template_name": "invoice_reminder",
                "message_template_language": "pt_BR",
                "reason": "INCORRECT_CATEGORY",
            },
        ),
        (
            "account_update",
            {
                "event": "ACCOUNT_RESTRICTION",
                "restriction_info": [
                    {
                        "restriction_type": "RESTRICTED_ADD_PHONE_NUMBER_ACTION",
                        "expiration": 1999999999,
                    }
                ],
            },
        ),
        ("phone_number_quality_update", {"event": "FLAGGED", "current_limit": "TIER_1K"}),
    ]:
        webhook_receive(
            {
                "object": "whatsapp_business_account",
                "entry": [
                    {
                        "id": "WABA-ID",
                        "time": 1767225600,
                        "changes": [{"field": field, "value": value}],
                    }
                ],
            }
        )
    document_ = Document.objects.create(
        company=company,
        media_id="MEDIA-LUZ",
        file_name="luz.pdf",
        kind=DocumentKind.ADDRESS,
        message_id="wamid.LUZ",
        withdrawn_at=company.created_at,
        changes=[
            {
                "change": "caption",
                "caption": "comprovante",
                "from": "selfie",
                "to": "proof_of_address",
                "at": "2027-01-01T00:00:00+00:00",
                "message_id": "wamid.EDIT",
                "sent_at": None,
            },
            {
                "change": "deleted",
                "at": "2027-01-01T00:01:00+00:00",
                "message_id": "wamid.REVOKE",
                "sent_at": None,
            },
        ],
    )
    return {
        "document": InboundMessage.objects.get(wamid="wamid.DOC-1"),
        "reply": reply,
        "question": question,
        "quarantined": QuarantinedItem.objects.get(),
        "file": document_,
        "template": WhatsAppTemplate.objects.get(),
        "account_event": AccountEvent.objects.order_by("pk").first(),
    }


def pages_of(data) -> dict[str, str]:
    """Every admin page an operator reads, by a short name (for the screenshot and the failure)."""
    runs, whatsapp = data["runs"], data["whatsapp"]

    def run(name: str, what: str = "change", query: str = "") -> str:
        return reverse(f"admin:durable_workflowrun_{what}", args=[quote(runs[name].id)]) + query

    archived = reverse("admin:durable_archivedrun_changelist")
    return {
        "runs-filtered": reverse("admin:durable_workflowrun_changelist") + "?status__exact=waiting",
        "run-waiting": run("waiting"),
        "run-failed": run("failed"),
        "run-completed": run("completed"),
        "signal-form": run("waiting", "signal"),
        "bulk-form": reverse("admin:durable_workflowrun_bulk") + "?status__exact=failed",
        "fork-confirm": run("completed", "fork", "?at=1"),
        "schedules": reverse("admin:durable_schedule_changelist"),
        "schedule": reverse("admin:durable_schedule_change", args=[data["schedule"].pk]),
        "archived-runs": archived,
        "archived-run": reverse("admin:durable_archivedrun_change", args=[quote("old:0")]),
        "audit-events": reverse("admin:durable_auditevent_changelist"),
        "approvals": reverse("admin:approvals_approvalrequest_changelist"),
        "approval": reverse("admin:approvals_approvalrequest_change", args=[data["case"].pk]),
        "companies": reverse("admin:processes_company_changelist"),
        "company": reverse("admin:processes_company_change", args=[data["company"].pk]),
        "inbound-messages": reverse("admin:processes_inboundmessage_changelist"),
        "inbound-message": reverse(
            "admin:processes_inboundmessage_change", args=[whatsapp["document"].pk]
        ),
        "outbound-messages": reverse("admin:processes_outboundmessage_changelist"),
        "outbound-message": reverse(
            "admin:processes_outboundmessage_change", args=[whatsapp["reply"].pk]
        ),
        "pending-statuses": reverse("admin:processes_pendingstatus_changelist"),
        "webhook-deliveries": reverse("admin:processes_webhookdelivery_changelist"),
        "quarantined-items": reverse("admin:processes_quarantineditem_changelist"),
        "question": reverse(
            "admin:processes_outboundmessage_change", args=[whatsapp["question"].pk]
        ),
        "document": reverse("admin:processes_document_change", args=[whatsapp["file"].pk]),
        "whatsapp-templates": reverse("admin:processes_whatsapptemplate_changelist"),
        "whatsapp-template": reverse(
            "admin:processes_whatsapptemplate_change", args=[whatsapp["template"].pk]
        ),
        "account-events": reverse("admin:processes_accountevent_changelist"),
        "account-event": reverse(
            "admin:processes_accountevent_change", args=[whatsapp["account_event"].pk]
        ),
    }


def wrong_language(page, language: str, name: str) -> list[str]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"admin-{name}-{language}.png"), full_page=True)
    return strings_of_the_other_language(visible_text(page), language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_admin_page_reads_in_the_users_language(
    browser,
    live_server,
    admin_data,
    language,  # noqa: F811
    monkeypatch,
):
    monkeypatch.setattr(paging, "COUNT_CAP", 1)  # the filtered run list says "more than 1"
    found = {}
    with admin_page(browser, live_server, "admin-languages", PASSWORD, language=language) as page:
        for name, url in pages_of(admin_data).items():
            response = page.goto(live_server.url + url)
            assert response.status == 200, (name, response.status)
            found[name] = wrong_language(page, language, name)
            if name == "runs-filtered":
                capped = visible_text(page)

    assert {name: strings for name, strings in found.items() if strings} == {}
    assert (
        "mais de 1 execuções de processos" if language == "pt-br" else "more than 1 workflow runs"
    ) in capped


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_bulk_confirmation_reads_in_the_users_language(
    browser, live_server, admin_data, language
):  # noqa: F811
    with admin_page(browser, live_server, "admin-languages", PASSWORD, language=language) as page:
        page.goto(
            live_server.url + reverse("admin:durable_workflowrun_bulk") + "?status__exact=failed"
        )
        page.locator("#durable-bulk-form input[type=submit]").click()
        page.wait_for_load_state()

        assert page.locator("#durable-bulk-count").is_visible()
        assert wrong_language(page, language, "bulk-confirm") == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_repairs_message_reads_in_the_users_language(browser, live_server, admin_data, language):  # noqa: F811
    asleep = admin_data["runs"]["asleep"]
    with admin_page(browser, live_server, "admin-languages", PASSWORD, language=language) as page:
        page.goto(
            live_server.url + reverse("admin:durable_workflowrun_change", args=[quote(asleep.id)])
        )
        page.locator("form[action$='/wake/'] input[type=submit]").click()
        page.wait_for_load_state()

        message = page.locator("ul.messagelist").inner_text()
        assert asleep.id in message
        assert wrong_language(page, language, "woken") == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_list_actions_message_reads_in_the_users_language(
    browser, live_server, admin_data, language
):  # noqa: F811
    waiting = admin_data["runs"]["waiting"]
    with admin_page(browser, live_server, "admin-languages", PASSWORD, language=language) as page:
        page.goto(live_server.url + reverse("admin:durable_workflowrun_changelist"))
        page.locator(f"input[name=_selected_action][value='{waiting.id}']").check()
        page.select_option("select[name=action]", "cancel_selected")
        page.locator("button[name=index]").click()
        page.wait_for_load_state()

        assert page.locator("ul.messagelist").is_visible()
        assert wrong_language(page, language, "cancelled") == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_quarantined_items_action_message_reads_in_the_users_language(
    browser,
    live_server,
    admin_data,  # noqa: F811
    language,
):
    item = admin_data["whatsapp"]["quarantined"]
    with admin_page(browser, live_server, "admin-languages", PASSWORD, language=language) as page:
        page.goto(
            live_server.url
            + reverse("admin:processes_quarantineditem_changelist")
            + "?attention=yes"
        )
        page.locator(f"input[name=_selected_action][value='{item.pk}']").check()
        page.select_option("select[name=action]", "mark_handled")
        page.locator("button[name=index]").click()
        page.wait_for_load_state()

        assert page.locator("ul.messagelist").is_visible()
        assert wrong_language(page, language, "handled") == []


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("width", [390, 1366])
@pytest.mark.parametrize("which", ["list", "run"])
def test_the_run_list_and_page_fit_the_screen_and_pass_axe(
    browser,
    live_server,
    admin_data,
    language,
    width,  # noqa: F811
    which,
):
    url = (
        reverse("admin:durable_workflowrun_changelist")
        if which == "list"
        else reverse(
            "admin:durable_workflowrun_change", args=[quote(admin_data["runs"]["waiting"].id)]
        )
    )
    with admin_page(
        browser, live_server, "admin-languages", PASSWORD, language=language, width=width
    ) as page:
        page.goto(live_server.url + url)
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        page.evaluate(
            AXE.read_text()
        )  # evaluated, not a <script>: the admin's CSP refuses inline scripts
        result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        page.screenshot(
            path=str(SCREENSHOTS / f"admin-{which}-{language}-{width}.png"), full_page=True
        )

    serious = [
        (violation["id"], violation["impact"], [node["target"] for node in violation["nodes"]][:3])
        for violation in result["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    if which == "run":
        assert widths[0] <= widths[1], (
            f"the run page is {widths[0]} px wide in a {widths[1]} px window"
        )
    assert serious == []
