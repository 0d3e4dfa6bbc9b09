"""The reviewer UI in headless Chromium (Debian's chromium, driven by Playwright; see
tests/browser.py)."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.test.utils import override_settings
from django.urls import reverse

from approvals.models import ApprovalRequest, ApprovalStatus
from durable.models import RunStatus
from durable.testing import drive
from processes.onboarding.models import Account, Company, Document, DocumentKind
from processes.whatsapp.models import OutboundMessage
from processes.whatsapp.services import inbound_process, webhook_receive
from tests.approvals.conftest import PASSWORD, make_user, start_case
from tests.browser import browser  # noqa: F401 (a fixture)
from tests.processes.conftest import ADDRESS, CNPJ, CONTRACT, HELLO, PHONE, SELFIE, whatsapp_webhook

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def open_page(browser, live_server):
    contexts = []

    def open_as(username: str, width: int | None = None):
        context = browser.new_context(
            **({"viewport": {"width": width, "height": 800}} if width else {})
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto(live_server.url + "/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        return page

    yield open_as
    for context in contexts:
        context.close()


@override_settings(ONBOARDING_DOCUMENTS_QUIET_SECONDS=0)
def onboarding_waiting_for_compliance():
    """A company that wrote its CNPJ and sent its three documents over WhatsApp (through the
    webhook's services), its run driven until it waits for the reviewer (a scripted
    customer: each message is its own batch, no quiet period to wait out)."""
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        for message_id in webhook_receive(whatsapp_webhook(message)).new_message_ids:
            inbound_process(message_id)
        run = drive(Company.objects.get(wa_id=PHONE).run_id)
    return ApprovalRequest.objects.get(run_id=run.id)


def test_a_reviewer_opens_an_onboarding_case_rejects_without_a_reason_then_approves(open_page):
    make_user("ana", reviewer=True, groups=("kyc",))
    case = onboarding_waiting_for_compliance()

    page = open_page("ana")
    queue = page.locator(f"tr[data-case='{case.pk}']").inner_text()
    page.get_by_role("link", name=case.title).click()
    company = page.locator("[data-testid=company]").inner_text()
    documents = page.locator("[data-testid=documents]").inner_text()
    page.get_by_role("button", name="Reject").click()
    error = page.get_by_test_id("error").inner_text()
    page.get_by_role("button", name="Approve").click()
    closed = page.get_by_test_id("closed").inner_text()
    run = drive(case.run_id)

    assert (
        case.title in queue and "Business account opening" in queue and f"CNPJ {CNPJ}" in case.title
    )
    assert "Padaria Boa Massa" in company and CNPJ in company and PHONE in company
    assert "contrato.pdf" in documents and "luz.pdf" in documents and "Selfie" in documents
    assert "Give a reason to reject" in error
    assert "approved by ana" in closed
    assert page.get_by_role("button", name="Approve").count() == 0
    case.refresh_from_db()
    assert case.status == ApprovalStatus.APPROVED
    assert run.status == RunStatus.COMPLETED
    assert list(Account.objects.values_list("number", "approved_by")) == [(run.result, "ana")]


def test_approve_is_disabled_with_the_reason_while_a_counted_document_cannot_be_viewed(open_page):
    make_user("ana", reviewer=True, groups=("kyc",))
    case = onboarding_waiting_for_compliance()
    contract = Document.objects.get(kind=DocumentKind.ARTICLES)
    contract.file.storage.delete(contract.file.name)  # the stored file is lost

    page = open_page("ana")
    page.get_by_role("link", name=case.title).click()
    approve_disabled = page.get_by_role("button", name="Approve").is_disabled()
    holds = page.get_by_test_id("approve-holds").inner_text()
    page.fill("textarea[name=reason]", "the stored contract is lost")
    page.select_option("select[name=customer_message_key]", "articles_updated")
    page.get_by_role("button", name="Request more documents").click()
    closed = page.get_by_test_id("closed").inner_text()

    assert approve_disabled
    assert "contrato.pdf cannot be viewed: the stored file is missing" in holds
    assert "returned" in closed.lower() or "more documents" in closed.lower()
    case.refresh_from_db()
    assert case.status == ApprovalStatus.RETURNED
    drive(case.run_id)
    asked = (
        OutboundMessage.objects.filter(idempotency_key__startswith=f"{case.run_id}:more:")
        .get()
        .body
    )
    assert (
        "Envie o contrato social com a última alteração." in asked
    )  # the customer reads Portuguese
    assert "stored contract" not in asked  # never the reviewer's reason


def test_a_second_reviewer_on_the_same_case_sees_it_already_decided(open_page):
    make_user("ana", reviewer=True)
    make_user("bruno", reviewer=True)
    case = start_case("globex")
    ana, bruno = open_page("ana"), open_page("bruno")
    ana.get_by_role("link", name=case.title).click()
    bruno.get_by_role("link", name=case.title).click()

    ana.get_by_role("button", name="Approve").click()
    bruno.fill("textarea[name=reason]", "looks wrong")
    bruno.get_by_role("button", name="Reject").click()

    assert "already approved by ana" in bruno.get_by_test_id("error").inner_text()
    case.refresh_from_db()
    assert (case.status, case.closed_by) == (ApprovalStatus.APPROVED, "ana")


def test_a_user_outside_compliance_is_refused(open_page, live_server):
    make_user("olga", reviewer=False)
    case = start_case("acme")

    page = open_page("olga")
    response = page.goto(f"{live_server.url}/approvals/{case.pk}/")

    assert response.status == 403
    assert "Not allowed" in page.content()
    assert case.title not in page.content()


def test_a_reviewer_who_woke_the_run_in_the_admin_sees_why_they_cannot_approve_its_case(
    open_page, live_server
):
    ana = make_user("ana", reviewer=True)
    ana.is_staff = True
    ana.save(update_fields=["is_staff"])
    ana.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="durable",
            codename__in=["view_workflowrun", "operate_workflowrun"],
        )
    )
    case = start_case("acme")

    page = open_page("ana")
    page.goto(
        live_server.url + reverse("admin:durable_workflowrun_change", args=[quote(case.run_id)])
    )
    page.get_by_role("button", name="Wake now").click()
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/approvals/{case.pk}/")
    reason = page.get_by_test_id("approve-refused").inner_text()
    approve = page.get_by_role("button", name="Approve")

    assert (
        "You woke this case's run at" in reason
        and "needs a reviewer who did not act on it" in reason
    )
    assert approve.is_disabled()
    assert page.get_by_role("button", name="Reject").is_disabled()  # no decision at all
    assert page.get_by_role("button", name="Request more documents").is_disabled()
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING
