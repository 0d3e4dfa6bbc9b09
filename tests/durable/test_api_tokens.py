"""API tokens: stored as digests, scoped read or operate, expiring, revocable; managed from a
shell."""

import importlib
import json
import re
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from durable import days
from durable.features.schedules import schedule_create
from durable.features.tokens import token_create
from durable.models import ApiToken, WorkflowRun

pytestmark = pytest.mark.django_db

EVERY_PERMISSION = ("view_workflowrun", "operate_workflowrun", "view_schedule", "operate_schedule")


@pytest.fixture
def operator():
    user = User.objects.create_user("operator", password="pw-unused-123")
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename__in=EVERY_PERMISSION)
    )
    return user


def client_with(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def start(client) -> int:
    return client.post(
        "/api/runs/",
        json.dumps({"workflow": "three_steps", "args": [1], "id": "tokens:1"}),
        content_type="application/json",
    ).status_code


def test_a_token_works_until_it_expires(operator, clock):
    client = client_with(token_create(operator, scope="read", days=30).secret)

    before = client.get("/api/runs/")
    clock.advance(days(30))
    after = client.get("/api/runs/")

    assert before.status_code == 200
    assert after.status_code == 401
    assert after.json()["error"]["message"] == "Token expired."


def test_a_new_token_expires_after_api_token_days_unless_told_otherwise(operator, clock, settings):
    settings.DURABLE_API_TOKEN_DAYS = 7

    token = token_create(operator, scope="read").token

    assert token.expires_at == clock.now() + days(7)


def test_a_revoked_token_is_refused(operator):
    issued = token_create(operator, scope="operate")
    client = client_with(issued.secret)
    assert client.get("/api/runs/").status_code == 200

    call_command("durable", "token", "revoke", str(issued.token.pk), stdout=StringIO())
    response = client.get("/api/runs/")

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Token revoked."


def test_a_read_token_gets_403_on_a_post_even_when_its_user_may_operate(operator):
    read = client_with(token_create(operator, scope="read").secret)

    response = read.post(
        "/api/runs/",
        json.dumps({"workflow": "three_steps", "args": [1], "id": "tokens:1"}),
        content_type="application/json",
    )

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "token_scope"
    assert not WorkflowRun.objects.filter(pk="tokens:1").exists()


def test_a_read_token_cannot_pause_a_schedule_or_act_in_bulk_either(operator):
    schedule_create(
        "tokens-daily",
        "three_steps",
        cron_expression="0 0 * * *",
        id_template="t:{date}",
        args=[1],
        actor="test",
    )
    read = client_with(token_create(operator, scope="read").secret)

    pause = read.post("/api/schedules/tokens-daily/pause/", {"reason": "x"}, format="json")
    bulk = read.post(
        "/api/bulk/", {"action": "cancel", "filter": {"status": ["waiting"]}}, format="json"
    )

    assert (pause.status_code, bulk.status_code) == (403, 403)
    assert read.get("/api/schedules/").status_code == 200


def test_an_operate_token_may_start_a_run(operator):
    client = client_with(token_create(operator, scope="operate").secret)

    assert start(client) == 201


def test_the_database_holds_no_usable_secret(operator):
    issued = token_create(operator, scope="operate")

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        stored = [str(value) for value in cursor.fetchone()]
    row = ApiToken.objects.get()

    assert not any(issued.secret in value for value in stored)
    assert row.digest != issued.secret and issued.secret.startswith(row.prefix)
    assert client_with(row.digest).get("/api/runs/").status_code == 401  # what a stolen dump holds


def test_the_command_creates_a_token_and_prints_its_secret_once(operator):
    out = StringIO()

    call_command(
        "durable",
        "token",
        "create",
        "operator",
        "--scope",
        "read",
        "--days",
        "10",
        "--name",
        "grafana",
        stdout=out,
    )

    secret = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get()
    assert (token.user, token.scope, token.name) == (operator, "read", "grafana")
    assert (token.expires_at - token.created_at).days == 10
    assert client_with(secret).get("/api/runs/").status_code == 200


def test_the_command_lists_tokens_without_their_secrets(operator):
    read = token_create(operator, scope="read", name="grafana")
    revoked = token_create(operator, scope="operate")
    call_command("durable", "token", "revoke", str(revoked.token.pk), stdout=StringIO())
    out = StringIO()

    call_command("durable", "token", "list", stdout=out)

    listing = out.getvalue()
    assert re.search(
        rf"^{read.token.pk}\s+{re.escape(read.secret[:8])}…\s+operator\s+read\s+grafana\s.*active$",
        listing,
        re.MULTILINE,
    ), listing
    assert re.search(rf"^{revoked.token.pk}\s.*\soperate\s.*revoked$", listing, re.MULTILINE), (
        listing
    )
    assert read.secret not in listing and revoked.secret not in listing
    assert read.token.digest not in listing


def test_revoking_a_token_that_does_not_exist_says_so():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no API token with id 404"):
        call_command("durable", "token", "revoke", "404", stdout=StringIO())


def test_a_key_of_the_old_authtoken_table_keeps_working_as_an_expiring_operate_token(
    operator, clock
):
    """The upgrade path of durable/migrations/0018_api_tokens.py, run on a table as DRF left it."""
    migration = importlib.import_module("durable.migrations.0018_api_tokens")
    old_key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old_key, clock.now(), operator.pk]
        )

    migration.move_authtoken_keys(apps, connection)

    token = ApiToken.objects.get()
    assert (token.user, token.scope, token.prefix) == (operator, "operate", old_key[:8])
    assert "authtoken_token" not in connection.introspection.table_names()
    assert start(client_with(old_key)) == 201
    assert token.expires_at > clock.now() + days(89)
