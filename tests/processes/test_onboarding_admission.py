"""New customers arrive at a bounded rate: a flood of first messages is held, never lost,
and routed once the window has room (processes/onboarding/admission.py)."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from processes.onboarding import admission
from processes.onboarding.models import Company
from processes.whatsapp.models import InboundMessage, InboundStatus
from processes.whatsapp.services import inbound_route_stale
from tests.processes.conftest import HELLO, PHONE, whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db


def first_message(n: int) -> dict:
    return whatsapp_message(f"wamid.NEW{n}", wa_id=f"55119000{n:05d}")


def test_first_messages_over_the_hourly_cap_are_held_then_routed_when_the_hour_has_room(
    signed_post, settings
):
    settings.ONBOARDING_NEW_SENDERS_PER_HOUR = 2
    for n in range(3):
        assert signed_post(whatsapp_webhook(first_message(n))).status_code == 200
    held = InboundMessage.objects.get(wamid="wamid.NEW2")

    assert Company.objects.count() == 2
    assert (held.status, held.company) == (InboundStatus.RECEIVED, None)
    assert held.note.startswith("held: 2 new senders in the last hour")

    Company.objects.update(created_at=timezone.now() - timedelta(hours=2))
    inbound_route_stale(older_than=timedelta(0))

    assert Company.objects.count() == 3
    assert InboundMessage.objects.get(wamid="wamid.NEW2").status == InboundStatus.KEPT


def test_a_number_that_keeps_withdrawing_and_writing_again_is_held_after_its_daily_applications(
    customer, settings, clock
):
    settings.ONBOARDING_APPLICATIONS_PER_NUMBER_PER_DAY = 2

    def says(text: str, n: int) -> dict:
        return whatsapp_message(f"wamid.AGAIN{n}", wa_id=PHONE, text=text)

    customer(HELLO)
    customer(says("cancelar", 1))
    customer(says("oi, quero recomeçar", 2))
    customer(says("cancelar", 3))
    customer(says("oi de novo", 4))
    held = InboundMessage.objects.get(wamid="wamid.AGAIN4")

    assert Company.objects.get().application == 2
    assert held.status == InboundStatus.RECEIVED and held.note.startswith(
        "held: 2 applications from this number"
    )

    clock.advance(timedelta(days=1).total_seconds())
    inbound_route_stale(older_than=timedelta(0))

    assert Company.objects.get().application == 3
    assert InboundMessage.objects.get(wamid="wamid.AGAIN4").status == InboundStatus.KEPT


def test_under_the_caps_a_first_message_starts_at_once(signed_post):
    assert signed_post(whatsapp_webhook(first_message(7))).status_code == 200

    assert InboundMessage.objects.get(wamid="wamid.NEW7").status == InboundStatus.KEPT
    assert Company.objects.filter(wa_id="5511900000007").exists()


def test_the_sweep_routes_a_lost_message_before_the_held_ones(signed_post, settings):
    settings.ONBOARDING_NEW_SENDERS_PER_HOUR = 1
    for n in range(3):  # the first starts; two are held
        signed_post(whatsapp_webhook(first_message(n)))
    lost = (
        InboundMessage.objects.create(  # stored, but its routing never ran (the web process died)
            wamid="wamid.LOST",
            message_type="text",
            sender_wa_id=PHONE,
            payload={
                "message": {
                    "id": "wamid.LOST",
                    "from": PHONE,
                    "type": "text",
                    "text": {"body": "oi"},
                },
                "contact": {"profile": {"name": "Padaria"}, "wa_id": PHONE},
            },
            received_at=timezone.now() + timedelta(seconds=1),
        )
    )
    Company.objects.update(created_at=timezone.now() - timedelta(hours=2))  # room for one more

    inbound_route_stale(older_than=timedelta(seconds=-5), limit=1)

    assert InboundMessage.objects.get(pk=lost.pk).status == InboundStatus.KEPT
    assert InboundMessage.objects.filter(status=InboundStatus.RECEIVED).count() == 2


def test_the_hourly_count_of_new_senders_stops_at_the_cap_and_reads_an_index(settings):
    """It runs at every message from an unknown number: a busy hour must cost no more than a
    quiet one, and a table of many companies must not be scanned whole."""
    settings.ONBOARDING_NEW_SENDERS_PER_HOUR = 2
    for n in range(3):
        Company.objects.create(wa_id=f"55119000{n:05d}")

    with CaptureQueriesContext(connection) as queries:
        refusal = admission.new_sender_refusal()

    assert refusal.startswith("held: 2 new senders in the last hour")
    (count,) = [q["sql"] for q in queries.captured_queries if "COUNT" in q["sql"]]
    assert "LIMIT 2" in count
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # the table here is tiny
            cursor.execute("EXPLAIN " + count)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "company_created_at" in plan


@pytest.mark.parametrize("cap", [0, -1])
def test_a_cap_of_zero_or_less_holds_every_new_sender(settings, cap):
    settings.ONBOARDING_NEW_SENDERS_PER_HOUR = cap

    assert admission.new_sender_refusal().startswith(f"held: {cap} new senders")
