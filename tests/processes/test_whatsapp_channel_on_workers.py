"""The WhatsApp channel as customers use it, end to end on real Celery workers and beat: each
case posts real-shaped Cloud API payloads through the signed webhook, as the provider would,
and the webhook only stores them (``WHATSAPP_INTAKE = "celery"``): a worker reads, routes and
advances, as in production (issue 40, done-when)."""
import pytest

from approvals.models import ApprovalRequest
from approvals.services import approval_decide
from durable.models import WorkflowRun
from processes.onboarding.models import Account, Company
from processes.whatsapp.limits import LLM_QUEUE
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import ADDRESS, CONTRACT, HELLO, PHONE, SELFIE, whatsapp_webhook
from tests.workers import celery_processes, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NEW_PHONE = "5511966665555"
PRODUCTION_LIKE = {"ONBOARDING_DOCUMENTS_QUIET_SECONDS": "2", "DURABLE_LEASE_SECONDS": "2",
                   "DURABLE_DISPATCH_GRACE_SECONDS": "1", "DURABLE_SWEEP_INTERVAL_SECONDS": "0.5",
                   "WHATSAPP_INTAKE": "celery"}


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


def test_a_number_change_carries_a_half_done_onboarding_to_approval_on_the_new_number(workers, deliver, ana):
    deliver(HELLO)
    deliver(CONTRACT)
    wait_until(lambda: Company.objects.filter(wa_id=PHONE).exists(), timeout=60, message="the company")
    run_id = Company.objects.get(wa_id=PHONE).run_id
    wait_until(lambda: OutboundMessage.objects.filter(idempotency_key__startswith=f"{run_id}:ask:").exists(),
               timeout=90, message="the contrato validated and the rest asked for")

    deliver({"from": PHONE, "id": "wamid.SYSTEM-NUMBER", "timestamp": "1767225700", "type": "system",
             "system": {"type": "user_changed_number", "wa_id": NEW_PHONE,
                        "body": f"User Padaria Boa Massa changed from {PHONE} to {NEW_PHONE}"}}, contacts=[])
    wait_until(lambda: Company.objects.filter(wa_id=NEW_PHONE).exists(), timeout=60, message="the move")
    deliver(from_new_phone(ADDRESS), from_new_phone(SELFIE))
    wait_until(lambda: waiting_for(run_id) == "signal:compliance_decision", timeout=90,
               message="the documents from both numbers make one complete case")

    case = ApprovalRequest.objects.get(run_id=run_id, status="pending")
    approval_decide(case.pk, actor=ana, outcome="approve")
    wait_until(lambda: WorkflowRun.objects.get(pk=run_id).status == "completed", timeout=90,
               message="the account opened")

    company = Company.objects.get()
    assert (company.wa_id, company.former_wa_id) == (NEW_PHONE, PHONE)
    assert Account.objects.get(company=company).number == WorkflowRun.objects.get(pk=run_id).result
    assert WorkflowRun.objects.filter(workflow_name="onboarding").count() == 1
    assert OutboundMessage.objects.get(idempotency_key=f"{run_id}:welcome").to_wa_id == NEW_PHONE
    assert NEW_PHONE in case.summary["whatsapp"]   # the reviewer decided on the number the customer holds
