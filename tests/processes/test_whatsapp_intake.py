"""The WhatsApp intake: the webhook only stores a delivery and answers; a worker stores its
messages, applies its statuses and routes them, one delivery at a time, oldest first."""

import json

import pytest
from django.core.cache import caches

from processes import signing
from processes.onboarding.models import Company
from processes.tasks import route_stale_inbound
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from processes.whatsapp import services as whatsapp
from processes.whatsapp.models import InboundMessage, InboundStatus
from tests.processes.conftest import (
    CONTRACT,
    WHATSAPP_URL,
    document,
    whatsapp_message,
    whatsapp_webhook,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def on_workers(settings, monkeypatch):
    """The production setting: a worker processes deliveries. The Celery tasks the kicks
    would send are recorded instead (a worker's own test: test_intake_on_workers.py)."""
    settings.WHATSAPP_INTAKE = "celery"
    sent = []
    monkeypatch.setattr(
        whatsapp.current_app, "send_task", lambda name, **options: sent.append(name)
    )
    caches[whatsapp._intake_cache()].delete(whatsapp.INTAKE_KICK_KEY)
    return sent


@pytest.fixture
def post(api_client, settings, django_capture_on_commit_callbacks):
    def post(payload):
        body = json.dumps(payload).encode()
        with django_capture_on_commit_callbacks(execute=True):
            return api_client.post(
                WHATSAPP_URL,
                data=body,
                content_type="application/json",
                HTTP_X_HUB_SIGNATURE_256=signing.sign(body, settings.WHATSAPP_APP_SECRET),
            )

    return post


def test_the_webhook_answers_once_the_delivery_is_stored_and_parses_nothing(post, on_workers):
    response = post(whatsapp_webhook(CONTRACT))

    assert response.status_code == 200
    assert response.json() == {"delivery": WebhookDelivery.objects.get().pk}
    assert WebhookDelivery.objects.get().processed_at is None
    assert not InboundMessage.objects.exists() and not Company.objects.exists()
    assert on_workers == ["processes.intake"]


def test_a_worker_stores_routes_and_marks_the_delivery_processed(post, on_workers):
    post(whatsapp_webhook(CONTRACT))

    assert whatsapp.intake_drain() == 1

    assert InboundMessage.objects.get().status == InboundStatus.PROCESSED
    assert Company.objects.get().run_id
    assert WebhookDelivery.objects.get().processed_at is not None
    assert whatsapp.intake_drain() == 0


def test_a_burst_of_deliveries_sends_one_intake_task_not_one_each(post, on_workers):
    for n in range(5):
        post(whatsapp_webhook(whatsapp_message(f"wamid.BURST{n}", wa_id=f"55119999900{n:02d}")))

    assert on_workers == ["processes.intake"]
    assert whatsapp.intake_backlog() == 5


def test_a_delivery_stored_while_the_intake_drains_kicks_it_again(post, on_workers):
    post(whatsapp_webhook(whatsapp_message("wamid.FIRST")))
    whatsapp.intake_drain()  # clears the kick before it looks for work

    post(whatsapp_webhook(whatsapp_message("wamid.SECOND")))

    assert on_workers == ["processes.intake", "processes.intake"]


def test_a_sender_s_messages_are_routed_in_the_order_the_provider_sent_them(post, on_workers):
    for n, caption in enumerate(["contrato social", "comprovante de endereço", "selfie"]):
        post(whatsapp_webhook(document(f"wamid.ORDER{n}", caption)))

    whatsapp.intake_drain()

    routed = list(
        InboundMessage.objects.order_by("processed_at", "id").values_list("wamid", flat=True)
    )
    assert routed == ["wamid.ORDER0", "wamid.ORDER1", "wamid.ORDER2"]
    assert Company.objects.count() == 1


def test_a_delivery_the_intake_cannot_process_is_kept_with_the_reason_and_the_next_goes_on(
    post, on_workers, monkeypatch
):
    post(whatsapp_webhook(whatsapp_message("wamid.BROKEN")))
    post(whatsapp_webhook(whatsapp_message("wamid.FINE", wa_id="5511999990002")))
    real = whatsapp.webhook_receive
    monkeypatch.setattr(
        whatsapp,
        "webhook_receive",
        lambda payload, **kw: (
            (_ for _ in ()).throw(RuntimeError("a bug"))
            if "wamid.BROKEN" in json.dumps(payload)
            else real(payload, **kw)
        ),
    )

    assert whatsapp.intake_drain() == 2

    broken = QuarantinedItem.objects.get()
    assert (broken.kind, broken.reason) == ("delivery", "RuntimeError: a bug")
    assert list(InboundMessage.objects.values_list("wamid", flat=True)) == ["wamid.FINE"]
    assert whatsapp.intake_backlog() == 0


def test_a_delivery_the_intake_cannot_process_ends_its_span_in_error_naming_the_type_only(
    post, on_workers, monkeypatch, spans
):
    post(whatsapp_webhook(whatsapp_message("wamid.BROKEN")))
    monkeypatch.setattr(
        whatsapp,
        "webhook_receive",
        lambda payload, **kw: (_ for _ in ()).throw(RuntimeError("a bug near 5511999990001")),
    )

    whatsapp.intake_drain()

    [intake] = [span for span in spans.get_finished_spans() if span.name == "whatsapp.intake"]
    assert intake.status.status_code.name == "ERROR"
    assert intake.status.description == "RuntimeError"
    assert "5511999990001" not in repr([intake.status, intake.events, intake.attributes])


def test_beat_s_safety_net_processes_a_delivery_whose_task_was_lost(post, on_workers):
    post(whatsapp_webhook(CONTRACT))  # its task never reaches a worker

    route_stale_inbound()

    assert InboundMessage.objects.get().status == InboundStatus.PROCESSED
