"""Onboarding end to end through signed webhooks on a real Celery worker and beat: a batch
of documents is one round (issue 13, done-when)."""

import pytest

from approvals.models import ApprovalRequest
from approvals.services import approval_decide
from durable.models import JournalEntry, WorkflowRun
from processes.onboarding.models import Account, Company, Document, DocumentFetch
from processes.whatsapp.limits import LLM_QUEUE
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import (
    ADDRESS,
    CONTRACT,
    HELLO,
    PHONE,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)
from tests.workers import celery_processes, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
]


def waiting_for(run_id: str) -> str:
    return WorkflowRun.objects.filter(pk=run_id).values_list("waiting_for", flat=True).first() or ""


def test_a_batched_delivery_of_three_documents_is_one_validation_and_no_second_ask(
    tmp_path, settings, signed_post
):
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    with celery_processes(
        tmp_path,
        ONBOARDING_DOCUMENTS_QUIET_SECONDS="2",
        DURABLE_LEASE_SECONDS="2",
        DURABLE_DISPATCH_GRACE_SECONDS="1",
        DURABLE_SWEEP_INTERVAL_SECONDS="0.5",
    ) as celery:
        celery.start_worker()
        celery.start_worker(
            "llm", concurrency=1, queues=[LLM_QUEUE]
        )  # document checks, as in production
        celery.start_beat()
        assert signed_post(whatsapp_webhook(HELLO)).status_code == 200
        run_id = Company.objects.get(wa_id=PHONE).run_id
        wait_until(
            lambda: waiting_for(run_id) == "signal:documents_received",
            timeout=60,
            message="the greeting, then the wait for documents",
        )

        assert signed_post(whatsapp_webhook(CONTRACT, ADDRESS, SELFIE)).status_code == 200
        wait_until(
            lambda: waiting_for(run_id) == "signal:compliance_decision",
            timeout=90,
            message="the batch validated and the case opened",
        )

    validations = JournalEntry.objects.filter(run_id=run_id, name__startswith="validate_documents")
    asks = OutboundMessage.objects.filter(idempotency_key__startswith=f"{run_id}:ask:")
    assert validations.count() == 1
    assert asks.count() <= 1
    assert ApprovalRequest.objects.filter(run_id=run_id).count() == 1
    assert set(Document.objects.values_list("fetch_status", flat=True)) == {DocumentFetch.STORED}
    assert OutboundMessage.objects.filter(idempotency_key=f"{run_id}:under-review:1").count() == 1


def test_twenty_customers_sending_batches_at_once_end_with_twenty_accounts_and_nothing_twice(
    tmp_path, settings, signed_post, ana
):
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    settings.WHATSAPP_INTAKE = "celery"  # as in production: the webhook stores, a worker processes
    phones = [f"55119777700{n:02d}" for n in range(20)]
    with celery_processes(
        tmp_path,
        ONBOARDING_DOCUMENTS_QUIET_SECONDS="2",
        DURABLE_LEASE_SECONDS="5",
        DURABLE_DISPATCH_GRACE_SECONDS="1",
        DURABLE_SWEEP_INTERVAL_SECONDS="0.5",
        WHATSAPP_INTAKE="celery",
    ) as celery:
        celery.start_worker(concurrency=2)
        celery.start_worker("llm", concurrency=1, queues=[LLM_QUEUE])
        celery.start_beat()
        for phone in phones:
            assert signed_post(whatsapp_webhook(customer_hello(phone))).status_code == 200
        for phone in phones:
            assert signed_post(whatsapp_webhook(*customer_batch(phone))).status_code == 200
        wait_until(
            lambda: ApprovalRequest.objects.filter(status="pending").count() == 20,
            timeout=240,
            message="twenty cases open",
        )
        for case in ApprovalRequest.objects.all():
            approval_decide(case.pk, actor=ana, outcome="approve")
        wait_until(
            lambda: (
                Account.objects.count() == 20
                and not WorkflowRun.objects.filter(workflow_name="onboarding")
                .exclude(status="completed")
                .exists()
            ),
            timeout=240,
            message="twenty accounts, every run completed",
        )

    keys = list(OutboundMessage.objects.values_list("idempotency_key", flat=True))
    assert (
        len(keys)
        == len(set(keys))
        == 20 * len(["greet", "under-review:1", "ask-legal-name", "welcome"])
    )
    assert ApprovalRequest.objects.count() == 20  # no phantom case
    assert JournalEntry.objects.filter(name="validate_documents").count() == 20


def cnpj_of(phone: str) -> str:
    """A valid CNPJ of the customer's own: twenty companies sharing one would each be held
    for senior review as a duplicate."""
    from processes.onboarding.cnpj import cnpj_format, cnpj_valid

    base = f"{int(phone[-8:]):08d}0001"
    return cnpj_format(next(base + f"{n:02d}" for n in range(100) if cnpj_valid(base + f"{n:02d}")))


def customer_hello(phone: str) -> dict:
    return whatsapp_message(f"wamid.HELLO.{phone}", wa_id=phone, text=f"Oi! CNPJ {cnpj_of(phone)}")


def customer_batch(phone: str) -> list[dict]:
    return [
        document(f"wamid.C.{phone}", "Contrato social", filename="contrato.pdf", wa_id=phone),
        document(f"wamid.A.{phone}", "comprovante de endereço", filename="luz.pdf", wa_id=phone),
        document(f"wamid.S.{phone}", "", type="image", wa_id=phone),
    ]
