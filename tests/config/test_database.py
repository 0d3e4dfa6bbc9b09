"""How the app talks to PostgreSQL: parameters bound on the server, hot statements prepared."""

import pytest
from django.conf import settings
from django.db import connection

from durable.models import WorkflowRun
from tests.support import run_python

SHOW_OPTIONS = (
    "from django.conf import settings; d = settings.DATABASES['default']; o = d['OPTIONS']; "
    "print(o.get('server_side_binding'), o.get('prepare_threshold'), "
    "d['DISABLE_SERVER_SIDE_CURSORS'])"
)
POSTGRES_URL = "postgres://someone@db.invalid:5432/app"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({}, "True 5 False"),
        ({"DATABASE_PREPARED_STATEMENTS": "off"}, "False None False"),
        ({"DATABASE_POOLER": "transaction"}, "False None True"),
        ({"DATABASE_POOLER": "transaction", "DATABASE_PREPARED_STATEMENTS": "on"}, "True 5 True"),
        ({"DATABASE_POOLER": "session"}, "True 5 False"),
    ],
    ids=[
        "default",
        "off-for-a-transaction-pooler",
        "transaction-pooler",
        "pooler-that-keeps-prepared-statements",
        "session-pooler",
    ],
)
def test_postgresql_prepares_statements_unless_told_not_to(tmp_path, env, shown):
    env = {"DATABASE_URL": POSTGRES_URL, **env}

    result = run_python(
        "-c", SHOW_OPTIONS, var_dir=tmp_path, DJANGO_SETTINGS_MODULE="config.settings", **env
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == shown


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
)
@pytest.mark.skipif(
    settings.BEHIND_TRANSACTION_POOLER, reason="no prepared statements behind a transaction pooler"
)
def test_a_statement_sent_again_and_again_is_parsed_once_by_the_server():
    for run_id in range(6):
        list(WorkflowRun.objects.filter(id=run_id))

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "durable_workflowrun" WHERE "durable_workflowrun"."id" = $1%'],
        )
        prepared = cursor.fetchall()

    assert len(prepared) == 1
