"""The WhatsApp intake on a real worker: the webhook answers once the delivery is stored,
and the worker's intake task (no beat here: no safety net) stores and routes it."""

import time

import pytest

from processes.onboarding.models import Company
from processes.webhooks.models import WebhookDelivery
from processes.whatsapp.models import InboundMessage, InboundStatus
from tests.processes.conftest import PHONE, document, whatsapp_webhook
from tests.workers import celery_processes, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
]


def test_a_worker_processes_what_the_webhook_stored_in_the_order_it_came(
    tmp_path, settings, signed_post
):
    settings.DURABLE_DISPATCHER = "celery"
    settings.WHATSAPP_INTAKE = "celery"
    with celery_processes(tmp_path, WHATSAPP_INTAKE="celery") as celery:
        celery.start_worker(concurrency=2)
        began = time.monotonic()
        for n, caption in enumerate(["contrato social", "comprovante de endereço", "selfie"]):
            assert (
                signed_post(
                    whatsapp_webhook(document(f"wamid.W{n}", caption, wa_id=PHONE))
                ).status_code
                == 200
            )
        answered = time.monotonic() - began
        wait_until(
            lambda: InboundMessage.objects.filter(status=InboundStatus.PROCESSED).count() == 3,
            timeout=60,
            message="the worker's intake to route the three messages",
        )

    routed = list(
        InboundMessage.objects.order_by("processed_at", "id").values_list("wamid", flat=True)
    )
    assert routed == ["wamid.W0", "wamid.W1", "wamid.W2"]
    assert Company.objects.get(wa_id=PHONE).run_id
    assert not WebhookDelivery.objects.filter(processed_at__isnull=True).exists()
    print(f"\n[intake] three deliveries answered in {answered:.2f} s, routed by the worker")
