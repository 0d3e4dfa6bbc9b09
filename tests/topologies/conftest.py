"""The topologies the tests run the engine through, each started by a script of its own
(``scripts/topology/<name> start``); a test whose topology is not running is skipped."""

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import connection

from tests.workers import celery_processes

PGBOUNCER_URL = os.environ.get("DURABLE_TEST_PGBOUNCER_URL", "postgres://postgres@127.0.0.1:6432/")
NOT_SET_UP = (
    "PgBouncer not set up: run scripts/topology/pgbouncer start, or set DURABLE_TEST_PGBOUNCER_URL"
)


@dataclass(frozen=True)
class PgBouncer:
    """A running PgBouncer: its address, and the test database as reached through it."""

    host: str
    port: int
    user: str

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{database}"

    def connect(self, database: str) -> psycopg.Connection:
        """A plain client of the pooler; client-side binding, which the admin console needs."""
        return psycopg.connect(
            self.url(database),
            autocommit=True,
            connect_timeout=5,
            cursor_factory=psycopg.ClientCursor,
        )

    def show(self, what: str) -> list[dict]:
        """``SHOW <what>`` on the admin console (POOLS, CLIENTS, SERVERS), one dict a row."""
        with self.connect("pgbouncer") as admin, admin.cursor() as cursor:
            cursor.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def reconnect(self, database: str) -> None:
        """Close the server sessions on ``database`` once their clients release them, so that
        the test database can be dropped even when the suite itself does not go through
        PgBouncer (tests/conftest.py ends them when it does)."""
        with self.connect("pgbouncer") as admin:
            admin.execute(f'RECONNECT "{database}"')


@pytest.fixture
def pgbouncer():
    if connection.vendor != "postgresql":
        pytest.skip("PgBouncer forwards to PostgreSQL: run with DATABASE_URL=postgres://...")
    address = urlsplit(PGBOUNCER_URL)
    pooler = PgBouncer(
        address.hostname or "127.0.0.1", address.port or 6432, address.username or "postgres"
    )
    try:
        pooler.show("VERSION")
    except psycopg.OperationalError as error:
        pytest.skip(f"{NOT_SET_UP} ({pooler.host}:{pooler.port}: {str(error).strip()})")
    yield pooler
    pooler.reconnect(connection.settings_dict["NAME"])


@pytest.fixture
def celery_through_pgbouncer(tmp_path, settings, pgbouncer):
    """Workers and beat whose every connection goes through PgBouncer, configured for it as
    production would be (DATABASE_POOLER=transaction); the test process dispatches."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    with celery_processes(
        tmp_path,
        DATABASE_URL=pgbouncer.url(connection.settings_dict["NAME"]),
        DATABASE_POOLER="transaction",
        PGAPPNAME="durable-through-pgbouncer",
        DURABLE_LEASE_SECONDS="2",
        DURABLE_DISPATCH_GRACE_SECONDS="1",
        DURABLE_SWEEP_INTERVAL_SECONDS="0.5",
    ) as processes:
        yield processes
