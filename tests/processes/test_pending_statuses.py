"""Status callbacks for outbound ids we do not know yet: kept where an operator sees them, and
applied, in the provider's order, when our message gets that id."""

import hashlib
import threading
import time

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.urls import reverse

from processes.onboarding.models import Company
from processes.webhooks.models import WebhookDelivery
from processes.whatsapp.models import OutboundMessage, OutboundStatus, PendingStatus
from processes.whatsapp.services import message_send, status_apply
from tests.processes.conftest import whatsapp_webhook

pytestmark = pytest.mark.django_db

PHONE = "5511999990042"


def console_id(idempotency_key: str) -> str:
    """The provider id the console backend will return for this key (it is derived from it)."""
    return f"console.{hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]}"


def status(provider_id: str, name: str, timestamp: str) -> dict:
    return {"id": provider_id, "status": name, "timestamp": timestamp, "recipient_id": PHONE}


@pytest.fixture
def company(db):
    return Company.objects.create(wa_id=PHONE)


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("operator", password="pw-unused-123"))
    return client


def waiting_list(operator) -> str:
    return operator.get(
        reverse("admin:processes_pendingstatus_changelist"), {"applied": "no"}
    ).content.decode()


def test_a_status_that_arrives_before_our_message_has_its_id_is_kept_and_shown_in_the_admin(
    signed_post, operator, clock
):
    early = console_id("hello:1")

    response = signed_post(whatsapp_webhook(statuses=[status(early, "delivered", "1700000002")]))

    kept = PendingStatus.objects.get()
    assert response.status_code == 200 and "1 status(es)" in WebhookDelivery.objects.get().outcome
    assert (kept.provider_message_id, kept.status, kept.timestamp, kept.applied_at) == (
        early,
        "delivered",
        "1700000002",
        None,
    )
    assert kept.delivery == WebhookDelivery.objects.get()
    assert "1 for messages not known yet" in kept.delivery.outcome
    assert early in waiting_list(operator)


def test_a_kept_status_is_applied_when_our_message_gets_that_id(
    signed_post, company, operator, clock
):
    signed_post(
        whatsapp_webhook(statuses=[status(console_id("hello:2"), "delivered", "1700000002")])
    )

    sent = message_send(company=company, body="Olá", idempotency_key="hello:2")

    sent.refresh_from_db()
    kept = PendingStatus.objects.get()
    assert sent.status == OutboundStatus.DELIVERED
    assert [event["status"] for event in sent.status_history] == ["delivered"]
    assert kept.applied_at is not None and kept.message == sent
    assert console_id("hello:2") not in waiting_list(operator)


def test_a_status_for_an_id_nobody_ever_sends_stays_visible(signed_post, company, operator, clock):
    signed_post(
        whatsapp_webhook(statuses=[status("wamid.SENT-BY-SOMEONE-ELSE", "read", "1700000003")])
    )
    message_send(company=company, body="Olá", idempotency_key="hello:3")
    clock.advance(7 * 24 * 3600)

    kept = PendingStatus.objects.get()
    assert kept.applied_at is None and kept.message is None
    assert "wamid.SENT-BY-SOMEONE-ELSE" in waiting_list(operator)
    assert OutboundMessage.objects.get().status == OutboundStatus.SENT


def test_kept_statuses_apply_in_the_providers_order_and_a_late_sent_never_downgrades_read(
    signed_post, company, clock
):
    provider_id = console_id("hello:4")
    signed_post(whatsapp_webhook(statuses=[status(provider_id, "read", "1700000003")]))
    signed_post(whatsapp_webhook(statuses=[status(provider_id, "delivered", "1700000002")]))

    sent = message_send(company=company, body="Olá", idempotency_key="hello:4")
    signed_post(whatsapp_webhook(statuses=[status(provider_id, "sent", "1700000001")]))

    sent.refresh_from_db()
    assert sent.status == OutboundStatus.READ
    assert [event["status"] for event in sent.status_history] == ["delivered", "read", "sent"]


def test_delivered_then_read_for_a_known_message_end_read(signed_post, company, clock):
    sent = message_send(company=company, body="Olá", idempotency_key="hello:5")

    signed_post(
        whatsapp_webhook(statuses=[status(sent.provider_message_id, "delivered", "1700000002")])
    )
    signed_post(whatsapp_webhook(statuses=[status(sent.provider_message_id, "read", "1700000003")]))

    sent.refresh_from_db()
    assert sent.status == OutboundStatus.READ
    assert [event["status"] for event in sent.status_history] == ["delivered", "read"]
    assert not PendingStatus.objects.exists()


def test_a_redelivered_status_for_an_unknown_id_is_kept_once(signed_post, clock):
    late = status(console_id("hello:6"), "delivered", "1700000002")

    signed_post(whatsapp_webhook(statuses=[late]))
    signed_post(whatsapp_webhook(statuses=[late, status("wamid.OTHER", "sent", "1700000001")]))

    assert PendingStatus.objects.filter(provider_message_id=console_id("hello:6")).count() == 1
    assert PendingStatus.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_status_arriving_while_our_send_commits_its_id_is_not_lost(company):
    """The send has stored the id but not committed; the status must wait for it, not be kept
    where the send already looked."""
    saved, outcome = threading.Event(), {}

    def send_and_commit_late():
        try:
            with transaction.atomic():
                message_send(company=company, body="Olá", idempotency_key="hello:race")
                saved.set()
                time.sleep(0.5)  # the webhook's status arrives now
        finally:
            connection.close()

    def receive_status():
        saved.wait(10)
        try:
            with transaction.atomic():
                outcome["applied"] = status_apply(
                    status(console_id("hello:race"), "delivered", "1700000002")
                )
        finally:
            connection.close()

    threads = [
        threading.Thread(target=send_and_commit_late),
        threading.Thread(target=receive_status),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert outcome["applied"] is not None
    assert (
        OutboundMessage.objects.get(idempotency_key="hello:race").status == OutboundStatus.DELIVERED
    )
    assert not PendingStatus.objects.filter(applied_at__isnull=True).exists()
