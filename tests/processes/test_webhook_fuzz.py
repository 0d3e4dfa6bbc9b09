"""Fuzzing the WhatsApp webhook with signed random JSON: never a 5xx, never a valid message
lost because something else in the same delivery was wrong.

Only the intake is exercised (routing runs on commit, which the test transaction never
reaches), so a few thousand deliveries fit in CI's minute.
"""

import json
import os

import pytest
from django.test import TestCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processes import signing
from processes.webhooks.models import QuarantinedItem
from processes.whatsapp.models import InboundMessage, InboundStatus
from tests.processes.conftest import WHATSAPP_URL

pytestmark = pytest.mark.django_db

FUZZ_SETTINGS = {"deadline": None, "database": None, "suppress_health_check": list(HealthCheck)}
# Each example posts two deliveries: 1500 examples are 3000 signed requests, about a minute.
SLOW_EXAMPLES = int(os.environ.get("WEBHOOK_FUZZ_EXAMPLES", "1500"))

texts = st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfffb", "\x00", "ç" * 40, "x" * 300])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
junk = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
ids = st.text("0123456789ABCDEFabcdef.=_-", min_size=1, max_size=60)
phones = st.text("0123456789", min_size=1, max_size=128)


@st.composite
def valid_messages(draw):
    """A message any reasonable parser must take: string id, a sender, a known shape or any body."""
    kind = draw(st.sampled_from(["text", "document", "image", "sticker"]))
    message = {"id": "wamid." + draw(ids), "timestamp": "1767225600", "type": kind}
    sender = draw(phones)
    if draw(st.booleans()):
        message["from"] = sender
    else:
        message["from_user_id"] = "BR." + sender
    if kind == "text":
        message["text"] = {"body": draw(texts)}
    elif kind in ("document", "image"):
        message[kind] = {"id": draw(ids), "mime_type": draw(texts), "filename": draw(junk)}
    else:
        message[kind] = draw(junk)
    return message


junk_statuses = st.fixed_dictionaries(
    {"id": ids | junk, "status": st.sampled_from(["sent", "delivered", "read", "failed"]) | junk},
    optional={"errors": junk},
)
# Where a delivery goes wrong beside its valid messages.
PLACES = ["metadata", "contacts", "statuses", "status", "message", "change", "entry", "top"]


@st.composite
def deliveries(draw):
    """A delivery holding valid messages, with junk beside them at a few places; returns both."""
    good = draw(st.lists(valid_messages(), min_size=1, max_size=3))
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"phone_number_id": "PHONE-ID"},
        "contacts": [],
        "messages": list(good),
    }
    change = {"field": "messages", "value": value}
    entry = {"id": "WABA", "changes": [change]}
    payload = {"object": "whatsapp_business_account", "entry": [entry]}
    for place in draw(st.lists(st.sampled_from(PLACES), max_size=3)):
        if place == "status":
            value["statuses"] = (
                [*value.get("statuses", []), draw(junk_statuses)]
                if isinstance(value.get("statuses", []), list)
                else [draw(junk_statuses)]
            )
            continue
        thing = draw(junk)
        if place in ("metadata", "contacts", "statuses"):
            value[place] = thing
        elif place == "message":
            thing = draw(
                st.just(thing)
                | st.fixed_dictionaries({"type": texts}, optional={"id": junk, "from": junk})
            )
            value["messages"].insert(draw(st.integers(0, len(value["messages"]))), thing)
        elif place == "change":
            entry["changes"].insert(draw(st.integers(0, len(entry["changes"]))), thing)
        elif place == "entry":
            payload["entry"].insert(draw(st.integers(0, len(payload["entry"]))), thing)
        else:
            payload[draw(texts)] = thing
    return payload, good


def post_signed(client, settings_, payload):
    """The webhook stores the delivery; the intake processes it once that commits (here, at
    once: the test's transaction never commits)."""
    body = json.dumps(payload).encode()
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(
            WHATSAPP_URL,
            data=body,
            content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256=signing.sign(body, settings_.WHATSAPP_APP_SECRET),
        )


def assert_every_valid_message_landed(response, good):
    assert response.status_code == 200, response.content
    for message in good:
        stored = InboundMessage.objects.filter(wamid=message["id"]).first()
        assert stored is not None, (
            f"{message['id']} was dropped: {response.json()}",
            list(
                QuarantinedItem.objects.filter(delivery=response.json()["delivery"]).values_list(
                    "where", "reason"
                )
            ),
        )


def check_delivery(api_client, settings_, delivery):
    payload, good = delivery
    assert_every_valid_message_landed(post_signed(api_client, settings_, payload), good)


def check_any_json(api_client, settings_, payload):
    response = post_signed(api_client, settings_, payload)
    assert response.status_code in (200, 400), response.content


def test_valid_messages_beside_random_junk_always_land(api_client, settings):
    @given(delivery=deliveries())
    @settings_for(max_examples=60)
    def fuzz(delivery):
        check_delivery(api_client, settings, delivery)

    fuzz()


def test_any_signed_json_is_answered_200_or_400(api_client, settings):
    @given(payload=junk | deliveries().map(lambda pair: pair[0]))
    @settings_for(max_examples=40)
    def fuzz(payload):
        check_any_json(api_client, settings, payload)

    fuzz()


def test_routing_the_valid_messages_of_random_deliveries_never_fails(signed_post):
    """Routing runs on commit in production; here too, so odd bodies meet the onboarding code."""

    @given(delivery=deliveries())
    @settings_for(max_examples=40)
    def fuzz(delivery):
        payload, good = delivery
        assert signed_post(payload).status_code == 200
        failed = InboundMessage.objects.filter(
            wamid__in=[m["id"] for m in good], status=InboundStatus.FAILED
        )
        assert not failed.exists(), list(failed.values_list("wamid", "note"))

    fuzz()


@pytest.mark.slow
def test_thousands_of_signed_random_deliveries_get_no_5xx_and_lose_no_valid_message(
    api_client, settings
):
    @given(delivery=deliveries(), payload=junk)
    @settings_for(max_examples=SLOW_EXAMPLES)
    def fuzz(delivery, payload):
        check_delivery(api_client, settings, delivery)
        check_any_json(api_client, settings, payload)

    fuzz()


def settings_for(*, max_examples: int):
    return settings(max_examples=max_examples, **FUZZ_SETTINGS)
