"""How the app talks to PostgreSQL: parameters bound on the server, hot statements prepared."""

import io

import pytest
from django.conf import settings
from django.core.management import call_command
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


SHOW_SERVER = (
    "from django.conf import settings; d = settings.DATABASES['default']; "
    "print(d['HOST'], d['PORT'], d['NAME'], d['OPTIONS'].get('target_session_attrs'), "
    "d['OPTIONS']['connect_timeout'])"
)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgres://postgres@10.0.0.1:5440,10.0.0.2:5441/app?target_session_attrs=read-write",
            "10.0.0.1,10.0.0.2 5440,5441 app read-write 5",
        ),
        (
            "postgres://u:p@[fd00::1]:5432,[fd00::2]/app?connect_timeout=2",
            "fd00::1,fd00::2 5432, app None 2",
        ),
        ("postgres://someone@db.invalid:6000/app", "db.invalid 6000 app None 5"),
        (
            "postgres://u:p@h1,h2?target_session_attrs=read-write",
            "h1,h2 ,  read-write 5",
        ),
        (
            "postgres://u@%2Fvar%2Frun%2Fpostgresql,h2:5433/app",
            "/var/run/postgresql,h2 ,5433 app None 5",
        ),
    ],
    ids=[
        "two-hosts-for-the-primary",
        "ipv6-default-port",
        "one-host",
        "no-database-but-a-query",
        "a-socket-directory",
    ],
)
def test_a_database_url_may_name_several_hosts_for_libpq_to_try_in_turn(tmp_path, url, shown):
    result = run_python(
        "-c",
        SHOW_SERVER,
        var_dir=tmp_path,
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=url,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == shown


@pytest.mark.django_db
def test_the_checks_migrate_runs_print_no_warning_on_either_database():
    """migrate runs the database's checks: on SQLite the reviewer queue's covering index
    (approvals 0012, columns SQLite leaves out) warned models.W040 at every first run."""
    out = io.StringIO()

    call_command("check", databases=["default"], stdout=out, stderr=out)

    assert "W040" not in out.getvalue()
    assert "System check identified no issues" in out.getvalue()
