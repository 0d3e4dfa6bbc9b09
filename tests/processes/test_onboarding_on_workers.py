"""Onboarding end to end through signed webhooks on a real Celery worker and beat: a batch
of documents is one round (issue 13, done-when)."""
import pytest

from approvals.models import ApprovalRequest
from durable.models import JournalEntry, WorkflowRun
from processes.onboarding.models import Company, Document, DocumentFetch
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import ADDRESS, CONTRACT, HELLO, PHONE, SELFIE, whatsapp_webhook
from tests.workers import celery_processes, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def waiting_for(run_id: str) -> str:
    return WorkflowRun.objects.filter(pk=run_id).values_list("waiting_for", flat=True).first() or ""


def test_a_batched_delivery_of_three_documents_is_one_validation_and_no_second_ask(
        tmp_path, settings, signed_post):
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    with celery_processes(tmp_path, ONBOARDING_DOCUMENTS_QUIET_SECONDS="2", DURABLE_LEASE_SECONDS="2",
                          DURABLE_DISPATCH_GRACE_SECONDS="1", DURABLE_SWEEP_INTERVAL_SECONDS="0.5") as celery:
        celery.start_worker()
        celery.start_beat()
        assert signed_post(whatsapp_webhook(HELLO)).status_code == 200
        run_id = Company.objects.get(wa_id=PHONE).run_id
        wait_until(lambda: waiting_for(run_id) == "signal:documents_received", timeout=60,
                   message="the greeting, then the wait for documents")

        assert signed_post(whatsapp_webhook(CONTRACT, ADDRESS, SELFIE)).status_code == 200
        wait_until(lambda: waiting_for(run_id) == "signal:compliance_decision", timeout=90,
                   message="the batch validated and the case opened")

    validations = JournalEntry.objects.filter(run_id=run_id, name__startswith="validate_documents")
    asks = OutboundMessage.objects.filter(idempotency_key__startswith=f"{run_id}:ask:")
    assert validations.count() == 1
    assert asks.count() <= 1
    assert ApprovalRequest.objects.filter(run_id=run_id).count() == 1
    assert set(Document.objects.values_list("fetch_status", flat=True)) == {DocumentFetch.STORED}
    assert OutboundMessage.objects.filter(idempotency_key=f"{run_id}:under-review:1").count() == 1
