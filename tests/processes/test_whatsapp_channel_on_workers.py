"""The WhatsApp channel as customers use it, end to end on real Celery workers and beat: each
case posts real-shaped Cloud API payloads through the signed webhook, as the provider would,
and the webhook only stores them (``WHATSAPP_INTAKE = "celery"``): a worker reads, routes and
advances, as in production (issue 40, done-when)."""

import pytest

from approvals.models import ApprovalRequest
from approvals.services import approval_decide
from durable.models import WorkflowRun
from processes.onboarding.models import Account, Company, Document
from processes.onboarding.workflow import CNPJ_SIGNAL
from processes.webhooks.models import WebhookDelivery
from processes.whatsapp.limits import LLM_QUEUE
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import (
    ADDRESS,
    CNPJ,
    CONTRACT,
    HELLO,
    PHONE,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)
from tests.processes.test_whatsapp_templates import health
from tests.workers import celery_processes, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NEW_PHONE = "5511966665555"
PRODUCTION_LIKE = {
    "ONBOARDING_DOCUMENTS_QUIET_SECONDS": "2",
    "DURABLE_LEASE_SECONDS": "2",
    "DURABLE_DISPATCH_GRACE_SECONDS": "1",
    "DURABLE_SWEEP_INTERVAL_SECONDS": "0.5",
    "WHATSAPP_INTAKE": "celery",
}


@pytest.fixture
def workers(tmp_path, settings):
    """A worker, the model's worker and beat, started; the test's own process is the web."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    settings.WHATSAPP_INTAKE = "celery"
    with celery_processes(tmp_path, **PRODUCTION_LIKE) as celery:
        celery.start_worker()
        celery.start_worker("llm", concurrency=1, queues=[LLM_QUEUE])
        celery.start_beat()
        yield celery


@pytest.fixture
def deliver(signed_post):
    """Post what WhatsApp sends, signed; the provider only needs the 200."""

    def post(*messages, contacts=None):
        assert signed_post(whatsapp_webhook(*messages, contacts=contacts)).status_code == 200

    return post


def waiting_for(run_id: str) -> str:
    return WorkflowRun.objects.filter(pk=run_id).values_list("waiting_for", flat=True).first() or ""


def from_new_phone(message: dict) -> dict:
    return {**message, "from": NEW_PHONE, "id": message["id"] + "-NEW"}


def test_a_number_change_carries_a_half_done_onboarding_to_approval_on_the_new_number(
    workers, deliver, ana
):
    deliver(HELLO)
    deliver(CONTRACT)
    wait_until(
        lambda: Company.objects.filter(wa_id=PHONE).exists(), timeout=60, message="the company"
    )
    run_id = Company.objects.get(wa_id=PHONE).run_id
    wait_until(
        lambda: OutboundMessage.objects.filter(
            idempotency_key__startswith=f"{run_id}:ask:"
        ).exists(),
        timeout=90,
        message="the contrato validated and the rest asked for",
    )

    deliver(
        {
            "from": PHONE,
            "id": "wamid.SYSTEM-NUMBER",
            "timestamp": "1767225700",
            "type": "system",
            "system": {
                "type": "user_changed_number",
                "wa_id": NEW_PHONE,
                "body": f"User Padaria Boa Massa changed from {PHONE} to {NEW_PHONE}",
            },
        },
        contacts=[],
    )
    wait_until(
        lambda: Company.objects.filter(wa_id=NEW_PHONE).exists(), timeout=60, message="the move"
    )
    deliver(from_new_phone(ADDRESS), from_new_phone(SELFIE))
    wait_until(
        lambda: waiting_for(run_id) == "signal:compliance_decision",
        timeout=90,
        message="the documents from both numbers make one complete case",
    )

    case = ApprovalRequest.objects.get(run_id=run_id, status="pending")
    approval_decide(case.pk, actor=ana, outcome="approve")
    wait_until(
        lambda: WorkflowRun.objects.get(pk=run_id).status == "completed",
        timeout=90,
        message="the account opened",
    )

    company = Company.objects.get()
    assert (company.wa_id, company.former_wa_id) == (NEW_PHONE, PHONE)
    assert Account.objects.get(company=company).number == WorkflowRun.objects.get(pk=run_id).result
    assert WorkflowRun.objects.filter(workflow_name="onboarding").count() == 1
    assert OutboundMessage.objects.get(idempotency_key=f"{run_id}:welcome").to_wa_id == NEW_PHONE
    assert (
        NEW_PHONE in case.summary["whatsapp"]
    )  # the reviewer decided on the number the customer holds


def test_a_document_deleted_in_the_batch_that_brought_it_is_asked_for_again(workers, deliver, ana):
    deliver(HELLO)
    wait_until(
        lambda: Company.objects.filter(wa_id=PHONE).exists(), timeout=60, message="the company"
    )
    run_id = Company.objects.get(wa_id=PHONE).run_id

    deliver(
        CONTRACT,
        ADDRESS,
        SELFIE,
        {
            "from": PHONE,
            "id": "wamid.REVOKE-ADDRESS",
            "timestamp": "1767225700",
            "type": "revoke",
            "revoke": {"original_message_id": ADDRESS["id"]},
        },
    )
    wait_until(
        lambda: OutboundMessage.objects.filter(
            idempotency_key__startswith=f"{run_id}:ask:"
        ).exists(),
        timeout=90,
        message="the batch validated without the deleted document",
    )
    assert (
        OutboundMessage.objects.get(idempotency_key__startswith=f"{run_id}:ask:").body
        == "Ainda falta: comprovante de endereço."
    )
    assert Document.objects.get(message_id=ADDRESS["id"]).withdrawn_at is not None

    deliver(
        document("wamid.ADDRESS-AGAIN", "comprovante de endereço", filename="agua.pdf", wa_id=PHONE)
    )
    wait_until(
        lambda: waiting_for(run_id) == "signal:compliance_decision",
        timeout=90,
        message="the case opens once the document is sent again",
    )
    case = ApprovalRequest.objects.get(run_id=run_id, status="pending")
    assert (
        "agua.pdf" in case.summary["documents_received"]
        and "luz.pdf" not in case.summary["documents_received"]
    )


def test_an_edited_cnpj_opens_the_case_with_it(workers, deliver):
    hello = whatsapp_message(
        "wamid.HELLO-BAD", wa_id=PHONE, text="Oi, quero abrir uma conta PJ. CNPJ 11.222.333/0001-00"
    )
    deliver(hello)
    wait_until(
        lambda: Company.objects.filter(wa_id=PHONE).exists(), timeout=60, message="the company"
    )
    run_id = Company.objects.get(wa_id=PHONE).run_id
    deliver(CONTRACT, ADDRESS, SELFIE)
    wait_until(
        lambda: waiting_for(run_id) == f"signal:{CNPJ_SIGNAL}",
        timeout=90,
        message="the documents complete, the run asks for a valid CNPJ",
    )

    deliver(
        {
            "from": PHONE,
            "id": "wamid.EDIT-CNPJ",
            "timestamp": "1767225700",
            "type": "edit",
            "edit": {
                "original_message_id": hello["id"],
                "message": {"type": "text", "text": {"body": f"CNPJ {CNPJ}"}},
            },
        }
    )
    wait_until(
        lambda: waiting_for(run_id) == "signal:compliance_decision",
        timeout=90,
        message="the edited CNPJ recorded and the case opened",
    )

    case = ApprovalRequest.objects.get(run_id=run_id, status="pending")
    assert (Company.objects.get().cnpj, case.summary["cnpj"], case.risk) == (CNPJ, CNPJ, "low")


def test_a_tap_on_confirm_withdraws_the_customer_once(workers, deliver):
    deliver(HELLO)
    wait_until(
        lambda: Company.objects.filter(wa_id=PHONE).exists(), timeout=60, message="the company"
    )
    company = Company.objects.get(wa_id=PHONE)
    wait_until(
        lambda: waiting_for(company.run_id) == "signal:documents_received",
        timeout=60,
        message="greeted",
    )
    deliver(whatsapp_message("wamid.MAYBE", wa_id=PHONE, text="desisto, quero cancelar"))
    question = wait_until(
        lambda: OutboundMessage.objects.filter(
            idempotency_key="confirm-withdrawal:wamid.MAYBE", status="sent"
        ).first(),
        timeout=60,
        message="the question with its two buttons",
    )
    assert [item["id"] for item in question.options["items"]] == [
        "withdraw:confirm",
        "withdraw:continue",
    ]

    tap = {
        "from": PHONE,
        "id": "wamid.TAP",
        "timestamp": "1767225800",
        "type": "interactive",
        "context": {"from": "551130000000", "id": question.provider_message_id},
        "interactive": {
            "type": "button_reply",
            "button_reply": {"id": "withdraw:confirm", "title": "Confirmar"},
        },
    }
    deliver(tap)
    deliver(tap)  # the provider delivers it again
    wait_until(
        lambda: WorkflowRun.objects.get(pk=company.run_id).is_finished,
        timeout=60,
        message="withdrawn",
    )

    assert WorkflowRun.objects.get(pk=company.run_id).status == "cancelled"
    assert Company.objects.get().status == "withdrawn"
    assert OutboundMessage.objects.filter(idempotency_key=f"{company.run_id}:bye").count() == 1


def test_a_template_rejection_posted_by_meta_fails_the_health_check(workers, signed_post):
    assert "ok   whatsapp templates" in health()[1]

    rejected = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "WABA-ID",
                "time": 1767225600,
                "changes": [
                    {
                        "field": "message_template_status_update",
                        "value": {
                            "event": "REJECTED",
                            "message_template_id": 12345678,
                            "message_template_name": "invoice_reminder",
                            "message_template_language": "pt-BR",
                            "reason": "INCORRECT_CATEGORY",
                        },
                    }
                ],
            }
        ],
    }
    assert signed_post(rejected).status_code == 200
    wait_until(
        lambda: WebhookDelivery.objects.filter(processed_at__isnull=False).exists(),
        timeout=60,
        message="the worker's intake applies the change",
    )

    code, out = health()
    assert code == 1
    assert (
        "FAIL whatsapp templates: invoice_reminder (pt_BR) is REJECTED: INCORRECT_CATEGORY" in out
    )
