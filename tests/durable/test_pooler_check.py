"""The system check warns when the database connection cannot work behind a pooler in
transaction mode (durable.W401, durable.W402), and stays quiet when it can."""

import pytest

from durable.surfaces.checks import check_database_pooler, pooler_problems
from tests.support import run_python

POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "app"}
PREPARED = {"server_side_binding": True, "prepare_threshold": 5}
UNPREPARED = {"server_side_binding": False, "prepare_threshold": None}
CHECK = ("manage.py", "check", "--tag", "durable")
POSTGRES_URL = "postgres://someone@db.invalid:5432/app"


def ids(problems) -> list[str]:
    return [problem.id for problem in problems]


def test_prepared_statements_and_server_side_cursors_behind_a_transaction_pooler_warn():
    database = {**POSTGRES, "OPTIONS": PREPARED}

    problems = pooler_problems("transaction", database, "default")

    assert ids(problems) == ["durable.W401", "durable.W402"]
    assert all(problem.obj == "DATABASES['default']" for problem in problems)


def test_server_side_cursors_alone_behind_a_transaction_pooler_warn():
    database = {**POSTGRES, "OPTIONS": UNPREPARED, "DISABLE_SERVER_SIDE_CURSORS": False}

    assert ids(pooler_problems("transaction", database, "default")) == ["durable.W402"]


@pytest.mark.parametrize(
    ("pooler", "database"),
    [
        ("transaction", {**POSTGRES, "OPTIONS": UNPREPARED, "DISABLE_SERVER_SIDE_CURSORS": True}),
        ("transaction", {**POSTGRES, "DISABLE_SERVER_SIDE_CURSORS": True}),  # Django's defaults
        ("session", {**POSTGRES, "OPTIONS": PREPARED}),
        ("", {**POSTGRES, "OPTIONS": PREPARED}),
        ("transaction", {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}),
    ],
    ids=["transaction-ready", "django-defaults", "session-pooler", "no-pooler", "sqlite"],
)
def test_a_connection_that_keeps_nothing_between_transactions_passes(pooler, database):
    assert pooler_problems(pooler, database, "default") == []


def test_an_unknown_pooler_is_an_error(settings):
    settings.DURABLE_DATABASE_POOLER = "statement"

    assert ids(check_database_pooler()) == ["durable.E401"]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "warned"),
    [
        ({"DATABASE_POOLER": "transaction"}, []),
        ({"DATABASE_POOLER": "transaction", "DATABASE_PREPARED_STATEMENTS": "on"}, ["W401"]),
        (
            {
                "DATABASE_POOLER": "transaction",
                "DATABASE_PREPARED_STATEMENTS": "on",
                "SILENCED_SYSTEM_CHECKS": "durable.W401",
            },
            [],
        ),
        ({}, []),
    ],
    ids=["pooler", "pooler-with-prepared-statements", "weighed-and-silenced", "no-pooler"],
)
def test_manage_check_reads_the_pooler_from_the_environment(tmp_path, env, warned):
    result = run_python(
        *CHECK,
        var_dir=tmp_path,
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="check",
        DATABASE_URL=POSTGRES_URL,
        **env,
    )

    shown = [code for code in ("W401", "W402") if f"durable.{code}" in result.stderr]
    assert shown == warned, result.stderr
    assert result.returncode == 0, result.stderr
