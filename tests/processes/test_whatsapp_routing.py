"""Inbound messages go through the routers the processes registered; the channel knows none."""

import pytest

from processes.onboarding.services import onboarding_route_message
from processes.whatsapp import routing
from processes.whatsapp.models import InboundMessage, InboundStatus
from processes.whatsapp.services import inbound_process, webhook_receive
from tests.processes.conftest import whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(clock):
    webhook_receive(
        whatsapp_webhook(whatsapp_message("wamid.ROUTE"))
    )  # its on-commit routing never ran
    return InboundMessage.objects.get(wamid="wamid.ROUTE")


@pytest.fixture
def only(monkeypatch):
    def install(*routers):
        monkeypatch.setattr(routing, "_routers", list(routers))

    return install


def test_onboarding_registers_its_router_when_the_app_loads():
    assert onboarding_route_message in routing._routers


def test_a_router_that_declines_passes_the_message_to_the_next(stored, only):
    asked = []

    def billing(message):
        asked.append(message.wamid)
        return None

    only(billing, lambda message: (InboundStatus.KEPT, "kept by the second router", None))

    message = inbound_process(stored.pk)

    assert asked == ["wamid.ROUTE"]
    assert (message.status, message.note) == (InboundStatus.KEPT, "kept by the second router")


def test_a_message_no_router_takes_fails_with_a_note_an_operator_can_act_on(stored, only):
    only()

    message = inbound_process(stored.pk)

    assert message.status == InboundStatus.FAILED
    assert message.note == "NoRouter: no process routes 'text' messages (routers: none registered)"
