"""Throttling: failed logins locked per user and per address (visible in the admin), API tokens
rate-limited, webhooks never throttled but bounded by body size."""

import json

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from durable.features.tokens import token_create
from processes import signing
from processes.webhooks.models import WebhookDelivery
from processes.whatsapp.models import InboundMessage
from tests.processes.conftest import WHATSAPP_URL, whatsapp_message, whatsapp_webhook

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
LOGIN = reverse("login")


def log_in(username: str, password: str, *, address: str = "203.0.113.7"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(LOGIN, {"username": username, "password": password})
    return client, response


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_five_failed_logins_lock_the_user_out_even_with_the_right_password(settings):
    User.objects.create_user("ana", password=PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in("ana", "guess")

    client, response = log_in(
        "ana", PASSWORD, address="198.51.100.9"
    )  # another address: still locked

    assert response.status_code == 429
    assert not signed_in(client)


def test_failed_logins_from_one_address_lock_that_address_for_every_user(settings):
    User.objects.create_user("bruno", password=PASSWORD)
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(f"someone-{n}", "guess")

    locked, from_there = log_in("bruno", PASSWORD)
    elsewhere, from_elsewhere = log_in("bruno", PASSWORD, address="198.51.100.9")

    assert from_there.status_code == 429 and not signed_in(locked)
    assert from_elsewhere.status_code == 302 and signed_in(elsewhere)


def test_a_success_before_the_limit_starts_the_count_again(settings):
    User.objects.create_user("carla", password=PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in("carla", "guess")
    log_in("carla", PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in("carla", "guess")

    client, response = log_in("carla", PASSWORD)

    assert response.status_code == 302 and signed_in(client)


def test_a_forwarded_for_header_does_not_change_the_address_without_a_trusted_proxy(settings):
    for n in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").post(
            LOGIN, {"username": f"someone-{n}", "password": "guess"}
        )

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}


def test_behind_one_trusted_proxy_the_address_is_the_one_the_proxy_saw(settings):
    settings.TRUSTED_PROXY_COUNT = 1

    Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.9, 203.0.113.50").post(
        LOGIN, {"username": "dora", "password": "guess"}
    )

    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["203.0.113.50"]


def test_a_lockout_is_listed_in_the_admin(client, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in("ana", "guess")
    client.force_login(User.objects.create_superuser("root", password=PASSWORD))

    response = client.get(reverse("admin:axes_accessattempt_changelist"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "ana" in html and "203.0.113.7" in html


@pytest.fixture
def token_client():
    user = User.objects.create_user("robot", password=PASSWORD, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    client = APIClient()
    secret = token_create(user, scope="read").secret
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


@pytest.fixture
def three_per_minute(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"token": "3/min"},
    }


def test_an_api_token_past_its_rate_gets_429_with_retry_after(token_client, three_per_minute):
    answers = [token_client.get("/api/runs/").status_code for _ in range(4)]
    refused = token_client.get("/api/runs/")

    assert answers == [200, 200, 200, 429]
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["error"]["code"] == "throttled"


def test_the_api_schema_documents_429_for_token_clients_and_not_for_the_webhooks(client):
    client.force_login(User.objects.create_superuser("root", password=PASSWORD))

    schema = client.get("/api/schema/?format=json").json()

    assert "429" in schema["paths"]["/api/runs/"]["get"]["responses"]
    assert "429" not in schema["paths"]["/api/webhooks/whatsapp/"]["post"]["responses"]


def test_an_operator_in_the_browser_is_not_throttled(client, three_per_minute):
    client.force_login(User.objects.create_superuser("root", password=PASSWORD))

    answers = {client.get("/api/runs/").status_code for _ in range(5)}

    assert answers == {200}


def test_the_webhooks_are_never_throttled(three_per_minute, settings):
    client = APIClient()

    answers = set()
    for n in range(6):
        body = json.dumps(
            whatsapp_webhook(whatsapp_message(f"wamid.throttle.{n}", text="oi"))
        ).encode()
        answers.add(
            client.post(
                WHATSAPP_URL,
                data=body,
                content_type="application/json",
                HTTP_X_HUB_SIGNATURE_256=signing.sign(body, settings.WHATSAPP_APP_SECRET),
            ).status_code
        )

    assert answers == {200}
    assert WebhookDelivery.objects.count() == 6  # each stored for the intake


def test_a_webhook_body_larger_than_the_limit_is_refused_and_nothing_is_stored(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    message = whatsapp_message("wamid.huge", text="x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1))
    body = json.dumps(whatsapp_webhook(message)).encode()

    response = APIClient().post(
        WHATSAPP_URL,
        data=body,
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signing.sign(body, settings.WHATSAPP_APP_SECRET),
    )

    assert response.status_code in (400, 413)
    assert not InboundMessage.objects.exists()
