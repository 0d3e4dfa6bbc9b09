"""Fuzzing the payments webhook with signed random events: never a 5xx, and nothing lost:
every delivery is kept byte for byte with what was made of it, and every event answered 200
is on record (or in quarantine, with its reason)."""

import hashlib
import json
import os

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from processes.billing.models import PaymentEvent
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from tests.processes.conftest import PAYMENTS_URL

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("PAYMENTS_FUZZ_EXAMPLES", "120"))
texts = st.text(max_size=40) | st.sampled_from(
    ["\x00", "a\x00b", "\ud800", "ç" * 80, "NF-1", "x" * 400]
)
junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
events = st.fixed_dictionaries(
    {
        "id": texts | junk,
        "type": st.sampled_from(["invoice.paid", "invoice.payment_failed", "charge.refunded"])
        | junk,
    },
    optional={
        "data": st.fixed_dictionaries({}, optional={"invoice": texts | junk, "amount": junk})
        | junk,
        "created": junk,
    },
)


def test_any_signed_event_is_answered_200_or_400_and_kept(signed_post):
    @given(payload=events | junk)
    @hypothesis_settings(
        max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    def fuzz(payload):
        body = json.dumps(payload).encode()
        response = signed_post(body, url=PAYMENTS_URL)

        assert response.status_code in (200, 400), (response.status_code, payload)
        delivery = WebhookDelivery.objects.get(body_sha256=hashlib.sha256(body).hexdigest())
        assert bytes(delivery.body) == body and delivery.outcome
        if response.status_code == 200:
            answer = response.json()
            if answer["status"] == "quarantined":
                assert QuarantinedItem.objects.filter(delivery=delivery).exists()
            else:
                assert PaymentEvent.objects.filter(event_id=answer["event"]).exists()

    fuzz()
