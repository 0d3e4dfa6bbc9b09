"""The invoice admin's void in headless Chromium, as an operator clicks it: pick the invoice,
pick the action, give a reason, send; the invoice's run applies it."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from durable import clock, days
from durable.models import RunStatus
from durable.testing import drive
from processes.billing import rules
from processes.billing.models import InvoiceStatus
from processes.billing.services import invoice_issue
from tests.browser import admin_page, browser  # noqa: F401  (browser: the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.mark.parametrize(
    "width, language, button, stored",
    [
        (1366, "en", "Void invoices", "NF-B-1: stored; its run will apply it"),
        (390, "pt-br", "Anular faturas", "NF-B-1: guardado; a execução vai aplicá-lo"),
    ],
)
def test_an_operator_voids_an_invoice_with_a_reason_and_its_run_ends_voided(
    browser, live_server, monkeypatch, width, language, button, stored
):
    monkeypatch.setattr(rules, "OPERATOR_WAIT_SECONDS", 0.5)  # no worker here: do not wait long
    User.objects.create_superuser("ops", password=PASSWORD)
    invoice = invoice_issue(
        number="NF-B-1",
        customer_name="Padaria Boa Massa",
        amount=Decimal("350.00"),
        due_at=clock.now() + days(2),
        wa_id="5511955554444",
        actor="test",
    )
    drive(invoice.run_id)
    with admin_page(
        browser, live_server, "ops", PASSWORD, width=width, height=844, language=language
    ) as page:
        void_from_the_list(page, live_server, invoice, button)
        assert stored in page.locator("ul.messagelist").inner_text()

    run = drive(invoice.run_id)
    invoice.refresh_from_db()
    assert (run.status, run.result, invoice.status) == (
        RunStatus.COMPLETED,
        "voided",
        InvoiceStatus.VOIDED,
    )


def void_from_the_list(page, live_server, invoice, button: str) -> None:
    page.goto(live_server.url + reverse("admin:processes_invoice_changelist"))
    page.check(f"input[name=_selected_action][value='{invoice.pk}']")
    page.select_option("select[name=action]", "void_invoices")
    page.click("button[name=index]")
    page.wait_for_load_state()
    assert "NF-B-1" in page.locator("#invoice-operation-targets").inner_text()
    page.fill("input[name=reason]", "issued twice")
    page.get_by_role("button", name=button).click()
    page.wait_for_load_state()
